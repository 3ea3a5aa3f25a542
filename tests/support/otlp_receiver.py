"""An OTLP/HTTP receiver for tests: what a collector would get, the spans of every process that exports.

It serves ``POST /v1/traces`` on 127.0.0.1 (OTLP over HTTP, protobuf, gzip or not, as the OpenTelemetry
exporters send it), decodes each ``ExportTraceServiceRequest`` with opentelemetry-proto and keeps its
spans. The product's processes and a kagent runtime are pointed at it with
``OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url``.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Status

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str  # hex, as back ends show it
    span_id: str
    parent_span_id: str  # empty for a trace's root
    attributes: dict[str, object] = field(default_factory=dict)
    events: tuple[str, ...] = ()
    event_attributes: tuple[dict[str, object], ...] = ()  # each event's, in the order of ``events``
    error: bool = False  # the span's status is ERROR


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self._receive))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, found: Callable[[list[ReceivedSpan]], bool], *, timeout: float) -> list[ReceivedSpan]:
        """The spans received once ``found`` holds of them; fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.received()
            if found(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the spans never came; received: {[(s.service, s.name) for s in spans]}"
                )
            time.sleep(0.05)  # polling for exports a batch processor sends on its own schedule

    def _receive(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        spans: list[ReceivedSpan] = []
        for resource_spans in request.resource_spans:
            service = next(
                (
                    attribute.value.string_value
                    for attribute in resource_spans.resource.attributes
                    if attribute.key == "service.name"
                ),
                "",
            )
            for scope_spans in resource_spans.scope_spans:
                spans.extend(
                    ReceivedSpan(
                        service=service,
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        events=tuple(event.name for event in span.events),
                        event_attributes=tuple(
                            {a.key: _value(a.value) for a in event.attributes} for event in span.events
                        ),
                        error=span.status.code == Status.STATUS_CODE_ERROR,
                    )
                    for span in scope_spans.spans
                )
        with self._lock:
            self.spans.extend(spans)


def _value(value) -> object:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def _handler_for(receive: Callable[[bytes], None]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != TRACES_PATH:
                self.send_response(404)
                self.end_headers()
                return
            receive(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the tests' output is theirs
            pass

    return Handler


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    try:
        yield receiver
    finally:
        receiver.stop()
