"""POST /slack/events (and /slack/events/<connection>): Events API and interactivity on one URL.

A plain ASGI app that kourier/asgi.py serves ahead of Django: a Slack request needs none of the
admin's middleware, nor Django's thread per request. The request stays on the event loop; only a
listener's database work hops to a thread.
"""

import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from django.conf import settings
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bindings import directory
from bindings.models import Connection, MissingSecret

from .app import bolt_app_for

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

# The connection part is a slug, as Django's <slug:> converter took it.
SLACK_EVENTS_PATH = re.compile(r"/slack/events(?:/(?P<connection>[-a-zA-Z0-9_]+))?")


def serve_slack_events_ahead_of(app: ASGIApp) -> ASGIApp:
    """An ASGI app that answers the Slack events paths itself and hands every other request to ``app``."""

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        match = SLACK_EVENTS_PATH.fullmatch(scope["path"]) if scope["type"] == "http" else None
        if match is None:
            await app(scope, receive, send)
        else:
            await slack_events(scope, receive, send, connection_name=match["connection"])

    return route


def find_connection(
    connections: directory.Directory, name: str | None, body: bytes, headers: dict[str, str]
) -> Connection | None:
    """The Connection a request is for: named in the path, else the one whose signing secret signed it."""
    if name is not None:
        return connections.by_name.get(name)
    for connection in connections.connections:
        try:
            secret = connection.signing_secret()
        except MissingSecret:
            continue
        if SignatureVerifier(secret).is_valid_request(body, headers):
            return connection
    return None


async def slack_events(scope: Scope, receive: Receive, send: Send, *, connection_name: str | None) -> None:
    if scope["method"] != "POST":
        await _respond(send, 405, b"", extra_headers=[(b"allow", b"POST")])
        return
    body = await _read_body(receive)
    if body is None:
        await _respond_json(send, 413, {"error": "request too large"})
        return
    headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
    connection = find_connection(await directory.acurrent(), connection_name, body, headers)
    if connection is None:
        # Unknown path, or a signature no Connection made: the same answer, so nothing is revealed.
        logger.warning("slack.request_refused", extra={"reason": "no connection verifies it"})
        await _respond_json(send, 401, {"error": "invalid request"})
        return
    try:
        app = bolt_app_for(connection)
    except MissingSecret as exc:
        logger.error(
            "slack.connection_misconfigured", extra={"connection": connection.name, "detail": str(exc)}
        )
        await _respond_json(send, 503, {"error": "connection is not configured"})
        return
    bolt_headers: dict[str, str | Sequence[str]] = dict(headers)
    bolt_request = AsyncBoltRequest(
        body=body.decode("utf-8"),
        query=scope.get("query_string", b"").decode("latin-1"),
        headers=bolt_headers,
    )
    bolt_response = await app.async_dispatch(bolt_request)
    response_headers = [
        (key.encode("latin-1"), value.encode("latin-1"))
        for key, value in bolt_response.first_headers_without_set_cookie().items()
    ]
    await _respond(send, bolt_response.status, bolt_response.body.encode("utf-8"), response_headers)


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body, or None when it is larger than Django would take (DATA_UPLOAD_MAX_MEMORY_SIZE)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _respond_json(send: Send, status: int, content: dict[str, str]) -> None:
    await _respond(send, status, json.dumps(content).encode(), [(b"content-type", b"application/json")])


async def _respond(
    send: Send, status: int, body: bytes, extra_headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    headers = [(b"content-length", str(len(body)).encode()), *extra_headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
