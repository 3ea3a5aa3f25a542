"""What one of Kourier's Slack calls costs the trace when tracing is on (issue 35, point 5): recorded
in the turn's thread, then encoded for OTLP by the batch processor's, as an event of the turn's span (a
call that went straight through) and as a span of its own (a call with more to tell: here, a 429
waited out).

    .venv/bin/python bench/tracing_span_cost.py

Tracing is configured as the product's processes configure it (``kourier.tracing.configure``), with
an exporter pointed at a closed port and a schedule that never sends during the run, so what is timed
is the SDK's work and not a collector's. The calls are traced as kourier/slack/clients.py traces them
(``tracing.call``, their method and outcome), EVENTS_PER_TURN under each turn's span (the SDK keeps 128
events a span); then what the processor holds is encoded as its exporter would encode it, and the CPU
of each is given per call (docs/performance.md, section g).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CALLS = 20_000
EVENTS_PER_TURN = 50


def main() -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="kourier.settings",
        DEBUG="true",
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",  # nothing listens: no export is timed
        OTEL_BSP_SCHEDULE_DELAY="3600000",
        OTEL_BSP_MAX_QUEUE_SIZE=str(CALLS * 2),
    )
    import django

    django.setup()
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from kourier import tracing

    assert tracing.configure("kourier-bench")
    processor = trace.get_tracer_provider()._active_span_processor._span_processors[0]  # type: ignore[attr-defined]
    for kind, more_to_tell in (("an event of the turn's span", False), ("a span of its own", True)):
        processor._batch_processor._queue.clear()
        started = time.process_time()
        for turn in range(CALLS // EVENTS_PER_TURN):
            with tracing.span("kourier.turn", attributes={"kourier.turn_id": turn}):
                for _ in range(EVENTS_PER_TURN):
                    with tracing.call(
                        "slack.chat.appendStream", {"slack.method": "chat.appendStream"}
                    ) as traced:
                        if more_to_tell:
                            traced.add_event("slack.rate_limited", retry_after=1)
                        traced.set_attribute("slack.outcome", "ok")
        made = (time.process_time() - started) / CALLS
        held = list(processor._batch_processor._queue)
        started = time.process_time()
        encode_spans(held).SerializeToString()
        encoded = (time.process_time() - started) / CALLS
        print(f"a Slack call as {kind}: {made * 1e6:.1f} µs of CPU recorded, {encoded * 1e6:.1f} µs encoded")
    os._exit(0)  # the batch processor's thread would try its closed port at exit


if __name__ == "__main__":
    main()
