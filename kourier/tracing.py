"""OpenTelemetry traces: off until an OTLP endpoint is configured, and then one trace per turn.

Configured by OpenTelemetry's own variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_SDK_DISABLED``...). Without an endpoint no tracer provider is set and no exporter or
instrumentation is imported (a2a-sdk and redis-py import OpenTelemetry's API when it is installed;
a2a-sdk's own spans are turned off below): every helper here is then a check of one module global, so tracing that is off costs a turn nothing (docs/performance.md,
issue 35 point 5).

On, each process sets up the SDK once at start (``configure``: the web process in kourier/asgi.py, a
worker and beat in kourier/celery.py) with OpenTelemetry's maintained instrumentation of Django,
Celery, httpx (the A2A client: every request to an agent carries W3C ``traceparent``, so a kagent
agent's own spans join the trace) and redis (the Redis clients that serve the product: Django's
cache and the queue's publish, ``traced_redis``; not Celery's polls of its broker, nor the
bookkeeping of kourier/shared_cache.py). A turn's trace starts at Slack's event (or the alert, or
the press): the door's span; the turn row keeps that span's ``traceparent`` (``current_traceparent``),
so the worker's turn span, started whenever the session's runner gets to it (after a pause too),
continues that trace. Span names and attributes name the Binding, the session and the turn, never
message text or secrets.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
TRACEPARENT_LENGTH = 55  # W3C trace context, version 00: "00-<32 hex>-<16 hex>-<2 hex>"

# a2a-sdk wraps its own classes in spans whenever OpenTelemetry's API is importable (its
# a2a.utils.telemetry reads this once, at its import): the product's traces have the A2A requests
# from the httpx instrumentation, as kagent's runtime does, and off they must cost nothing.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")

_tracer: Any = None  # the SDK's tracer once ``configure`` has set tracing up; None: tracing is off
_redis_traced = False  # whether ``traced_redis`` instruments the clients it is given
_no_span = contextlib.nullcontext()


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces: an OTLP endpoint is set and the SDK is not disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def enabled() -> bool:
    return _tracer is not None


def configure(service_name: str, *, environ: Mapping[str, str] = os.environ) -> bool:
    """Sets up the SDK, its OTLP/HTTP exporter and the instrumentation for this process when the
    environment asks for traces; True when tracing is on. Safe to call twice."""
    global _tracer, _redis_traced
    if _tracer is not None:
        return True
    if not wanted(environ):
        return False
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # OTEL_SERVICE_NAME, when set, names the service; otherwise the process's part (web, worker, beat).
    resource = Resource.create({SERVICE_NAME: environ.get("OTEL_SERVICE_NAME") or service_name})
    provider = TracerProvider(resource=resource, sampler=doors_only_sampler(sampled_share(environ)))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    left_out = disabled_instrumentations(environ)
    for name, instrumentor in (
        ("django", DjangoInstrumentor),
        ("celery", CeleryInstrumentor),
        ("httpx", HTTPXClientInstrumentor),
    ):
        if name not in left_out:
            instrumentor().instrument()
    _redis_traced = "redis" not in left_out
    _tracer = trace.get_tracer("kourier")
    logging.getLogger(__name__).info("tracing.on", extra={"service": resource.attributes[SERVICE_NAME]})
    return True


def disabled_instrumentations(environ: Mapping[str, str]) -> frozenset[str]:
    """The instrumentations ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`` leaves out (OpenTelemetry's own
    variable, comma-separated entry-point names: django, celery, httpx, redis); Kourier's own spans stay."""
    names = environ.get("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", "")
    return frozenset(name.strip().lower() for name in names.split(",") if name.strip())


# OTEL_TRACES_SAMPLER's values Kourier takes. A span always follows its parent's decision (a turn's
# spans are its trace's, whichever process makes them), so "always_on" is "parentbased_always_on".
SAMPLERS = (
    "always_on", "parentbased_always_on", "always_off", "parentbased_always_off",
    "traceidratio", "parentbased_traceidratio",
)  # fmt: skip


def sampling_problem(environ: Mapping[str, str] = os.environ) -> str:
    """What is wrong with ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG`` (empty: nothing), for
    the start-up check (kourier/checks.py)."""
    name = environ.get("OTEL_TRACES_SAMPLER", "").strip().lower()
    if name and name not in SAMPLERS:
        return f"OTEL_TRACES_SAMPLER is {name!r}, which is not one of {', '.join(SAMPLERS)}."
    argument = environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    if name.endswith("traceidratio") and argument:
        try:
            share = float(argument)
        except ValueError:
            share = -1.0
        if not 0.0 <= share <= 1.0:
            return f"OTEL_TRACES_SAMPLER_ARG is {argument!r}, not the share of traces to keep (0 to 1)."
    return ""


def sampled_share(environ: Mapping[str, str] = os.environ) -> float:
    """The share of traces the doors start that are kept: 1 unless ``OTEL_TRACES_SAMPLER`` says
    ``always_off`` (0) or ``traceidratio`` (``OTEL_TRACES_SAMPLER_ARG``; 1 when unset or not a share,
    as OpenTelemetry's specification says, and the start-up check refuses the latter)."""
    name = environ.get("OTEL_TRACES_SAMPLER", "").strip().lower()
    if name.endswith("always_off"):
        return 0.0
    if name.endswith("traceidratio") and not sampling_problem(environ):
        return float(environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip() or 1.0)
    return 1.0


def doors_only_sampler(share: float = 1.0) -> Any:
    """Traces start at the doors (a request served, a task consumed or sent), never at a client call
    outside any trace: a worker's Celery polls its broker in Redis every second, and each poll made a
    trace of its own, most of what tracing cost a turn (docs/performance.md, section g). A client
    call inside a trace (a budget's reservation in a turn, the A2A request) is kept with it. A door
    keeps ``share`` of the traces it starts (by trace id, as every process decides alike), and every
    span follows its parent's decision: a turn is traced whole or not at all."""
    from opentelemetry.sdk.trace.sampling import (
        ALWAYS_ON,
        Decision,
        ParentBased,
        Sampler,
        SamplingResult,
        TraceIdRatioBased,
    )
    from opentelemetry.trace import SpanKind

    at_the_door = ALWAYS_ON if share >= 1.0 else TraceIdRatioBased(share)

    class NoLoneClientCalls(Sampler):
        def should_sample(
            self, parent_context, trace_id, name, kind=None, attributes=None, links=None, trace_state=None
        ):  # type: ignore[no-untyped-def]
            if kind is SpanKind.CLIENT:
                return SamplingResult(Decision.DROP)
            return at_the_door.should_sample(
                parent_context, trace_id, name, kind, attributes, links, trace_state
            )

        def get_description(self) -> str:
            return f"NoLoneClientCalls({at_the_door.get_description()})"

    return ParentBased(root=NoLoneClientCalls())


def flush(timeout_millis: int = 5000) -> None:
    """Sends the spans still held (at a process's end: the batch processor's thread dies with it)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if force_flush is not None:
        force_flush(timeout_millis)


def span(
    name: str, *, traceparent: str = "", attributes: Mapping[str, str | int | bool] | None = None
) -> contextlib.AbstractContextManager[Any]:
    """A span made current for the ``with`` block (a no-op when tracing is off). ``traceparent``
    continues a trace kept from another process (a turn row's); empty: the current one."""
    if _tracer is None:
        return _no_span
    from opentelemetry.trace import use_span

    made = _tracer.start_span(name, context=_kept(traceparent), attributes=attributes)
    # use_span (one layer) rather than start_as_current_span (three around it): a turn makes a dozen.
    return use_span(made, end_on_exit=True)


@contextlib.contextmanager
def _continuing(traceparent: str) -> Iterator[None]:
    from opentelemetry import context

    token = context.attach(_kept(traceparent))
    try:
        yield
    finally:
        context.detach(token)


def continued(traceparent: str) -> contextlib.AbstractContextManager[Any]:
    """The trace kept as ``traceparent`` (a turn row's) made current for the ``with`` block, with no
    span of its own: the spans made in it (the acknowledgment's Slack call) join that trace. A no-op
    when tracing is off or nothing was kept."""
    if _tracer is None or not traceparent:
        return _no_span
    return _continuing(traceparent)


def _kept(traceparent: str) -> Any:
    """The context a kept ``traceparent`` continues; None (the current one) when it is empty."""
    if not traceparent:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": traceparent})


class _Call:
    """One client call as ``call`` traces it: what it will show, kept until it ends."""

    __slots__ = ("attributes", "events", "name", "started")

    def __init__(self, name: str, attributes: Mapping[str, str | int | bool]) -> None:
        self.name = name
        self.attributes = dict(attributes)
        self.events: list[tuple[str, dict[str, str | int | float | bool], int]] = []
        self.started = 0

    def set_attribute(self, key: str, value: str | int | bool) -> None:
        self.attributes[key] = value

    def add_event(self, name: str, **attributes: str | int | float | bool) -> None:
        self.events.append((name, attributes, time.time_ns()))

    def __enter__(self) -> _Call:
        self.started = time.time_ns()
        return self

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        from opentelemetry.trace import Status, StatusCode, get_current_span

        current = get_current_span()
        failed = isinstance(error, Exception)  # a cancelled call (the turn stopped) is no failure
        if current.is_recording() and not self.events and not failed:
            self.attributes["kourier.duration_ms"] = (time.time_ns() - self.started) // 1_000_000
            current.add_event(self.name, self.attributes, self.started)
            return
        made = _tracer.start_span(self.name, attributes=self.attributes, start_time=self.started)
        for name, attributes, at in self.events:
            made.add_event(name, attributes, at)
        if failed:
            made.record_exception(error)
            made.set_status(Status(StatusCode.ERROR, f"{kind.__name__}: {error}"))
        made.end()


class _UntracedCall:
    """``call``'s stand-in when tracing is off: nothing is kept."""

    def set_attribute(self, key: str, value: str | int | bool) -> None:
        pass

    def add_event(self, name: str, **attributes: str | int | float | bool) -> None:
        pass

    def __enter__(self) -> _UntracedCall:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        pass


_untraced_call = _UntracedCall()


def call(name: str, attributes: Mapping[str, str | int | bool]) -> _Call | _UntracedCall:
    """A client call (a Slack API call) for the ``with`` block, as the trace shows it:

    - one that went straight through is an event named ``name`` on the current span (the turn's),
      at the call's start, with ``attributes`` and its ``kourier.duration_ms``;
    - one with more to tell (an event added to it: a 429, a retry; or an exception) is a span of its
      own, from its start to its end, with its events;
    - so is one that no span of this process records (none is current, or only a trace kept from
      another process: an acknowledgment's reaction), so that it shows in a trace.

    A span costs the worker about three times what an event does (docs/performance.md, section g), and
    a turn makes several calls that go straight through. The call is not made current: it makes no
    spans of its own. When tracing is off, a stand-in that keeps nothing."""
    if _tracer is None:
        return _untraced_call
    return _Call(name, attributes)


def traced_redis(client: Any) -> Any:
    """``client`` (a ``redis.Redis``), its commands made spans by OpenTelemetry's redis instrumentation
    when tracing is on; the client itself.

    Only the clients given here are traced, not every client of the process as the instrumentation's
    ``instrument()`` does: a worker's Celery polls its broker every second, and each poll went through
    the wrapper to make a span the sampler then dropped; kourier/shared_cache.py's bookkeeping (a Slack
    call's budget slot, a reply's plan, the stop word a running turn reads each second) was most of a
    turn's spans, and what it serves (a Slack call's record, the turn's span) tells the wait
    (docs/performance.md, section g)."""
    if _redis_traced:
        from opentelemetry.instrumentation.redis import RedisInstrumentor

        RedisInstrumentor.instrument_client(client)
    return client


def annotate(**attributes: str | int | bool) -> None:
    """Adds attributes (``kourier.<name>``) to the current span, when tracing is on."""
    if _tracer is None:
        return
    from opentelemetry import trace

    current = trace.get_current_span()
    for name, value in attributes.items():
        current.set_attribute(f"kourier.{name}", value)


def current_traceparent() -> str:
    """The current span's W3C ``traceparent`` header, to keep with work another process continues;
    empty when tracing is off or no span is current."""
    if _tracer is None:
        return ""
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return carrier.get("traceparent", "")


def inject(headers: dict[str, Any]) -> None:
    """Adds the current trace context (``traceparent``) to a message's headers, when tracing is on."""
    if _tracer is None:
        return
    from opentelemetry import propagate

    propagate.inject(headers)


def current_ids() -> tuple[str, str] | None:
    """The current span's trace and span ids in hex, as tracing back ends show them; None when off, or
    when the current trace is not kept (``OTEL_TRACES_SAMPLER``)."""
    if _tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid or not context.trace_flags.sampled:  # a trace not kept leads nowhere
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


class TraceIdsFilter(logging.Filter):
    """Puts the current trace and span ids on every record (``trace_id``, ``span_id``), so a log line
    leads to its trace. Installed only when tracing is wanted (kourier/settings.py): off, logging
    pays nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = current_ids()
        if ids is not None:
            record.trace_id, record.span_id = ids
        return True
