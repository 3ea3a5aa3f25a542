"""What one of Kourier's spans costs when tracing is on (issue 35, point 5): made, ended and queued
in the turn's thread, then encoded for OTLP by the batch processor's.

    .venv/bin/python bench/tracing_span_cost.py

Tracing is configured as the product's processes configure it (``kourier.tracing.configure``), with
an exporter pointed at a closed port and a schedule that never sends during the run, so what is timed
is the SDK's work and not a collector's. The spans are timed as a Slack call's span is made (its
attributes, its annotation), under a turn's span; then the spans the processor holds are encoded as
its exporter would encode them. The CPU per turn is this times the spans the worker exports per turn
(SPANS_PER_TURN: the turn, its A2A request, the queued task's run, the acknowledgment and the Slack
calls of the turns benchmark; docs/performance.md, section g).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SPANS = 20_000
ENCODED = 5_000
SPANS_PER_TURN = 11


def main() -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="kourier.settings",
        DEBUG="true",
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",  # nothing listens: no export is timed
        OTEL_BSP_SCHEDULE_DELAY="3600000",
        OTEL_BSP_MAX_QUEUE_SIZE=str(SPANS * 2),
    )
    import django

    django.setup()
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from kourier import tracing

    assert tracing.configure("kourier-bench")
    processor = trace.get_tracer_provider()._active_span_processor._span_processors[0]  # type: ignore[attr-defined]
    with tracing.span("kourier.turn", attributes={"kourier.turn_id": 1}):
        started = time.process_time()
        for _ in range(SPANS):
            with tracing.span(
                "slack.chat.appendStream",
                attributes={"slack.method": "chat.appendStream", "kourier.turn_id": 1},
            ):
                tracing.annotate(outcome="ok")
        made = (time.process_time() - started) / SPANS
    held = list(processor._batch_processor._queue)[:ENCODED]
    started = time.process_time()
    encode_spans(held).SerializeToString()
    encoded = (time.process_time() - started) / len(held)
    per_turn = (made + encoded) * SPANS_PER_TURN
    print(f"a span made, ended and queued: {made * 1e6:.1f} µs of CPU")
    print(f"a span encoded for OTLP:       {encoded * 1e6:.1f} µs of CPU ({len(held)} spans at once)")
    print(f"{SPANS_PER_TURN} spans a turn:               {per_turn * 1e3:.2f} ms of CPU")
    os._exit(0)  # the batch processor's thread would try its closed port at exit


if __name__ == "__main__":
    main()
