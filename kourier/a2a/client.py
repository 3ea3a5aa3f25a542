"""The A2A client: JSON-RPC over HTTP, with SSE for streams, speaking A2A 1.0 and 0.3.

Why raw JSON-RPC over httpx and not the a2a-sdk client: the SDK client chooses transports, versions
and retries on its own and hides what went over the wire. Kourier needs to control exactly that:
one explicit set of timeouts (connect, silence between events, whole request) mapped to errors that
say whether a retry can help and whether the request may already have reached the agent; a stream
that stops at a paused task even when the server keeps it open (SubscribeToTask on an input-required
task, docs/kagent-dialect.md §4); the ``A2A-Extensions`` opt-in on every request; and a stream that ends
without a final state reported as such, so the runner can reconcile. The SDK is still used where it
fits: its constants (header names, versions, the card path) and its schemas, which validate every
object the agent sends (``codec_v10`` / ``codec_v03``).

Protocol versions: "auto" reads the agent card once per client (``/.well-known/agent-card.json``
under the agent URL) and speaks 1.0 when the card offers it, else 0.3. The card may name another
JSON-RPC path on the same server; it is never followed to another origin, since every request
carries the Binding's service identity.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

import httpx
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from httpx_sse import EventSource, ServerSentEvent

from kourier import egress, metrics
from kourier.a2a import codec_v03, codec_v10
from kourier.a2a.card import parse_agent_card, same_origin
from kourier.a2a.codec import Codec, task_params
from kourier.a2a.errors import (
    A2AError,
    AgentHTTPError,
    AgentTimeout,
    AgentUnreachable,
    InvalidAgentResponse,
    NotSupportedByProtocol,
    StreamDropped,
    jsonrpc_error_from_payload,
)
from kourier.a2a.request_body import RequestBody, json_request, streamed_request
from kourier.a2a.wire import AgentCard, Message, StreamEvent, Task, ends_stream

logger = logging.getLogger(__name__)

ProtocolVersion = Literal["auto", "1.0", "0.3"]
_T = TypeVar("_T")

_CODECS: dict[str, Codec] = {codec_v10.VERSION: codec_v10.CODEC, codec_v03.VERSION: codec_v03.CODEC}


class EventStream:
    """The events of one streaming request, in order; the stream ends at a terminal or paused state.

    Iterate it with ``async for``. When you may stop early, use it as an async context manager (or
    call ``aclose()``) so the HTTP connection is closed at once and not whenever the garbage
    collector gets to it.

    Raises, while iterating: ``StreamDropped`` when the stream ends before a terminal or paused
    state, ``AgentTimeout``, ``AgentUnreachable``, ``JSONRPCError`` subclasses, ``InvalidAgentResponse``.
    """

    def __init__(self, events: AsyncGenerator[StreamEvent, None]) -> None:
        self._events = events

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        await self._events.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class AgentCards:
    """Agent cards read lately, by agent URL, each kept ``ttl`` seconds: the clients that share one read
    an agent's card once a while, not once each (a turn's client lives one turn). An agent that changes
    its card is seen within ``ttl``, or at once by the client after one whose request failed: a client
    that took its card from here forgets it then, in case the card changed."""

    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._cards: dict[str, tuple[float, AgentCard]] = {}

    def get(self, url: str) -> AgentCard | None:
        kept = self._cards.get(url)
        if kept is None or kept[0] <= self._clock():
            return None
        return kept[1]

    def put(self, url: str, card: AgentCard) -> None:
        self._cards[url] = (self._clock() + self.ttl, card)

    def forget(self, url: str) -> None:
        self._cards.pop(url, None)

    def clear(self) -> None:
        self._cards.clear()


class A2AClient:
    """One agent endpoint, as seen by one Binding.

    ``headers`` are sent with every request (the Binding's service identity, e.g. Authorization).
    ``extensions`` are the extension URIs to opt into (``A2A-Extensions``), e.g. what a dialect asks for.
    Timeouts, in seconds: ``connect_timeout`` to open a connection, ``read_timeout`` of silence between
    two reads (between SSE events on a stream), ``request_timeout`` for a whole request or stream.
    ``cards``: where the card read for "auto" is shared with other clients (else read once per client).
    ``transport``: the HTTP transport (closed with the client, as httpx does).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        protocol_version: ProtocolVersion = "auto",
        extensions: Sequence[str] = (),
        connect_timeout: float = 5.0,
        read_timeout: float = 300.0,
        request_timeout: float = 3600.0,
        transport: httpx.AsyncBaseTransport | None = None,
        cards: AgentCards | None = None,
    ) -> None:
        if protocol_version not in ("auto", *_CODECS):
            raise ValueError(f"unknown A2A protocol version {protocol_version!r}")
        self.url = url
        self.protocol_version: ProtocolVersion = protocol_version
        self.extensions = tuple(extensions)
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.request_timeout = request_timeout
        self._http = httpx.AsyncClient(
            verify=_tls_context(),  # one per process: building one costs ~20 ms of CPU and ~850 KiB
            headers=dict(headers or {}),
            timeout=httpx.Timeout(
                connect=connect_timeout, read=read_timeout, write=read_timeout, pool=connect_timeout
            ),
            # Through the egress proxy the environment names, chosen per URL (kourier/egress.py).
            transport=transport or egress.RoutedTransport(verify=_tls_context()),
            trust_env=False,
            follow_redirects=False,  # a redirect could carry the service identity elsewhere
        )
        self._cards = cards
        self._card: AgentCard | None = None
        self._card_kept = False  # the card came from ``cards``, read by another client
        self._card_lock = asyncio.Lock()
        self._target: tuple[Codec, str] | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- discovery ----------------------------------------------------------------------------------

    async def agent_card(self) -> AgentCard:
        """The agent card, fetched on first use and kept for the life of the client."""
        async with self._card_lock:
            if self._card is None and self._cards is not None:
                self._card = self._cards.get(self.url)
                self._card_kept = self._card is not None
            if self._card is None:
                card_url = self.url.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH
                method = "GET agent card"
                with _counted(method):
                    response = await self._unary(method, lambda: self._http.get(card_url))
                    self._card = parse_agent_card(_json_body(response, method))
                if self._cards is not None:
                    self._cards.put(self.url, self._card)
            return self._card

    async def resolved_version(self) -> str:
        """The protocol version this client speaks to the agent ("1.0" or "0.3")."""
        codec, _ = await self._resolve()
        return codec.version

    async def _resolve(self) -> tuple[Codec, str]:
        """The codec and the JSON-RPC URL: pinned by the caller, or read from the agent card."""
        if self._target is None:
            if self.protocol_version != "auto":
                self._target = (_CODECS[self.protocol_version], self.url)
            else:
                card = await self.agent_card()
                rpc_url = self.url
                if card.rpc_url and same_origin(card.rpc_url, self.url):
                    rpc_url = card.rpc_url
                elif card.rpc_url:
                    logger.warning(
                        "agent card names a JSON-RPC URL on another origin; using the configured URL",
                        extra={"configured_url": self.url, "card_url": card.rpc_url},
                    )
                self._target = (_CODECS[card.protocol_version], rpc_url)
        return self._target

    # -- operations -----------------------------------------------------------------------------------

    def send_streaming(self, message: Message) -> EventStream:
        """Send a message and stream what the agent does with it (SendStreamingMessage / message/stream)."""
        return EventStream(
            self._stream(
                lambda codec: (
                    codec.send_streaming_method,
                    lambda request_id: streamed_request(
                        request_id, codec.send_streaming_method, message, codec.send_params
                    ),
                )
            )
        )

    def subscribe(self, task_id: str) -> EventStream:
        """Follow a running task again (SubscribeToTask / tasks/resubscribe), e.g. after a dropped stream."""
        return EventStream(
            self._stream(
                lambda codec: (
                    codec.subscribe_method,
                    lambda request_id: json_request(request_id, codec.subscribe_method, task_params(task_id)),
                )
            )
        )

    async def get_task(self, task_id: str, history_length: int | None = None) -> Task:
        codec, _ = await self._resolve()
        result = await self._call(codec.get_task_method, task_params(task_id, history_length))
        return _decoded(codec.get_task_method, lambda: codec.decode_task(result))

    async def cancel_task(self, task_id: str) -> Task:
        codec, _ = await self._resolve()
        result = await self._call(codec.cancel_task_method, task_params(task_id))
        return _decoded(codec.cancel_task_method, lambda: codec.decode_task(result))

    async def list_tasks(self, context_id: str | None) -> list[Task]:
        """Every task of a context (of the agent, with None), all pages (A2A 1.0 ListTasks; 0.3 has none)."""
        codec, _ = await self._resolve()
        method = codec.list_tasks_method
        if method is None:
            raise NotSupportedByProtocol(f"listing tasks is not part of A2A {codec.version}")
        tasks: list[Task] = []
        page_token: str | None = None
        seen_tokens: set[str] = set()
        while True:
            page, page_token = await self._list_tasks_page(codec, method, context_id, page_token)
            tasks.extend(page)
            if page_token is None:
                return tasks
            if page_token in seen_tokens:
                raise InvalidAgentResponse("task list pages loop", method=method)
            seen_tokens.add(page_token)

    async def _list_tasks_page(
        self, codec: Codec, method: str, context_id: str | None, page_token: str | None
    ) -> tuple[list[Task], str | None]:
        result = await self._call(method, codec.list_tasks_params(context_id, page_token))
        return _decoded(method, lambda: codec.decode_list_tasks(result))

    async def find_task_for_message(self, context_id: str | None, message_id: str) -> Task | None:
        """The task the agent started for a message, or None when it has none (A2A 1.0 only).

        How a request whose fate is unknown is looked up before it is sent again (invariant 4). Agents
        do not de-duplicate on messageId, so several tasks may hold it; the first one listed (the most
        recently updated, as a2a-sdk orders them) is returned. Without a context (a request that would
        have started one), every task the identity can see is searched.
        """
        for task in await self.list_tasks(context_id):
            if task.has_message(message_id):
                return task
        return None

    # -- JSON-RPC over HTTP ----------------------------------------------------------------------------

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        codec, rpc_url = await self._resolve()
        request_id = str(uuid.uuid4())
        payload = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        headers = codec.headers(self.extensions)
        with _counted(method), self._card_doubted():
            response = await self._unary(
                method, lambda: self._http.post(rpc_url, json=payload, headers=headers)
            )
            return _result_of(_json_body(response, method), request_id, method)

    @contextlib.contextmanager
    def _card_doubted(self) -> Iterator[None]:
        """A request that failed may have failed on a card that changed since another client read it:
        the next client reads it again."""
        try:
            yield
        except A2AError:
            if self._card_kept and self._cards is not None:
                self._cards.forget(self.url)
            raise

    async def _unary(self, method: str, send: Callable[[], Any]) -> httpx.Response:
        """One request/response exchange under the whole-request deadline, errors typed."""
        try:
            async with asyncio.timeout(self.request_timeout):
                response: httpx.Response = await send()
        except TimeoutError as error:
            raise AgentTimeout(f"no answer within {self.request_timeout:g} s", method=method) from error
        except httpx.TransportError as error:
            raise _transport_error(error, method) from error
        _raise_for_status(response, method)
        return response

    async def _stream(
        self, request_of: Callable[[Codec], tuple[str, Callable[[str], RequestBody]]]
    ) -> AsyncGenerator[StreamEvent, None]:
        """``request_of`` names the method and makes the request's body for a request id."""
        codec, rpc_url = await self._resolve()
        method, body_of = request_of(codec)
        with _counted(method) as request, self._card_doubted():
            async with contextlib.aclosing(self._stream_events(codec, rpc_url, method, body_of)) as events:
                async for event in events:
                    # A reader stops at the last event: the stream is complete, not abandoned.
                    request.complete = ends_stream(event)
                    yield event

    async def _stream_events(
        self, codec: Codec, rpc_url: str, method: str, body_of: Callable[[str], RequestBody]
    ) -> AsyncGenerator[StreamEvent, None]:
        request_id = str(uuid.uuid4())
        body = body_of(request_id)
        request = self._http.build_request(
            "POST",
            rpc_url,
            content=body.chunks(),  # a file's base64 is written as it is sent, not held whole
            headers={
                **body.headers(),
                **codec.headers(self.extensions),
                "Accept": "text/event-stream",
                "Cache-Control": "no-store",
            },
        )
        # The deadline covers the whole stream. Each wait is bounded separately (never a timeout scope
        # around a ``yield``): the consumer's own work between events must not be cancelled by it.
        deadline = asyncio.get_running_loop().time() + self.request_timeout
        task_id: str | None = None
        context_id: str | None = None

        try:
            async with asyncio.timeout_at(deadline):
                response = await self._http.send(request, stream=True)
        except TimeoutError as error:
            raise AgentTimeout(f"no answer within {self.request_timeout:g} s", method=method) from error
        except httpx.TransportError as error:
            raise _transport_error(error, method, streaming=True) from error

        try:
            if not response.is_success:
                await response.aread()
                _raise_for_status(response, method)
            if not _is_event_stream(response):
                # An error (or a single result) answered as plain JSON instead of a stream.
                await response.aread()
                result = _result_of(_json_body(response, method), request_id, method)
                event = _decoded(method, lambda: codec.decode_stream_event(result))
                yield event
                if not ends_stream(event):
                    raise StreamDropped(
                        "plain JSON answer without a final state",
                        method=method,
                        task_id=_task_id_of(event),
                        context_id=_context_id_of(event),
                    )
                return

            async with contextlib.aclosing(EventSource(response).aiter_sse()) as server_events:
                while True:
                    try:
                        async with asyncio.timeout_at(deadline):
                            server_event = await anext(server_events)
                    except StopAsyncIteration:
                        break
                    stream_event = _decode_server_event(server_event, codec, request_id, method)
                    if stream_event is None:
                        continue
                    task_id = _task_id_of(stream_event) or task_id
                    context_id = _context_id_of(stream_event) or context_id
                    yield stream_event
                    if ends_stream(stream_event):
                        return
            raise StreamDropped(
                "stream closed before a final state", method=method, task_id=task_id, context_id=context_id
            )
        except TimeoutError as error:
            raise AgentTimeout(f"stream exceeded {self.request_timeout:g} s", method=method) from error
        except httpx.ReadTimeout as error:
            raise AgentTimeout(f"no event for {self.read_timeout:g} s", method=method) from error
        except httpx.TransportError as error:
            # Connection reset, truncated chunked body, peer closed mid-stream.
            raise StreamDropped(
                f"connection lost ({type(error).__name__})",
                method=method,
                task_id=task_id,
                context_id=context_id,
            ) from error
        finally:
            await response.aclose()


class _Request:
    complete = False  # a stream that yielded its last event, even if its reader closes it there


@contextlib.contextmanager
def _counted(method: str) -> Iterator[_Request]:
    """Counts one request by how it ended (kourier_a2a_requests_total): ok, the error's name,
    cancelled, or closed (a stream its reader stopped reading before its end)."""
    request = _Request()
    try:
        yield request
    except A2AError as error:
        metrics.a2a_request(method, type(error).__name__)
        raise
    except asyncio.CancelledError:
        metrics.a2a_request(method, "cancelled")
        raise
    except GeneratorExit:
        metrics.a2a_request(method, "ok" if request.complete else "closed")
        raise
    except Exception:
        metrics.a2a_request(method, "error")
        raise
    else:
        metrics.a2a_request(method, "ok")


def _decode_server_event(
    server_event: ServerSentEvent, codec: Codec, request_id: str, method: str
) -> StreamEvent | None:
    """One SSE event to a stream event; None for events without data (keep-alives)."""
    if not server_event.data:
        return None
    try:
        body = json.loads(server_event.data)
    except json.JSONDecodeError as error:
        raise InvalidAgentResponse("stream event is not JSON", method=method) from error
    if server_event.event == "error" and not (isinstance(body, dict) and "error" in body):
        raise InvalidAgentResponse("stream error event without a JSON-RPC error", method=method)
    result = _result_of(body, request_id, method)
    return _decoded(method, lambda: codec.decode_stream_event(result))


def _result_of(body: Any, request_id: str, method: str) -> Any:
    """The ``result`` of a JSON-RPC response; its ``error`` raised as a typed error."""
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise InvalidAgentResponse("not a JSON-RPC 2.0 response", method=method)
    if "error" in body:
        raise jsonrpc_error_from_payload(body["error"], method=method)
    if body.get("id") != request_id:
        raise InvalidAgentResponse("JSON-RPC response for another request id", method=method)
    if "result" not in body:
        raise InvalidAgentResponse("JSON-RPC response without result or error", method=method)
    return body["result"]


def _decoded(method: str, decode: Callable[[], _T]) -> _T:
    """Run a codec decoder, naming the method in the error it may raise."""
    try:
        return decode()
    except InvalidAgentResponse as error:
        if error.method:
            raise
        raise InvalidAgentResponse(error.detail, method=method) from error


def _json_body(response: httpx.Response, method: str) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InvalidAgentResponse(f"HTTP {response.status_code} body is not JSON", method=method) from error


def _is_event_stream(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").partition(";")[0].strip() == "text/event-stream"


_GATEWAY_STATUSES = {502, 503, 504}


def _raise_for_status(response: httpx.Response, method: str) -> None:
    """Non-2xx answers: gateway errors are retryable; a JSON-RPC error body wins over the bare status."""
    if response.is_success:
        return
    status = response.status_code
    if status in _GATEWAY_STATUSES:
        # 503 is refused before processing; 502/504 may come after the gateway passed the request on.
        raise AgentUnreachable(f"HTTP {status}", method=method, outcome_unknown=status != 503)
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        raise jsonrpc_error_from_payload(body["error"], method=method)
    raise AgentHTTPError(status, method=method, retry_after=_retry_after(response))


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _transport_error(error: httpx.TransportError, method: str, *, streaming: bool = False) -> A2AError:
    """httpx errors before a response arrived. Only the exception type is named: no URLs or payloads."""
    kind = type(error).__name__
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return AgentUnreachable(f"cannot connect ({kind})", method=method)
    if isinstance(error, httpx.TimeoutException):
        return AgentTimeout(f"no answer ({kind})", method=method)
    if streaming:
        return StreamDropped(f"connection lost before the first event ({kind})", method=method)
    return AgentUnreachable(f"connection lost ({kind})", method=method, outcome_unknown=True)


def _task_id_of(event: StreamEvent) -> str | None:
    if isinstance(event, Task):
        return event.id
    if isinstance(event, Message):
        return event.task_id
    return event.task_id


def _context_id_of(event: StreamEvent) -> str | None:
    return event.context_id


def shared_transport() -> httpx.AsyncBaseTransport:
    """A transport for many clients of one event loop to share (its connections are the loop's): as
    many connections at once as they ask for, as when each had its own, through the egress proxy as
    ``egress`` picks it; the caller closes it."""
    return egress.RoutedTransport(
        verify=_tls_context(), limits=httpx.Limits(max_connections=None, max_keepalive_connections=100)
    )


@functools.cache
def _tls_context():
    """The TLS settings every agent client shares (httpx would load the CA bundle again per client)."""
    return httpx.create_ssl_context()
