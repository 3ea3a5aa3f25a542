"""Traces are off until an OTLP endpoint is configured, and then cost nothing to leave out: off, no tracer
provider is set, no exporter or instrumentation is imported, and a2a-sdk's own spans are off (redis-py
and a2a-sdk import OpenTelemetry's API and SDK modules themselves when installed); on, a span kept as a traceparent (a turn row's) is continued by
another span in the same trace, and every log line names its trace and span."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kourier import tracing
from tests.support.otlp_receiver import otlp_receiver

REPO_ROOT = Path(__file__).resolve().parents[2]

OFF_PROBE = """
import sys, django
django.setup()
import kourier.asgi, sessions.runner, kourier.slack.clients
from kourier import tracing
with tracing.span("slack.event"):
    assert tracing.current_traceparent() == ""
    with tracing.call("slack.auth.test", {"slack.method": "auth.test"}) as call:
        call.set_attribute("slack.outcome", "ok")
        call.add_event("slack.retry", error="timeout")
tracing.inject(headers := {})
assert headers == {}
import a2a.utils.telemetry
assert not a2a.utils.telemetry.otel_enabled
from opentelemetry import trace
assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"  # none set: no span is made
print(json.dumps(sorted(name for name in sys.modules if name.startswith(("opentelemetry.exporter",
    "opentelemetry.instrumentation")))))
"""

ON_PROBE = """
import logging, django
django.setup()
from kourier import tracing
assert tracing.configure("kourier-probe")
with tracing.span("slack.event", attributes={"kourier.connection_id": 3}):
    kept = tracing.current_traceparent()
with tracing.continued(kept):
    with tracing.span("slack.reactions.add"):
        pass
with tracing.continued(""), tracing.span("slack.reactions.remove"):
    pass
with tracing.span("kourier.turn", traceparent=kept, attributes={"kourier.turn_id": 7}):
    logging.getLogger("probe").warning("probe.logged")
    with tracing.call("slack.chat.postMessage", {"slack.method": "chat.postMessage"}):
        pass
tracing.flush()
print(json.dumps({"kept": kept}))
"""

BOOKKEEPING_PROBE = """
import asyncio, django, redis
django.setup()
from django.core.cache import cache
from kourier import shared_cache, tracing
from kourier.slack.budgets import Budget
assert tracing.configure("kourier-probe")

async def call():
    with tracing.span("kourier.turn"):
        await Budget("T-probe").areserve("chat.postMessage", 0.0, channel="C1", max_wait=0)
        await shared_cache.aget("probe-key")
        shared_cache.count("probe-count", 60)
        cache.get("probe-key")  # the sync cache, as the web process and Celery's tasks use it

asyncio.run(call())
tracing.flush()
print(json.dumps({"every_client_wrapped": hasattr(redis.Redis.execute_command, "__wrapped__")}))
"""

CALLS_PROBE = """
import asyncio, django
django.setup()
from kourier import tracing
assert tracing.configure("kourier-probe")
with tracing.span("kourier.turn"):
    with tracing.call("slack.chat.appendStream", {"slack.method": "chat.appendStream"}) as call:
        call.set_attribute("slack.outcome", "ok")
    with tracing.call("slack.chat.postMessage", {"slack.method": "chat.postMessage"}) as call:
        call.add_event("slack.rate_limited", retry_after=1)
        call.set_attribute("slack.outcome", "ok")
    try:
        with tracing.call("slack.chat.update", {"slack.method": "chat.update"}):
            raise RuntimeError("slack went away")
    except RuntimeError:
        pass
    kept = tracing.current_traceparent()

async def stopped():
    with tracing.span("kourier.turn.stopped"):
        with tracing.call("slack.chat.stopStream", {"slack.method": "chat.stopStream"}):
            raise asyncio.CancelledError

try:
    asyncio.run(stopped())
except asyncio.CancelledError:
    pass
with tracing.call("slack.auth.test", {"slack.method": "auth.test"}):  # no span current
    pass
with tracing.continued(kept), tracing.call("slack.reactions.add", {"slack.method": "reactions.add"}):
    pass
tracing.flush()
"""

ERRORS_PROBE = """
import asyncio, django
django.setup()
from kourier import tracing
assert tracing.configure("kourier-probe")
try:
    with tracing.span("kourier.turn"):
        raise RuntimeError("the agent went away")
except RuntimeError:
    pass

async def stopped():
    with tracing.span("slack.chat.appendStream"):
        raise asyncio.CancelledError

try:
    asyncio.run(stopped())
except asyncio.CancelledError:
    pass
with tracing.span("slack.event"):
    pass
tracing.flush()
"""


def run_probe(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environ.update(DEBUG="true", LOG_FORMAT="json", DJANGO_SETTINGS_MODULE="kourier.settings", **env)
    return subprocess.run(
        [sys.executable, "-c", "import json\n" + code],
        cwd=REPO_ROOT, env=environ, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip


def test_kouriers_redis_bookkeeping_makes_no_spans_djangos_cache_does_and_other_clients_pass_no_wrapper(
    redis_url,
):
    with otlp_receiver() as receiver:
        done = run_probe(
            BOOKKEEPING_PROBE,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_BSP_SCHEDULE_DELAY="50",
            REDIS_URL=redis_url,
            CACHE_KEY_PREFIX="tracing-probe",
        )
        spans = receiver.wait_for(lambda spans: any(s.name == "kourier.turn" for s in spans), timeout=30)

    turn = next(span for span in spans if span.name == "kourier.turn")
    under_the_turn = [span.name for span in spans if span.parent_span_id == turn.span_id]
    assert under_the_turn == ["GET"]  # Django's cache; the reservation, the async read and the count: none
    # Celery's broker polls (its own clients) go through no wrapper of the instrumentation.
    assert json.loads(done.stdout.splitlines()[-1]) == {"every_client_wrapped": False}


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "TRUE"}, False),
    ],
)
def test_traces_are_wanted_only_when_an_otlp_endpoint_is_configured(environ, wanted):
    assert tracing.wanted(environ) is wanted


def test_off_no_tracer_provider_exporter_or_instrumentation_is_set_up():
    done = run_probe(OFF_PROBE)

    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_on_a_kept_traceparent_continues_its_trace_and_log_lines_name_it():
    with otlp_receiver() as receiver:
        done = run_probe(ON_PROBE, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_BSP_SCHEDULE_DELAY="50")
        spans = receiver.wait_for(lambda spans: len(spans) >= 4, timeout=30)

    kept = json.loads(done.stdout.splitlines()[-1])["kept"]
    event, turn, added, removed = (
        next(span for span in spans if span.name == name)
        for name in ("slack.event", "kourier.turn", "slack.reactions.add", "slack.reactions.remove")
    )
    assert kept.startswith(f"00-{event.trace_id}-{event.span_id}-")
    assert (turn.trace_id, turn.parent_span_id) == (event.trace_id, event.span_id)
    assert (added.trace_id, added.parent_span_id) == (event.trace_id, event.span_id)  # continued, no span
    assert removed.parent_span_id == ""  # nothing kept: a trace of its own
    assert turn.service == "kourier-probe"
    assert turn.attributes == {"kourier.turn_id": 7}
    assert turn.events == ("slack.chat.postMessage",)
    logged = next(json.loads(line) for line in done.stderr.splitlines() if "probe.logged" in line)
    assert (logged["trace_id"], logged["span_id"]) == (turn.trace_id, turn.span_id)


def test_a_call_that_went_straight_through_is_an_event_of_its_span_one_with_more_to_tell_a_span():
    with otlp_receiver() as receiver:
        run_probe(CALLS_PROBE, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_BSP_SCHEDULE_DELAY="50")
        spans = {span.name: span for span in receiver.wait_for(lambda spans: len(spans) >= 6, timeout=30)}

    turn = spans["kourier.turn"]
    assert turn.events == ("slack.chat.appendStream",)
    through = turn.event_attributes[0]
    assert through.keys() == {"slack.method", "slack.outcome", "kourier.duration_ms"}
    assert (through["slack.method"], through["slack.outcome"]) == ("chat.appendStream", "ok")
    assert "slack.chat.appendStream" not in spans
    waited = spans["slack.chat.postMessage"]  # a 429 waited out: a span, its wait an event of it
    assert (waited.parent_span_id, waited.events, waited.error) == (
        turn.span_id,
        ("slack.rate_limited",),
        False,
    )
    assert waited.attributes == {"slack.method": "chat.postMessage", "slack.outcome": "ok"}
    failed = spans["slack.chat.update"]
    assert (failed.parent_span_id, failed.events, failed.error) == (turn.span_id, ("exception",), True)
    stopped = spans["kourier.turn.stopped"]  # a cancelled call is no failure: an event
    assert (stopped.events, "slack.chat.stopStream" in spans) == (("slack.chat.stopStream",), False)
    assert spans["slack.auth.test"].parent_span_id == ""  # no span current: a trace of its own
    # No span of this process records the kept trace: the call is a span in it.
    assert (spans["slack.reactions.add"].trace_id, spans["slack.reactions.add"].parent_span_id) == (
        turn.trace_id,
        turn.span_id,
    )


def test_a_span_left_by_an_exception_is_an_error_a_cancelled_one_is_not_and_neither_stays_current():
    with otlp_receiver() as receiver:
        run_probe(ERRORS_PROBE, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_BSP_SCHEDULE_DELAY="50")
        spans = {span.name: span for span in receiver.wait_for(lambda spans: len(spans) >= 3, timeout=30)}

    assert (spans["kourier.turn"].error, spans["kourier.turn"].events) == (True, ("exception",))
    assert (spans["slack.chat.appendStream"].error, spans["slack.chat.appendStream"].events) == (False, ())
    assert spans["slack.event"].parent_span_id == ""  # a root: neither span was left current


def test_a_client_call_outside_any_trace_is_no_trace_of_its_own_but_one_inside_a_trace_is_kept():
    from opentelemetry.sdk.trace.sampling import Decision
    from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags, set_span_in_context

    sampler = tracing.doors_only_sampler()
    parent = set_span_in_context(
        NonRecordingSpan(SpanContext(1, 2, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)))
    )

    def decision(kind, context=None):
        return sampler.should_sample(context, 3, "BRPOP", kind).decision

    assert decision(SpanKind.CLIENT) is Decision.DROP  # Celery polling its broker, alone
    assert decision(SpanKind.CLIENT, parent) is Decision.RECORD_AND_SAMPLE  # a reservation in a turn
    assert decision(SpanKind.SERVER) is Decision.RECORD_AND_SAMPLE  # Slack's event at the door
    assert decision(SpanKind.CONSUMER) is Decision.RECORD_AND_SAMPLE  # a task a worker takes
    assert decision(SpanKind.INTERNAL) is Decision.RECORD_AND_SAMPLE  # the turn, the alert's delivery


INSTRUMENTED_PROBE = """
import django
django.setup()
from kourier import tracing
assert tracing.configure("kourier-probe")
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from django.core.cache import cache
instrumented = {name: kind().is_instrumented_by_opentelemetry for name, kind in (
    ("django", DjangoInstrumentor), ("celery", CeleryInstrumentor), ("httpx", HTTPXClientInstrumentor))}
client = cache._cache.get_client()  # made, not connected: no Redis is needed
print(json.dumps({**instrumented, "redis": getattr(client, "_is_instrumented_by_opentelemetry", False)}))
"""


@pytest.mark.parametrize(
    ("left_out", "instrumented"),
    [
        (" Redis, celery", {"django": True, "celery": False, "httpx": True, "redis": False}),
        ("httpx", {"django": True, "celery": True, "httpx": False, "redis": True}),
    ],
)
def test_the_instrumentations_otels_variable_disables_are_left_out_and_the_others_set_up(
    left_out, instrumented
):
    done = run_probe(
        INSTRUMENTED_PROBE,
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=left_out,
    )

    assert json.loads(done.stdout.splitlines()[-1]) == instrumented


@pytest.mark.parametrize(
    ("environ", "share", "problem"),
    [
        ({}, 1.0, ""),
        ({"OTEL_TRACES_SAMPLER": "parentbased_always_on"}, 1.0, ""),
        ({"OTEL_TRACES_SAMPLER": "always_off"}, 0.0, ""),
        ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}, 0.1, ""),
        ({"OTEL_TRACES_SAMPLER": "traceidratio"}, 1.0, ""),  # no share given: every trace, as OTel says
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "10%"}, 1.0, "not the share"),
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"}, 1.0, "not the share"),
        ({"OTEL_TRACES_SAMPLER": "jaeger_remote"}, 1.0, "is not one of"),
    ],
)
def test_the_share_of_traces_kept_is_read_from_otels_sampler_variables(environ, share, problem):
    assert tracing.sampled_share(environ) == share
    found = tracing.sampling_problem(environ)
    assert problem in found
    assert bool(found) == bool(problem)


def test_a_door_keeps_its_share_of_traces_by_trace_id_and_a_turns_spans_follow_the_doors_decision():
    from opentelemetry.sdk.trace.sampling import Decision
    from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags, set_span_in_context

    sampler = tracing.doors_only_sampler(0.25)
    trace_ids = [(n * 0x9E3779B97F4A7C15) % 2**64 for n in range(1, 4001)]  # spread over the id space
    kept = [
        t
        for t in trace_ids
        if sampler.should_sample(None, t, "slack.event", SpanKind.SERVER).decision.is_sampled()
    ]

    assert 0.2 < len(kept) / len(trace_ids) < 0.3
    again = tracing.doors_only_sampler(0.25)  # another process decides the same for the same trace
    assert all(
        again.should_sample(None, t, "slack.event", SpanKind.SERVER).decision.is_sampled() for t in kept
    )
    left_out = set_span_in_context(
        NonRecordingSpan(SpanContext(7, 8, is_remote=True, trace_flags=TraceFlags(0)))
    )
    kept_parent = set_span_in_context(
        NonRecordingSpan(SpanContext(7, 8, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)))
    )
    assert sampler.should_sample(left_out, 7, "kourier.turn", SpanKind.INTERNAL).decision is Decision.DROP
    assert sampler.should_sample(kept_parent, 7, "kourier.turn").decision is Decision.RECORD_AND_SAMPLE
    assert sampler.should_sample(None, kept[0], "BRPOP", SpanKind.CLIENT).decision is Decision.DROP


def test_a_log_line_names_a_kept_trace_only(monkeypatch):
    from opentelemetry import context, trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    monkeypatch.setattr(tracing, "_tracer", object())  # on, as configure leaves it
    for flags, named in ((TraceFlags.SAMPLED, True), (TraceFlags.DEFAULT, False)):
        span = NonRecordingSpan(SpanContext(0xAB, 0xCD, is_remote=False, trace_flags=TraceFlags(flags)))
        token = context.attach(set_span_in_context(span))
        try:
            assert trace.get_current_span() is span
            assert (tracing.current_ids() == (f"{0xAB:032x}", f"{0xCD:016x}")) is named
        finally:
            context.detach(token)
