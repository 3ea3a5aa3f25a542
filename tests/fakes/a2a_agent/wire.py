"""The HTTP layer in front of the SDK app: it records, answers faults, and cuts connections.

`WireMiddleware` is a plain ASGI middleware around the Starlette app the SDK builds. Every HTTP
request becomes an `Exchange`: it is recorded first (so tests see even the calls that fail), may be
answered by a fault queued with `fail_next_call` without reaching the SDK, and otherwise runs the
SDK app in a child task while the middleware watches for a cut order from the script.

Cutting a connection: the SDK app is cancelled (its SSE generator unsubscribes; the agent's
execution is a separate task and carries on), and the middleware raises `ConnectionCut` once the
response has started. uvicorn answers an exception after the response start by closing the TCP
connection, so the client sees exactly what a dropped connection looks like: a stream that ends
without the final chunk. (Before the response start uvicorn would send a 500 instead, hence the
response start is sent first.)

"All events so far reached the client" is made exact by counting: the executor counts the events
it enqueued for the request, the exchange counts the SSE frames it forwarded, and a cut waits until
they match - no sleeps, no races with the SDK's queues.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import httpx
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

from tests.fakes.a2a_agent.records import RecordedRequest, Recorder, parse_json
from tests.fakes.a2a_agent.steps import Garbage, HttpStatus, JsonRpcError, WireFault

logger = logging.getLogger(__name__)

Scope: TypeAlias = MutableMapping[str, Any]
Message: TypeAlias = MutableMapping[str, Any]
Receive: TypeAlias = Callable[[], Awaitable[Message]]
Send: TypeAlias = Callable[[Message], Awaitable[None]]
ASGIApp: TypeAlias = Callable[[Scope, Receive, Send], Awaitable[None]]

EXCHANGE_SCOPE_KEY = "kourier.scripted_agent.exchange"
STREAMING_METHODS = frozenset(
    {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}
)
SEND_METHODS = frozenset({"SendMessage", "SendStreamingMessage", "message/send", "message/stream"})
SUBSCRIBE_METHODS = frozenset({"SubscribeToTask", "tasks/resubscribe"})
AGENT_CARD_CALL = "agent-card"  # the `method` that makes fail_next_call hit the agent card fetch

DELIVERY_TIMEOUT = 2.0  # seconds a cut waits for earlier events to reach the client
CLOSE_TIMEOUT = 2.0


class ConnectionCut(Exception):
    """Raised out of the ASGI app on purpose: uvicorn then closes the TCP connection mid-response."""


class _HideDeliberateCuts(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ConnectionCut))


def install_log_filter() -> None:
    """uvicorn logs every exception out of an app as an error; a deliberate cut is not one."""
    uvicorn_errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(existing, _HideDeliberateCuts) for existing in uvicorn_errors.filters):
        uvicorn_errors.addFilter(_HideDeliberateCuts())


@dataclass(frozen=True)
class CutOrder:
    """How an exchange ends when the script cuts it."""

    kind: Literal["drop", "error", "garbage"]
    error: JsonRpcError | None = None
    garbage: Garbage | None = None


class Exchange:
    """One HTTP request and its response, while it is in flight."""

    def __init__(
        self, token: int, request: RecordedRequest, send: Send, task_events: Callable[[str | None], int]
    ) -> None:
        self.token = token
        self.request = request
        self._send = send  # the server's own send; the SDK app only gets `guarded_send`
        self.task_id = _task_id_of(request)
        self._task_events = task_events
        self.response_started = False
        self.response_complete = False
        self.is_event_stream = False
        self.frames_sent = 0
        self.task_events_at_first_frame: int | None = None
        self.finished = asyncio.Event()
        self.cut_order: CutOrder | None = None
        self._cut_requested = asyncio.Event()
        self._progress = asyncio.Condition()
        self._send_lock = asyncio.Lock()

    @property
    def is_streaming_call(self) -> bool:
        return self.request.rpc_method in STREAMING_METHODS

    async def guarded_send(self, message: Message) -> None:
        """The `send` handed to the SDK app: forwards and counts, and goes quiet once a cut is ordered."""
        if self._cut_requested.is_set():
            return  # the connection is being cut: nothing more reaches the client
        async with self._send_lock:
            await self._forward(message)

    async def _forward(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.response_started = True
            content_type = httpx.Headers(
                [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message["headers"]]
            )
            self.is_event_stream = content_type.get("content-type", "").startswith("text/event-stream")
        await self._send(message)
        if message["type"] != "http.response.body":
            return
        if not message.get("more_body", False):
            self.response_complete = True
        if self.is_event_stream and _carries_event(message.get("body", b"")):
            if self.task_events_at_first_frame is None:
                self.task_events_at_first_frame = self._task_events(self.task_id)
            self.frames_sent += 1
            async with self._progress:
                self._progress.notify_all()

    # --- used by the executor (same event loop) ---

    def expected_frames(self, origin_token: int | None, origin_events: int) -> int:
        """Frames this exchange must have sent before everything emitted so far has reached it."""
        if self.token == origin_token:
            return origin_events  # the request that runs the script streams exactly its events
        if self.task_events_at_first_frame is None:
            return 1  # a (re)subscription starts with the task snapshot
        # A subscription taken while the agent was idle gets the snapshot, then every later event.
        return 1 + self._task_events(self.task_id) - self.task_events_at_first_frame

    async def wait_for_frames(self, expected: int) -> None:
        async with self._progress:
            await self._progress.wait_for(lambda: self.frames_sent >= expected or self.finished.is_set())

    def order_cut(self, order: CutOrder) -> None:
        if self.cut_order is None:
            self.cut_order = order
        self._cut_requested.set()

    async def cut_requested(self) -> None:
        await self._cut_requested.wait()

    async def inject_frame(self, payload: str) -> None:
        """Put one extra SSE event into the stream, between two of the SDK's (not counted as one)."""
        async with self._send_lock:
            if self.is_event_stream and not self.response_complete and not self._cut_requested.is_set():
                frame = b"data: " + payload.encode() + b"\r\n\r\n"
                await self._send({"type": "http.response.body", "body": frame, "more_body": True})

    # --- used by the middleware ---

    async def carry_out_cut(self) -> None:
        order = self.cut_order or CutOrder("drop")
        async with self._send_lock:
            if self.response_complete:
                return  # it finished on its own before the cut got through
            if order.kind == "error" and order.error is not None:
                await self._end_with_error(order.error)
            elif order.kind == "garbage" and order.garbage is not None and not self.response_started:
                await _send_complete(self._send, 200, "application/json", order.garbage.payload.encode())
            else:
                await self._break_off()

    async def _end_with_error(self, error: JsonRpcError) -> None:
        body = json.dumps(jsonrpc_error_body(self.request.rpc_id, error)).encode()
        if not self.response_started:
            await _send_complete(self._send, 200, "application/json", body)
        else:  # mid-stream: the SDK's own way to report an error on an SSE stream
            frame = b"event: error\r\ndata: " + body + b"\r\n\r\n"
            await self._send({"type": "http.response.body", "body": frame, "more_body": True})
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        self.response_complete = True

    async def _break_off(self) -> None:
        if not self.response_started:
            content_type = (
                "text/event-stream; charset=utf-8" if self.is_streaming_call else "application/json"
            )
            headers = [(b"content-type", content_type.encode())]
            await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        raise ConnectionCut(
            f"scripted agent dropped the connection of {self.request.rpc_method or self.request.path}"
        )

    async def mark_finished(self) -> None:
        self.finished.set()
        async with self._progress:
            self._progress.notify_all()


class Wire:
    """The registry of exchanges in flight, shared by the middleware and the executor."""

    def __init__(self, recorder: Recorder, task_events: Callable[[str | None], int]) -> None:
        self._recorder = recorder
        self._task_events = task_events
        self._tokens = itertools.count(1)
        self._open: dict[int, Exchange] = {}
        self._faults: list[tuple[WireFault, str | None]] = []
        self._faults_lock = threading.Lock()  # faults are queued from the test thread

    # --- faults for the next call (test thread) ---

    def queue_fault(self, fault: WireFault, method: str | None) -> None:
        with self._faults_lock:
            self._faults.append((fault, method))

    def take_fault(self, request: RecordedRequest) -> WireFault | None:
        is_card_fetch = request.http_method == "GET" and request.path == AGENT_CARD_WELL_KNOWN_PATH
        call = AGENT_CARD_CALL if is_card_fetch else request.rpc_method
        with self._faults_lock:
            for position, (fault, method) in enumerate(self._faults):
                if (method is None and request.rpc_method is not None) or (
                    method is not None and method == call
                ):
                    del self._faults[position]
                    return fault
        return None

    # --- exchanges (middleware) ---

    def open(self, scope: Scope, body: bytes, send: Send) -> Exchange:
        parsed = parse_json(body)
        rpc = parsed if isinstance(parsed, dict) else {}
        request = RecordedRequest(
            seq=self._recorder.next_request_seq(),
            http_method=scope["method"],
            path=scope["path"],
            headers=httpx.Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]),
            body=body,
            json=parsed,
            rpc_method=rpc.get("method") if isinstance(rpc.get("method"), str) else None,
            rpc_id=rpc.get("id"),
            params=rpc.get("params"),
        )
        self._recorder.add_request(request)
        exchange = Exchange(next(self._tokens), request, send, self._task_events)
        self._open[exchange.token] = exchange
        return exchange

    async def close(self, exchange: Exchange) -> None:
        self._open.pop(exchange.token, None)
        await exchange.mark_finished()

    # --- actions of a script (executor, same loop) ---

    def attach(self, token: int | None, task_id: str) -> None:
        """The request `token` runs task `task_id` (a new task's id is only known to the executor)."""
        exchange = self._open.get(token) if token is not None else None
        if exchange is not None:
            exchange.task_id = task_id

    def attached(self, task_id: str) -> list[Exchange]:
        return [exchange for exchange in self._open.values() if exchange.task_id == task_id]

    async def deliver_pending(self, task_id: str, origin_token: int | None, origin_events: int) -> None:
        """Wait until the task's open streams have sent every event emitted so far."""
        for exchange in self.attached(task_id):
            if not exchange.is_streaming_call:
                continue
            expected = exchange.expected_frames(origin_token, origin_events)
            try:
                await asyncio.wait_for(exchange.wait_for_frames(expected), DELIVERY_TIMEOUT)
            except TimeoutError:
                logger.warning(
                    "scripted agent: %s stream has sent %d of %d events after %.0fs; going on",
                    exchange.request.rpc_method,
                    exchange.frames_sent,
                    expected,
                    DELIVERY_TIMEOUT,
                )

    async def inject_garbage(self, task_id: str, garbage: Garbage) -> None:
        """A malformed event into the task's open streams; a blocking call gets it as its whole body."""
        blocking_calls = []
        for exchange in self.attached(task_id):
            if exchange.is_event_stream:
                await exchange.inject_frame(garbage.payload)
            else:
                blocking_calls.append(exchange)
        await self._cut_and_wait(blocking_calls, CutOrder("garbage", garbage=garbage))

    async def cut(self, task_id: str, order: CutOrder) -> None:
        await self._cut_and_wait(self.attached(task_id), order)

    async def cut_everything(self) -> None:
        await self._cut_and_wait(list(self._open.values()), CutOrder("drop"))

    async def _cut_and_wait(self, exchanges: list[Exchange], order: CutOrder) -> None:
        for exchange in exchanges:
            exchange.order_cut(order)
        for exchange in exchanges:
            try:
                await asyncio.wait_for(exchange.finished.wait(), CLOSE_TIMEOUT)
            except TimeoutError:
                logger.warning("scripted agent: %s did not close after a cut", exchange.request.rpc_method)


class WireMiddleware:
    """ASGI middleware: record every request, answer queued faults, carry out cuts."""

    def __init__(self, app: ASGIApp, wire: Wire) -> None:
        self.app = app
        self.wire = wire

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        exchange = self.wire.open(scope, body, send)
        try:
            fault = self.wire.take_fault(exchange.request)
            if fault is not None:
                await answer_with_fault(send, fault, exchange.request)
                return
            await self._serve(exchange, {**scope, EXCHANGE_SCOPE_KEY: exchange.token}, _replay(body, receive))
        finally:
            await self.wire.close(exchange)

    async def _serve(self, exchange: Exchange, scope: Scope, receive: Receive) -> None:
        app_task = asyncio.ensure_future(self.app(scope, receive, exchange.guarded_send))
        cut_task = asyncio.ensure_future(exchange.cut_requested())
        try:
            await asyncio.wait({app_task, cut_task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # uvicorn gave up on the request (server shutdown)
            app_task.cancel()
            raise
        finally:
            cut_task.cancel()
        if exchange.cut_order is None:
            app_task.result()  # re-raise what the app raised, as if it had been called directly
            return
        # Cut, even if the app just finished: its last messages may have been swallowed.
        app_task.cancel()
        await asyncio.gather(app_task, return_exceptions=True)
        await exchange.carry_out_cut()


def jsonrpc_error_body(request_id: Any, error: JsonRpcError) -> dict[str, Any]:
    error_object: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        error_object["data"] = error.data
    return {"jsonrpc": "2.0", "id": request_id, "error": error_object}


async def answer_with_fault(send: Send, fault: WireFault, request: RecordedRequest) -> None:
    """Answer a call with a queued fault instead of letting the SDK see it."""
    if isinstance(fault, JsonRpcError):
        body = json.dumps(jsonrpc_error_body(request.rpc_id, fault)).encode()
        await _send_complete(send, 200, "application/json", body)
    elif isinstance(fault, Garbage):
        if request.rpc_method in STREAMING_METHODS:
            frame = b"data: " + fault.payload.encode() + b"\r\n\r\n"
            await _send_complete(send, 200, "text/event-stream; charset=utf-8", frame)
        else:
            await _send_complete(send, 200, "application/json", fault.payload.encode())
    elif isinstance(fault, HttpStatus):
        await _send_complete(send, fault.status, "text/plain; charset=utf-8", fault.body.encode())
    else:  # pragma: no cover - WireFault is a closed union
        raise TypeError(f"not a wire fault: {fault!r}")


async def _send_complete(send: Send, status: int, content_type: str, body: bytes) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the already-read body to the app, then passes through (disconnects)."""
    delivered = False

    async def replayed_receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed_receive


def _carries_event(body: bytes) -> bool:
    """An SSE chunk with a `data:` line is an event; `: ping` comments are not."""
    return body.startswith(b"data:") or b"\ndata:" in body


def _task_id_of(request: RecordedRequest) -> str | None:
    """The task a call is bound to, when the client names it."""
    params = request.params if isinstance(request.params, dict) else {}
    if request.rpc_method in SUBSCRIBE_METHODS:
        task_id = params.get("id")
    elif request.rpc_method in SEND_METHODS and isinstance(params.get("message"), dict):
        task_id = params["message"].get("taskId")
    else:
        task_id = None
    return task_id if isinstance(task_id, str) and task_id else None
