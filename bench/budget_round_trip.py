"""What a Slack call's budget costs: one reservation (kourier/slack/budgets.py, one Lua step in
Redis) beside a plain GET of the same cache, on the same connection.

    .venv/bin/python bench/budget_round_trip.py --calls 5000

Uses REDIS_URL when set, else a private valkey-server. Prints, per operation, the mean and p99
wall time and the mean CPU time of this process (the caller's side of the round trip), and the
commands sent per reservation (1). The numbers are only as quiet as the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")
os.environ.setdefault("DEBUG", "true")

from bench import support


def measure(operation: Callable[[int], object], calls: int) -> tuple[float, float, float]:
    """Mean and p99 wall microseconds per call, and mean CPU microseconds."""
    for n in range(50):  # warm: the connection, the script loaded
        operation(n)
    walls = []
    cpu = time.process_time()
    for n in range(calls):
        began = time.perf_counter()
        operation(n)
        walls.append(time.perf_counter() - began)
    cpu = time.process_time() - cpu
    return sum(walls) / calls * 1e6, support.percentile(walls, 0.99) * 1e6, cpu / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    with (
        support.work_directory("kourier-bench-budget-", keep=False) as workdir,
        support.redis_server(workdir) as url,
    ):
        os.environ["REDIS_URL"] = url
        import django

        django.setup()
        from redis.connection import AbstractConnection

        from kourier import shared_cache
        from kourier.slack.budgets import Budget, Limit

        sent: list[int] = []
        send = AbstractConnection.send_packed_command

        def counted(self, command, check_health=True):
            sent.append(1)
            return send(self, command, check_health)

        AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
        # A budget no call of the run fills, so each reservation takes the usual path: trim, look, add.
        budget = Budget(f"bench-{uuid.uuid4().hex}", {"chat.update": Limit(10**9, 60.0)})
        cache = shared_cache.backend()
        rows = []
        for name, operation in (
            ("cache GET (the floor: one round trip)", lambda n: cache.get("bench-budget-absent")),
            (
                "budget reservation (chat.update)",
                lambda n: budget.reserve("chat.update", time.time(), max_wait=60),
            ),
            (
                "budget reservation, no budget (auth.test)",
                lambda n: budget.reserve("auth.test", time.time(), max_wait=60),
            ),
        ):
            before = len(sent)
            mean, p99, cpu = measure(operation, args.calls)
            trips = (len(sent) - before) / (args.calls + 50)
            rows.append([name, f"{mean:.0f}", f"{p99:.0f}", f"{cpu:.0f}", f"{trips:.2f}"])
        print(f"# Budget round trip: {args.calls} calls each ({support.host_description()})\n")
        print(support.markdown_table(["operation", "mean us", "p99 us", "CPU us", "commands sent"], rows))


if __name__ == "__main__":
    main()
