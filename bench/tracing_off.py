"""What tracing's hooks cost a turn when tracing is off (issue 35, point 5: "nothing when off").

    .venv/bin/python bench/tracing_off.py

Off (no OTLP endpoint), every hook in a turn's path returns after one check of a module global:
``tracing.span``, ``tracing.continued`` and ``tracing.call`` hand back a shared stand-in that keeps
nothing; ``annotate``, ``inject`` and ``current_traceparent`` return at once. This times, in one process,
the hooks one turn of the turns benchmark runs (the acknowledgment's continued trace, a turn's span,
its annotation, the traceparent kept with the turn and put in the task's headers, and per Slack call
its trace's record and outcome; SLACK_CALLS calls, as the benchmark's turns make), and gives their CPU per turn
beside the turn's own worker CPU (docs/performance.md, section g).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kourier import tracing

SLACK_CALLS = 8  # per turn in bench/turns.py: reactions, users.info, the stream's start, appends, stop
TURNS = 200_000
WORKER_CPU_PER_TURN_MS = 35  # the turns benchmark's, section g


def one_turn() -> None:
    headers: dict[str, str] = {}
    tracing.current_traceparent()
    tracing.inject(headers)
    with tracing.continued(""):
        pass
    with tracing.span("kourier.turn", traceparent="", attributes={"kourier.turn_id": 1}):
        tracing.annotate(binding="bench", resumed=False)
        for _ in range(SLACK_CALLS):
            with tracing.call("slack.chat.appendStream", {"slack.method": "chat.appendStream"}) as traced:
                traced.set_attribute("slack.outcome", "ok")


def main() -> None:
    assert not tracing.enabled(), "run it without OTEL_EXPORTER_OTLP_ENDPOINT: it measures tracing off"
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        for _ in range(TURNS):
            one_turn()
        best = min(best, (time.process_time() - began) / TURNS)
    print(f"tracing off: the hooks of one turn ({SLACK_CALLS} Slack calls) cost {best * 1e6:.2f} µs of CPU")
    print(f"that is {best * 1e3 / WORKER_CPU_PER_TURN_MS * 100:.4f} % of a {WORKER_CPU_PER_TURN_MS} ms turn")


if __name__ == "__main__":
    main()
