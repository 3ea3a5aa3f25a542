"""Socket Mode: Slack's websocket to an app, as docs/slack-platform.md §4.4 and Slack's Socket Mode pages
describe it.

- ``apps.connections.open`` (app-level token in the Authorization header) hands out a one-time
  ``ws://`` URL with a ticket; connecting with it gets ``{"type": "hello", ...}``.
- Envelopes: ``{"envelope_id", "type": "events_api" | "interactive" | "slash_commands", "payload", "accepts_response_payload",
  "retry_attempt", "retry_reason"}``; the payload is what the HTTP request's body would be.
- The app acks by sending ``{"envelope_id": ...}`` back (with a ``payload`` when the envelope accepts
  one) within three seconds. An Events API envelope not acked in time is sent again in a new envelope
  with ``retry_attempt`` 1..3 and ``retry_reason`` "timeout", on Slack's schedule (``retry_delays``:
  nearly at once, ~1 min, ~5 min; tests shorten it). Interactive payloads are never retried.
- An app may hold up to ten connections; envelopes are spread over the open ones in turn. An
  eleventh is told ``disconnect`` with ``too_many_websockets`` and closed.
- ``disconnect`` with ``refresh_requested`` or ``warning`` tells the app to open a new connection
  before the server closes this one (``close_after`` seconds later); meanwhile the connection gets no
  new envelopes while another is open. A connection can also be dropped without a word.

Not in Slack's pages, so chosen here and said so: an ack counts on any of the app's connections (an
SDK that replaced its connection acks on the new one), and retry envelopes get a new envelope_id
while their payload (and event_id) stay the same.

The server is aiohttp's (already a dependency: slack_sdk's async client needs it), on its own event
loop in a thread; the test's thread talks to it through thread-safe calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import secrets
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from aiohttp import WSMsgType, web

from .delivery import ACK_TIMEOUT, Delivery, Outgoing

MAX_CONNECTIONS_PER_APP = 10
DEFAULT_RETRY_DELAYS = (0.0, 60.0, 300.0)  # as for HTTP deliveries (docs/slack-platform.md §4.2)
DISCONNECT_REASONS = ("refresh_requested", "warning", "link_disabled", "too_many_websockets")


@dataclass
class SocketEnvelope:
    """One envelope the fake sent over a socket, and what became of it (times are time.monotonic())."""

    envelope_id: str
    type: str  # "events_api" or "interactive", or "raw" for a frame a test sent as is
    kind: str  # as Delivery.kind: the event type, "block_actions", ...
    payload: Any  # a dict from Slack; anything in a bad-input test's envelope
    team_id: str | None
    app_id: str
    connection: int | None  # the connection it went out on; None when none was open
    retry_attempt: int = 0
    retry_reason: str = ""
    accepts_response_payload: bool = False
    sent_at: float = 0.0
    acked_at: float | None = None
    ack_connection: int | None = None
    ack_payload: dict[str, Any] | None = None
    frame: str = ""
    delivery: Delivery | None = None  # its entry in SlackFake.deliveries(), once acked or timed out
    done: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def ack_delay(self) -> float | None:
        return None if self.acked_at is None else self.acked_at - self.sent_at

    @property
    def acked_in_time(self) -> bool:
        return self.ack_delay is not None and self.ack_delay <= ACK_TIMEOUT

    @property
    def event_id(self) -> str | None:
        return self.payload.get("event_id") if isinstance(self.payload, dict) else None


@dataclass
class SocketConnection:
    id: int
    app_id: str
    team_id: str
    ws: web.WebSocketResponse
    opened_at: float
    draining: bool = False
    closed_at: float | None = None
    close_reason: str = ""


class SocketModeServer:
    """The websocket side of the fake. ``on_changed`` is called after anything a test may wait for."""

    def __init__(
        self,
        on_changed: Callable[[], None],
        on_delivered: Callable[[Delivery], None],
        *,
        ack_timeout: float = ACK_TIMEOUT,
        retry_delays: tuple[float, ...] = DEFAULT_RETRY_DELAYS,
        public_host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.ack_timeout = ack_timeout
        self.public_host = public_host  # the name its links give (Slack's: wss-primary.slack.com)
        self._tls = tls  # wss, as Slack's links are, when set
        self.retry_delays = retry_delays
        self._on_changed = on_changed
        self._on_delivered = on_delivered
        self._lock = threading.Lock()
        self._tickets: dict[str, tuple[str, str]] = {}  # ticket -> (team_id, app_id)
        self._connections: dict[int, SocketConnection] = {}
        self._envelopes: dict[str, SocketEnvelope] = {}
        self._connection_ids = itertools.count(1)
        self._turn = itertools.count()
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._tasks: set[asyncio.Future[Any]] = set()
        self._ack_signals: dict[str, asyncio.Event] = {}  # on the loop: envelope_id -> set when acked
        self.refused_frames: list[str] = []  # what the app sent that is not an ack of a known envelope

    # Lifecycle.

    def start(self) -> None:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="slack-fake-socket", daemon=True
        )
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the Socket Mode server did not start")

    def stop(self) -> None:
        if self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None

    @property
    def port(self) -> int:
        return self._port

    # What apps.connections.open does.

    def issue_url(self, team_id: str, app_id: str) -> str:
        ticket = secrets.token_urlsafe(16)
        with self._lock:
            self._tickets[ticket] = (team_id, app_id)
        scheme = "wss" if self._tls is not None else "ws"
        return f"{scheme}://{self.public_host}:{self._port}/link/?ticket={ticket}&app_id={app_id}"

    # Sending.

    def send(self, outgoing: Outgoing, app_id: str, *, wait: bool = True) -> SocketEnvelope:
        """Sends an HTTP-shaped request as an envelope; waits (with ``wait``) for its ack or the timeout."""
        envelope = self._envelope_for(outgoing, app_id)
        self._call(self._send_envelope(envelope))
        if wait:
            envelope.done.wait(self.ack_timeout + 1)
        return envelope

    def send_envelope(
        self, envelope_type: str, payload: Any, kind: str, team_id: str, app_id: str
    ) -> SocketEnvelope:
        envelope = SocketEnvelope(str(uuid.uuid4()), envelope_type, kind, payload, team_id, app_id, None)
        self._call(self._send_envelope(envelope))
        envelope.done.wait(self.ack_timeout + 1)
        return envelope

    def send_raw(self, frame: str, app_id: str, connection: int | None = None) -> None:
        """Sends any text frame (for the app's bad-input tests)."""
        self._call(self._send_frame(app_id, frame, connection))

    def resend(self, envelope: SocketEnvelope, *, retry_attempt: int, reason: str) -> SocketEnvelope:
        """The same payload again in a new envelope, as Slack's retry of an unacked one."""
        again = self._copy(envelope, retry_attempt, reason)
        self._call(self._send_envelope(again))
        again.done.wait(self.ack_timeout + 1)
        return again

    def disconnect(self, reason: str, connection: int | None, close_after: float) -> list[int]:
        if reason not in DISCONNECT_REASONS:
            raise ValueError(f"Slack's disconnect reasons are {DISCONNECT_REASONS}")
        return self._call(self._disconnect(reason, connection, close_after)).result(10)

    def drop(self, connection: int | None) -> list[int]:
        """Closes connections without a disconnect message or a close frame, as a network failure does."""
        return self._call(self._drop(connection)).result(10)

    def close_app(self, app_id: str) -> None:
        for connection in self.connections(app_id):
            self._call(self._close(connection, "token revoked"))

    # The record.

    def envelopes(self) -> list[SocketEnvelope]:
        with self._lock:
            return list(self._envelopes.values())

    def connections(self, app_id: str | None = None, *, open_only: bool = True) -> list[SocketConnection]:
        with self._lock:
            return [
                c
                for c in self._connections.values()
                if (app_id is None or c.app_id == app_id) and (not open_only or c.closed_at is None)
            ]

    def all_connections(self) -> list[SocketConnection]:
        with self._lock:
            return list(self._connections.values())

    # Internals (on the server's loop unless said otherwise).

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_get("/link/", self._accept)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._tls)
        self._loop.run_until_complete(site.start())
        self._port = self._runner.addresses[0][1]
        ready.set()
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for connection in self.connections():
            with contextlib.suppress(Exception):
                await connection.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _accept(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        with self._lock:
            issued = self._tickets.pop(ticket, None)  # a URL is good for one connection
        if issued is None:
            return web.Response(status=401, text="invalid ticket")
        team_id, app_id = issued
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._lock:
            connection = SocketConnection(next(self._connection_ids), app_id, team_id, ws, time.monotonic())
            self._connections[connection.id] = connection
            count = len([c for c in self._connections.values() if c.app_id == app_id and c.closed_at is None])
        if count > MAX_CONNECTIONS_PER_APP:
            await ws.send_str(json.dumps({"type": "disconnect", "reason": "too_many_websockets"}))
            await self._close(connection, "too_many_websockets")
            return ws
        await ws.send_str(json.dumps(_hello(connection, count)))
        self._on_changed()
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._take_frame(connection, message.data)
        finally:
            self._closed(connection, connection.close_reason or "closed by the app")
        return ws

    def _take_frame(self, connection: SocketConnection, data: str) -> None:
        try:
            ack = json.loads(data)
        except ValueError:
            ack = None
        envelope_id = ack.get("envelope_id") if isinstance(ack, dict) else None
        with self._lock:
            envelope = self._envelopes.get(envelope_id) if isinstance(envelope_id, str) else None
            if envelope is None or envelope.app_id != connection.app_id:
                self.refused_frames.append(data)
                return
            if envelope.acked_at is not None:
                return  # a second ack of one envelope changes nothing
            envelope.acked_at = time.monotonic()
            envelope.ack_connection = connection.id
            payload = ack.get("payload")
            envelope.ack_payload = payload if isinstance(payload, dict) else None
        signal = self._ack_signals.get(envelope.envelope_id)
        if signal is not None:
            signal.set()
        if envelope.acked_in_time:  # a late one was recorded as a timeout already
            self._record(envelope)
        self._on_changed()

    def _closed(self, connection: SocketConnection, reason: str) -> None:
        with self._lock:
            if connection.closed_at is None:
                connection.closed_at = time.monotonic()
                connection.close_reason = reason
        self._on_changed()

    def _envelope_for(self, outgoing: Outgoing, app_id: str) -> SocketEnvelope:
        form = (
            parse_qs(outgoing.body.decode(), keep_blank_values=True)
            if outgoing.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded")
            else None
        )
        if form is not None and "payload" not in form:  # a slash command: its fields are the payload
            payload, kind, accepts = {key: values[0] for key, values in form.items()}, "slash_commands", True
        elif form is not None:
            payload = json.loads(form["payload"][0])
            kind, accepts = "interactive", payload.get("type") in ("view_submission", "block_suggestion")
        else:
            payload, kind, accepts = json.loads(outgoing.body), "events_api", False
        return SocketEnvelope(
            envelope_id=str(uuid.uuid4()),
            type=kind,
            kind=outgoing.kind,
            payload=payload,
            team_id=outgoing.team_id,
            app_id=app_id,
            connection=None,
            accepts_response_payload=accepts,
        )

    def _copy(self, envelope: SocketEnvelope, retry_attempt: int, reason: str) -> SocketEnvelope:
        return SocketEnvelope(
            envelope_id=str(uuid.uuid4()),
            type=envelope.type,
            kind=envelope.kind,
            payload=envelope.payload,
            team_id=envelope.team_id,
            app_id=envelope.app_id,
            connection=None,
            retry_attempt=retry_attempt,
            retry_reason=reason,
            accepts_response_payload=envelope.accepts_response_payload,
        )

    def _pick(self, app_id: str) -> SocketConnection | None:
        """The next open connection in turn, one not being drained when there is one."""
        with self._lock:
            open_ = [c for c in self._connections.values() if c.app_id == app_id and c.closed_at is None]
        if not open_:
            return None
        preferred = [c for c in open_ if not c.draining] or open_
        return preferred[next(self._turn) % len(preferred)]

    async def _send_envelope(self, envelope: SocketEnvelope) -> None:
        frame = json.dumps(
            {
                "envelope_id": envelope.envelope_id,
                "type": envelope.type,
                "payload": envelope.payload,
                "accepts_response_payload": envelope.accepts_response_payload,
                "retry_attempt": envelope.retry_attempt,
                "retry_reason": envelope.retry_reason,
            }
        )
        envelope.frame = frame
        connection = self._pick(envelope.app_id)
        envelope.connection = connection.id if connection else None
        envelope.sent_at = time.monotonic()
        acked = self._ack_signals[envelope.envelope_id] = asyncio.Event()
        with self._lock:
            self._envelopes[envelope.envelope_id] = envelope
        if connection is not None:
            # Into a closing socket it is lost: not acked, so Slack sends it again.
            with contextlib.suppress(ConnectionError, RuntimeError):
                await connection.ws.send_str(frame)
        self._spawn(self._await_ack(envelope, acked))

    async def _await_ack(self, envelope: SocketEnvelope, acked: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(acked.wait(), self.ack_timeout)
        self._ack_signals.pop(envelope.envelope_id, None)
        if envelope.acked_in_time:
            return
        self._record(envelope)
        if envelope.type != "events_api":
            return
        if envelope.retry_attempt >= len(self.retry_delays):
            return
        await asyncio.sleep(self.retry_delays[envelope.retry_attempt])
        await self._send_envelope(self._copy(envelope, envelope.retry_attempt + 1, "timeout"))

    def _record(self, envelope: SocketEnvelope) -> None:
        envelope.delivery = Delivery(
            kind=envelope.kind,
            url=f"socket:{envelope.connection}",
            body=json.dumps(envelope.payload).encode(),  # what the HTTP request's body would be
            headers={"Content-Type": "application/json"},
            status=200 if envelope.acked_in_time else None,
            response_body=json.dumps(envelope.ack_payload or {}).encode(),
            elapsed=envelope.ack_delay if envelope.ack_delay is not None else self.ack_timeout,
            error=None if envelope.acked_in_time else "timeout",
            event_id=envelope.event_id,
            retry_num=envelope.retry_attempt,
            team_id=envelope.team_id,
            envelope_id=envelope.envelope_id,
        )
        self._on_delivered(envelope.delivery)
        envelope.done.set()

    async def _send_frame(self, app_id: str, frame: str, connection_id: int | None) -> None:
        connection = self._connections.get(connection_id) if connection_id else self._pick(app_id)
        if connection is None:
            raise RuntimeError(f"no open connection of app {app_id}")
        await connection.ws.send_str(frame)

    def _targets(self, connection_id: int | None) -> list[SocketConnection]:
        if connection_id is None:
            return self.connections()
        return [c for c in self.connections() if c.id == connection_id]

    async def _disconnect(self, reason: str, connection_id: int | None, close_after: float) -> list[int]:
        targets = self._targets(connection_id)
        for connection in targets:
            connection.draining = True
            with contextlib.suppress(ConnectionError, RuntimeError):
                await connection.ws.send_str(
                    json.dumps(
                        {"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-fake"}}
                    )
                )
            self._spawn(self._close_later(connection, reason, close_after))
        return [c.id for c in targets]

    async def _close_later(self, connection: SocketConnection, reason: str, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._close(connection, reason)

    async def _close(self, connection: SocketConnection, reason: str) -> None:
        connection.close_reason = reason
        with contextlib.suppress(Exception):
            await connection.ws.close()
        self._closed(connection, reason)

    async def _drop(self, connection_id: int | None) -> list[int]:
        targets = self._targets(connection_id)
        for connection in targets:
            connection.close_reason = "dropped"
            transport = connection.ws._req.transport if connection.ws._req is not None else None
            if transport is not None:
                transport.abort()
            self._closed(connection, "dropped")
        return [c.id for c in targets]

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _hello(connection: SocketConnection, num_connections: int) -> dict[str, Any]:
    return {
        "type": "hello",
        "num_connections": num_connections,
        "debug_info": {
            "host": f"applink-fake-{connection.id}",
            "build_number": 1,
            "approximate_connection_time": 18060,
        },
        "connection_info": {"app_id": connection.app_id},
    }
