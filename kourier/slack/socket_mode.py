"""Socket Mode: a Connection's websockets to Slack, and the envelopes they carry handed to its Bolt app.

The protocol (docs/slack-platform.md §4.4): apps.connections.open with the app-level token gives a
one-time websocket URL; Slack greets with ``hello``; envelopes ``{"envelope_id", "type", "payload",
"accepts_response_payload", "retry_attempt", "retry_reason"}`` carry what the Events API and
interactivity would POST; the app acks by sending the envelope_id back within three seconds, else
Slack sends the envelope again; ``disconnect`` (refresh_requested, warning, ...) asks for a new
connection before Slack closes this one.

It is spoken here on aiohttp's websocket client rather than through slack_sdk's SocketModeClient
(which Bolt's AsyncSocketModeHandler wraps) because that client, for a service: builds its aiohttp
session in its constructor (outside a running loop the pinned aiohttp refuses); retries a refused
app token forever, logging a traceback each time; closes the old websocket before it opens the new
one; never acks a frame it cannot read, so Slack sends it again; and cannot stop taking envelopes
while it finishes the ones it holds. slack_sdk still calls apps.connections.open and Bolt still
dispatches each payload, with the listeners the HTTP door uses (kourier/doors/slack_listeners.py).

What a listener does decides the ack, as on HTTP: acked once Bolt answers 200 (the listeners store
before they return), not acked when it fails (Slack sends it again). An envelope that cannot be read
(not JSON, no envelope_id, a payload of the wrong shape) or of a type not used is acked at once,
logged once with why, and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kourier import egress, metrics

from .incoming import why_unreadable

logger = logging.getLogger(__name__)

ACK_DEADLINE_SECONDS = 3.0  # Slack's: an envelope not acked by then is sent again
HELLO_TIMEOUT_SECONDS = 10.0
HEARTBEAT_SECONDS = 10.0  # a websocket that stops answering pings this long is taken for dropped
HELD_SECONDS = 30.0  # a websocket that lasted this long resets the backoff
ENVELOPE_TYPES = ("events_api", "interactive", "slash_commands")
# apps.connections.open errors that another try will not mend: the token or the app is wrong.
REFUSALS = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "not_allowed_token_type",
        "missing_scope",
        "access_denied",
        "team_access_not_granted",
    }
)
_ENVELOPE_ID = re.compile(r'"envelope_id"\s*:\s*"([^"\\]{1,200})"')


class SocketModeRefused(Exception):
    """Slack refuses the app token: the process should stop and say so, not retry."""


# Reading frames (pure).


@dataclass(frozen=True)
class Envelope:
    envelope_id: str
    type: str
    payload: dict[str, Any]
    accepts_response_payload: bool
    retry_attempt: int | None
    retry_reason: str | None


@dataclass(frozen=True)
class Control:
    """hello or disconnect."""

    type: str
    reason: str = ""


@dataclass(frozen=True)
class Skipped:
    """An envelope not to dispatch: acked (when it has an id to ack) and logged with why."""

    envelope_id: str | None
    type: str
    reason: str
    outcome: str  # "unreadable" or "ignored"


def read_frame(text: str) -> Envelope | Control | Skipped:
    try:
        frame = json.loads(text)
    except ValueError:
        # A frame cut short still names its envelope: acked, Slack does not send it again.
        found = _ENVELOPE_ID.search(text)
        return Skipped(found.group(1) if found else None, "unknown", "not JSON", "unreadable")
    if not isinstance(frame, dict):
        return Skipped(None, "unknown", "not a JSON object", "unreadable")
    kind = frame.get("type")
    kind_name = kind[:40] if isinstance(kind, str) and kind else "unknown"
    if kind in ("hello", "disconnect"):
        reason = frame.get("reason")
        return Control(kind, reason[:40] if isinstance(reason, str) else "")
    envelope_id = frame.get("envelope_id")
    if not isinstance(envelope_id, str) or not envelope_id:
        return Skipped(None, kind_name, "no envelope_id", "unreadable")
    if kind not in ENVELOPE_TYPES:
        return Skipped(envelope_id, kind_name, f"envelope type not used: {kind_name}", "ignored")
    payload = frame.get("payload")
    problem = why_unreadable(payload)
    if problem is not None or not isinstance(payload, dict):
        return Skipped(envelope_id, kind_name, problem or "not a JSON object", "unreadable")
    retry_attempt = frame.get("retry_attempt")
    retry_reason = frame.get("retry_reason")
    return Envelope(
        envelope_id=envelope_id,
        type=kind_name,
        payload=payload,
        accepts_response_payload=frame.get("accepts_response_payload") is True,
        retry_attempt=retry_attempt if isinstance(retry_attempt, int) else None,
        retry_reason=retry_reason if isinstance(retry_reason, str) else None,
    )


def retry_headers(envelope: Envelope) -> dict[str, str | Sequence[str]]:
    """Slack's HTTP retry headers, so that listeners see a retry as they do over HTTP."""
    headers: dict[str, str | Sequence[str]] = {}
    if envelope.retry_attempt:
        headers["x-slack-retry-num"] = str(envelope.retry_attempt)
        headers["x-slack-retry-reason"] = envelope.retry_reason or ""
    return headers


def ack_message(envelope_id: str, response: BoltResponse | None, accepts_payload: bool) -> dict[str, Any]:
    ack: dict[str, Any] = {"envelope_id": envelope_id}
    if response is not None and accepts_payload and response.body:
        with contextlib.suppress(ValueError):
            ack["payload"] = json.loads(response.body)
    return ack


@dataclass(frozen=True)
class Backoff:
    """Exponential with jitter: first, first*factor, ... up to cap, each between half and all of it."""

    first: float = 1.0
    factor: float = 2.0
    cap: float = 60.0

    def delay(self, attempt: int) -> float:
        ceiling = min(self.cap, self.first * self.factor**attempt)
        return ceiling * random.uniform(0.5, 1.0)


# The connection.


class _Replace(Exception):
    """Slack asked for a new websocket (its disconnect message)."""


class SocketModeLink:
    """One Connection's Socket Mode: a websocket at a time (two while one is replaced), reopened with
    backoff when it closes, until ``stop()``; raises SocketModeRefused when Slack refuses the token."""

    def __init__(
        self,
        name: str,
        app: AsyncApp,
        app_token: str,
        web_client: AsyncWebClient,
        *,
        backoff: Backoff | None = None,
        heartbeat: float = HEARTBEAT_SECONDS,
    ) -> None:
        self.name = name
        self._app = app
        self._app_token = app_token
        self._web = web_client
        self._backoff = backoff or Backoff()
        self._heartbeat = heartbeat
        self._stopping = asyncio.Event()
        self._sockets: list[aiohttp.ClientWebSocketResponse] = []  # greeted and open, newest last
        self._leaving: set[aiohttp.ClientWebSocketResponse] = set()  # told to disconnect
        self._readers: set[asyncio.Task[None]] = set()
        self._handling: set[asyncio.Task[None]] = set()
        self.opened = 0  # websockets opened so far (for tests and logs)

    def stop(self) -> None:
        """Stop taking envelopes; run() then finishes the ones it holds, acks them, and returns."""
        self._stopping.set()

    async def run(self, grace: float = 20.0) -> None:
        async with aiohttp.ClientSession() as session:
            try:
                await self._keep_connected(session)
            finally:
                await self._finish(grace)

    async def _keep_connected(self, session: aiohttp.ClientSession) -> None:
        failures = 0
        reason = ""
        while not self._stopping.is_set():
            try:
                ws = await self._open(session)
            except SocketModeRefused:
                raise
            except Exception as exc:  # Slack or the network failing: try again, later each time
                delay = self._backoff.delay(failures)
                failures += 1
                logger.warning(
                    "slack.socket_connect_failed",
                    extra={"connection": self.name, "reason": _why(exc), "retry_in_seconds": round(delay, 1)},
                )
                await self._pause(delay)
                continue
            if reason:
                metrics.socket_reconnect(self.name, reason)
            opened_at = time.monotonic()
            reason = await self._serve(ws)
            if reason == "closed":
                failures = 0 if time.monotonic() - opened_at >= HELD_SECONDS else failures
                delay = self._backoff.delay(failures)
                failures += 1
                logger.info(
                    "slack.socket_closed",
                    extra={"connection": self.name, "retry_in_seconds": round(delay, 1)},
                )
                await self._pause(delay)
            elif reason != "stopped":
                failures = 0
                logger.info("slack.socket_replaced", extra={"connection": self.name, "reason": reason})

    async def _open(self, session: aiohttp.ClientSession) -> aiohttp.ClientWebSocketResponse:
        try:
            answer = await self._web.apps_connections_open(app_token=self._app_token)
        except SlackApiError as exc:
            error = str(exc.response.get("error", ""))
            if error in REFUSALS:
                raise SocketModeRefused(
                    f'Connection "{self.name}": Slack refused its app token ({error}); check the token '
                    "(xapp-, scope connections:write) and that Socket Mode is on for the app."
                ) from None
            raise
        # Through the egress proxy, as an HTTP upgrade of the link's http(s) twin: wss is tunnelled
        # (CONNECT) either way, and a proxy reads a plain ws:// request line as a bad scheme.
        url = egress.as_http(answer["url"])
        ws = await session.ws_connect(
            url, heartbeat=self._heartbeat, autoping=True, proxy=egress.proxy_for(url)
        )
        try:
            first = await ws.receive(timeout=HELLO_TIMEOUT_SECONDS)
        except Exception:
            await ws.close()
            raise
        greeting = read_frame(first.data) if first.type == aiohttp.WSMsgType.TEXT else None
        if greeting != Control("hello"):
            await ws.close()
            reason = greeting.reason if isinstance(greeting, Control) else "no hello"
            raise ConnectionError(f"not greeted: {reason or 'closed'}")
        self.opened += 1
        self._sockets.append(ws)
        metrics.sockets_connected(self.name, len(self._sockets))
        logger.info("slack.socket_connected", extra={"connection": self.name, "sockets": len(self._sockets)})
        return ws

    async def _serve(self, ws: aiohttp.ClientWebSocketResponse) -> str:
        """Reads the websocket until Slack asks for a new one (its reason: the old one is still read
        meanwhile, so nothing Slack sends on it is lost), it closes ("closed") or stop() ("stopped")."""
        replace: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        reader = asyncio.create_task(self._read(ws, replace))
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        stopping = asyncio.ensure_future(self._stopping.wait())
        waited: set[asyncio.Future[Any]] = {reader, replace, stopping}
        try:
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if self._stopping.is_set():
            return "stopped"
        if replace.done():
            return replace.result()
        return "closed"

    async def _read(self, ws: aiohttp.ClientWebSocketResponse, replace: asyncio.Future[str]) -> None:
        try:
            async for message in ws:
                if message.type == aiohttp.WSMsgType.TEXT:
                    self._take(ws, message.data, replace)
                elif message.type == aiohttp.WSMsgType.ERROR:
                    break
        finally:
            if ws in self._sockets:
                self._sockets.remove(ws)
            self._leaving.discard(ws)
            metrics.sockets_connected(self.name, len(self._sockets))

    def _take(self, ws: aiohttp.ClientWebSocketResponse, text: str, replace: asyncio.Future[str]) -> None:
        frame = read_frame(text)
        if isinstance(frame, Control):
            if frame.type == "disconnect":
                self._leaving.add(ws)
                if not replace.done():
                    replace.set_result(frame.reason or "disconnect")
            return
        if self._stopping.is_set():
            # Not acked: Slack sends it again, to a connection that is not going away.
            metrics.socket_envelope(self.name, frame.type, "handed_back")
            return
        received_at = time.monotonic()
        if isinstance(frame, Skipped):
            logger.warning(
                "slack.envelope_unreadable" if frame.outcome == "unreadable" else "slack.envelope_ignored",
                extra={"connection": self.name, "type": frame.type, "reason": frame.reason},
            )
            metrics.socket_envelope(self.name, frame.type, frame.outcome)
            if frame.envelope_id is not None:
                self._spawn(self._ack(ws, ack_message(frame.envelope_id, None, False), received_at))
            return
        self._spawn(self._handle(ws, frame, received_at))

    async def _handle(
        self, ws: aiohttp.ClientWebSocketResponse, envelope: Envelope, received_at: float
    ) -> None:
        request = AsyncBoltRequest(mode="socket_mode", body=envelope.payload, headers=retry_headers(envelope))
        try:
            response = await self._app.async_dispatch(request)
        except Exception as exc:  # Bolt answers a listener's failure with a 500; this is anything else
            response = BoltResponse(status=500, body=type(exc).__name__)
        if response.status == 404:  # no listener for this kind of payload: sending it again changes nothing
            logger.info(
                "slack.envelope_ignored",
                extra={"connection": self.name, "type": envelope.type, "reason": "no listener"},
            )
            metrics.socket_envelope(self.name, envelope.type, "ignored")
        elif response.status != 200:
            logger.warning(
                "slack.envelope_failed",
                extra={"connection": self.name, "type": envelope.type, "status": response.status},
            )
            metrics.socket_envelope(self.name, envelope.type, "failed")
            return  # not acked: Slack sends it again
        else:
            metrics.socket_envelope(self.name, envelope.type, "acked")
        ack = ack_message(envelope.envelope_id, response, envelope.accepts_response_payload)
        await self._ack(ws, ack, received_at)

    async def _ack(
        self, ws: aiohttp.ClientWebSocketResponse, ack: Mapping[str, Any], received_at: float
    ) -> None:
        # On a websocket Slack is not about to close (Slack takes an ack on any of the app's: the
        # SDKs ack on their newest), else on the one it came on: an ack sent while Slack closes a
        # websocket is lost, and the envelope sent again.
        staying = [socket for socket in reversed(self._sockets) if socket not in self._leaving]
        for socket in [*staying, ws]:
            if socket.closed:
                continue
            try:
                await socket.send_str(json.dumps(ack))
            except (ConnectionError, RuntimeError):
                continue
            if time.monotonic() - received_at > ACK_DEADLINE_SECONDS:
                metrics.socket_late_ack(self.name)
                logger.warning("slack.envelope_acked_late", extra={"connection": self.name})
            return
        logger.warning("slack.envelope_ack_lost", extra={"connection": self.name})

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _finish(self, grace: float) -> None:
        """Finish and ack the envelopes held, within ``grace`` seconds, then close the websockets."""
        self._stopping.set()
        if self._handling:
            await asyncio.wait(set(self._handling), timeout=grace)
        for task in set(self._handling):
            task.cancel()
        for ws in list(self._sockets):
            await ws.close()
        for reader in set(self._readers):
            reader.cancel()
        self._sockets.clear()
        metrics.sockets_connected(self.name, 0)


def _why(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", "slack_error"))
    return type(exc).__name__
