"""Slack's door: POST /slack/events (and /slack/events/<connection>), Events API and interactivity on one URL.

A Channels consumer that kourier/http_routes.py serves ahead of Django: a Slack request needs none of
the admin's middleware, nor Django's thread per request. The request stays on the event loop; only a
listener's database work hops to a thread.

The door answers itself what it can tell from the request alone: 405 for another method, 413 for a
body over DATA_UPLOAD_MAX_MEMORY_SIZE (read no further), 400 for a body that is not UTF-8 (Slack's
signature helpers verify text), 401 when no Connection signed it (an unknown name in the path too),
503 when the Connection is not configured, and 400 for a signed body it cannot read (not JSON or
form data, not a payload Slack sends). Everything else is the answer of the Connection's Bolt app
(kourier/doors/slack_listeners.py).
"""

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from channels.exceptions import StopConsumer
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bindings import directory
from bindings.models import Connection, MissingSecret
from kourier import tracing
from kourier.bounded_post import BoundedPost
from kourier.slack.incoming import why_unreadable

from .slack_listeners import bolt_app_for

logger = logging.getLogger(__name__)

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

# What reading a body of unexpected shape raises in Bolt's parsing (JSON that is not an object, a
# nested field of another type, JSON nested deeper than Python recurses).
_UNREADABLE = (ValueError, TypeError, AttributeError, LookupError, RecursionError)


class SlackEvents(BoundedPost):
    """One Slack request: the Connection named in the path (``connection``), else the one that signed it."""

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        # Channels' own __call__ races the client's messages against a channel layer's in a task per
        # message; there is no channel layer here, and under load each of those tasks cost the event
        # loop extra turns, every one a GIL hand-over to the thread doing the listeners' database
        # work (docs/performance.md, "Channels at the door"). The messages are read in turn instead.
        self.scope = scope
        self.base_send = send
        try:
            while True:
                await self.dispatch(await receive())
        except StopConsumer:
            pass

    async def too_large(self) -> None:
        logger.warning("slack.request_refused", extra={"reason": "body over the size limit"})
        await super().too_large()

    async def handle(self, raw_body: bytes) -> None:
        try:
            body = raw_body.decode("utf-8")
        except UnicodeDecodeError:
            await self._unreadable("not UTF-8", connection_id=None)
            return
        name: str | None = self.scope["url_route"]["kwargs"].get("connection")
        headers = self.request_headers()
        try:
            connection = signed_by(await directory.acurrent(), name, body, headers)
        except MissingSecret as exc:
            # The operator's to fix, and said to them in the log; the request gets the answer an unknown
            # name gets, so that no one outside learns which names are Connections.
            logger.error("slack.connection_misconfigured", extra={"connection": name, "detail": str(exc)})
            connection = None
        if connection is None:
            # Unknown path, or a signature no Connection made: the same answer, so nothing is revealed.
            logger.warning("slack.request_refused", extra={"reason": "no connection verifies it"})
            await self.respond_json(401, {"error": "invalid request"})
            return
        try:
            app = bolt_app_for(connection)
        except MissingSecret as exc:
            await self._misconfigured(connection.name, exc)
            return
        request = read_request(body, headers, self.scope.get("query_string", b"").decode("latin-1"))
        if isinstance(request, str):
            await self._unreadable(request, connection_id=connection.pk)
            return
        # A turn's trace starts here: the turn this event stores keeps the span (kourier/tracing.py).
        with tracing.span("slack.event", attributes={"kourier.connection_id": connection.pk}):
            response = await app.async_dispatch(request)
        response_headers = [
            (key.encode("latin-1"), value.encode("latin-1"))
            for key, value in response.first_headers_without_set_cookie().items()
        ]
        await self.respond(response.status, response.body.encode("utf-8"), response_headers)

    async def _unreadable(self, reason: str, *, connection_id: int | None) -> None:
        logger.warning("slack.request_unreadable", extra={"reason": reason, "connection_id": connection_id})
        await self.respond_json(400, {"error": "unreadable request"})

    async def _misconfigured(self, connection_name: str | None, problem: MissingSecret) -> None:
        logger.error(
            "slack.connection_misconfigured", extra={"connection": connection_name, "detail": str(problem)}
        )
        await self.respond_json(503, {"error": "connection is not configured"})


def signed_by(
    connections: directory.Directory, name: str | None, body: str, headers: dict[str, str]
) -> Connection | None:
    """The Connection that signed the request: the one named in the path, else any whose secret verifies it.

    A named Connection whose signing secret is not set raises MissingSecret: the server's
    misconfiguration, logged for the operator; the request is refused as an unknown name's is.
    """
    if name is not None:
        named = connections.by_name.get(name)
        if named is not None and SignatureVerifier(named.signing_secret()).is_valid_request(body, headers):
            return named
        return None
    for connection in connections.connections:
        try:
            secret = connection.signing_secret()
        except MissingSecret:
            continue
        if SignatureVerifier(secret).is_valid_request(body, headers):
            return connection
    return None


def read_request(body: str, headers: dict[str, str], query: str) -> AsyncBoltRequest | str:
    """The request as Bolt reads it, or why it cannot be read."""
    bolt_headers: dict[str, str | Sequence[str]] = dict(headers)
    try:
        request = AsyncBoltRequest(body=body, query=query, headers=bolt_headers)
    except _UNREADABLE as exc:
        return f"Bolt cannot read it ({type(exc).__name__})"
    return why_unreadable(request.body) or request
