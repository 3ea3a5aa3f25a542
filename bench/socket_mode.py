"""Socket Mode benchmark: events per second through one `manage.py socket` process, beside the HTTP
door (one Daphne) doing the same work, in the same processes on the same database.

    .venv/bin/python bench/socket_mode.py --events 2000 --concurrency 16 --rounds 3

Starts on 127.0.0.1: the Slack fake (Events API over HTTP and Socket Mode over its websocket),
Redis (REDIS_URL, else a private valkey-server), a database (DATABASE_URL, else SQLite in a
temporary directory, or a throwaway PostgreSQL cluster with --database postgres), one Connection
with an app token and one Binding written by `manage.py apply`, then one web process (Daphne) and
one `manage.py socket` process, both up for the whole run. No Celery worker: the turns' tasks wait
in Redis, as in bench/ingress.py, so what is measured is the door, not the turns.

Each round sends --events new mentions (an app_mention event each, in a bound channel) through the
HTTP door, then as many through the socket (the fake switches the workspace between the two), from
--concurrency people at once in a closed loop: each sends its next mention as soon as Slack has the
ack of the last (its HTTP 200, or its envelope acked over the socket). Reported per door: events
acked per second, the ack's p50 and p99 as the fake timed it, acks later than Slack's 3 s, and the
CPU seconds of the process that took them. Afterwards the database must hold one turn per mention.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench import support
from simulator import defaults
from simulator.fake import SlackFake

BOT_TOKEN_ENV = "BENCH_SLACK_BOT_TOKEN"
SECRET_ENV = "BENCH_SLACK_SIGNING_SECRET"
APP_TOKEN_ENV = "BENCH_SLACK_APP_TOKEN"
SLACK_ACK_TIMEOUT = 3.0
SOCKET_START_SECONDS = 60.0


def manifest() -> str:
    return f"""\
apiVersion: kourier/v1
kind: Connection
metadata: {{name: bench}}
spec:
  botToken: {{fromEnv: {BOT_TOKEN_ENV}}}
  signingSecret: {{fromEnv: {SECRET_ENV}}}
  appToken: {{fromEnv: {APP_TOKEN_ENV}}}
---
apiVersion: kourier/v1
kind: Binding
metadata: {{name: bench}}
spec:
  connection: bench
  channels: [{defaults.CHANNEL_ID}]
  agent: {{url: "http://127.0.0.1:9/"}}   # never called: no worker runs
"""


@dataclass
class PhaseResult:
    door: str
    round: int
    events: int
    seconds: float
    latencies: list[float]
    late: int
    failed: int
    cpu_seconds: float

    def summary(self) -> dict[str, float | int | str]:
        return {
            "door": self.door,
            "round": self.round,
            "events": self.events,
            "events_per_second": round(self.events / self.seconds, 1),
            "ack_p50_ms": round(1000 * support.percentile(self.latencies, 0.5), 1),
            "ack_p99_ms": round(1000 * support.percentile(self.latencies, 0.99), 1),
            "late_acks": self.late,
            "not_acked": self.failed,
            "cpu_ms_per_event": round(1000 * self.cpu_seconds / max(1, self.events), 2),
        }


def run_phase(slack: SlackFake, door: str, round_number: int, args, pid: int) -> PhaseResult:
    """--events mentions from --concurrency people at once, each after its last was acked."""
    counter = iter(range(args.events))
    lock = threading.Lock()
    latencies: list[float] = []
    failed = 0

    def person() -> None:
        nonlocal failed
        while True:
            with lock:
                number = next(counter, None)
            if number is None:
                return
            started = time.monotonic()
            ts = slack.user_says(
                defaults.ADA,
                defaults.CHANNEL_ID,
                f"{slack.bot_mention} {door}-{round_number}-{number}",
                deliver="app_mention",
            )
            elapsed = time.monotonic() - started
            deliveries = slack.deliveries(ts=ts) if door == "http" else None
            ok = deliveries is None or all(d.ok for d in deliveries)
            with lock:
                latencies.append(elapsed)
                failed += 0 if ok else 1

    cpu_before = support.cpu_seconds(pid)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        for future in [pool.submit(person) for _ in range(args.concurrency)]:
            future.result()
    seconds = time.monotonic() - started
    cpu = support.cpu_seconds(pid) - cpu_before
    if door == "socket":
        tag = f"{door}-{round_number}-"
        envelopes = [e for e in slack.socket_envelopes() if tag in e.payload.get("event", {}).get("text", "")]
        failed = len([e for e in envelopes if not e.acked_in_time])
        latencies = [e.ack_delay for e in envelopes if e.ack_delay is not None]
    late = len([value for value in latencies if value > SLACK_ACK_TIMEOUT])
    return PhaseResult(door, round_number, args.events, seconds, latencies, late, failed, cpu)


def check_stored(env: dict[str, str], expected: int) -> dict[str, int | bool]:
    support.use_database_here(env)
    from sessions.models import Turn

    turns = collections.Counter(Turn.objects.values_list("message_ts", flat=True))
    return {
        "mentions_sent": expected,
        "turns_stored": sum(turns.values()),
        "turns_with_duplicates": sum(1 for count in turns.values() if count > 1),
        "one_turn_per_mention": sum(turns.values()) == expected and all(c == 1 for c in turns.values()),
    }


def report(args, results: list[PhaseResult], stored: dict) -> str:
    rows = [list(result.summary().values()) for result in results]
    header = list(results[0].summary().keys()) if results else []
    return "\n\n".join(
        [
            f"Socket Mode against the HTTP door, {args.events} mentions per phase from {args.concurrency} "
            f"people at once, {args.rounds} round(s); database {args.database_label}; "
            f"host {support.host_description()}; code {support.code_version()}",
            support.markdown_table(header, rows),
            "stored: " + json.dumps(stored),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=2000, help="mentions per phase")
    parser.add_argument("--concurrency", type=int, default=16, help="people sending at once")
    parser.add_argument("--rounds", type=int, default=1, help="HTTP then socket, N times")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite",
                        help="ignored when DATABASE_URL is set")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory and its logs")
    args = parser.parse_args()

    with (
        support.work_directory("kourier-bench-socket-", keep=args.keep) as workdir,
        support.redis_server(workdir) as redis_url,
        support.database(workdir, args.database) as database_url,
        SlackFake() as slack,
    ):
        args.database_label = database_url.split(":", 1)[0]
        defaults.populate(slack)
        env = support.product_env(
            database_url=database_url,
            redis_url=redis_url,
            slack_api_url=slack.url,
            extra={
                BOT_TOKEN_ENV: defaults.BOT_TOKEN,
                SECRET_ENV: defaults.SIGNING_SECRET,
                APP_TOKEN_ENV: defaults.APP_TOKEN,
                "LOG_LEVEL": "WARNING",
            },
        )
        support.prepare_database(env, manifest(), workdir)
        processes = support.Processes(workdir)
        results: list[PhaseResult] = []
        try:
            web_url = processes.start_daphne("web", "kourier.asgi:application", env)
            socket = processes.start("socket", [support.PYTHON, "manage.py", "socket"], env)
            slack.deliver_events_over_socket_mode(wait_for_acks=True, echo_own_messages=False)
            slack.wait_for_socket_connections(1, timeout=SOCKET_START_SECONDS)
            web_pid = processes.running["web"].pid
            for round_number in range(1, args.rounds + 1):
                print(f"round {round_number}: HTTP door ...", file=sys.stderr)
                slack.deliver_events_to(
                    web_url + "/slack/events", defaults.SIGNING_SECRET, echo_own_messages=False
                )
                results.append(run_phase(slack, "http", round_number, args, web_pid))
                print(f"round {round_number}: socket ...", file=sys.stderr)
                slack.deliver_events_over_socket_mode(wait_for_acks=True, echo_own_messages=False)
                results.append(run_phase(slack, "socket", round_number, args, socket.pid))
        finally:
            processes.stop()
        stored = check_stored(env, 2 * args.events * args.rounds)
        print(report(args, results, stored))
        if args.json:
            args.json.write_text(
                json.dumps({"phases": [r.summary() for r in results], "stored": stored}, indent=2)
            )


if __name__ == "__main__":
    main()
