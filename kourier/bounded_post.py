"""A door's request, read on the event loop: POST only, and no more body than Django would take.

Slack's door (kourier/doors/slack.py) and the alerts' door (kourier/doors/alerts.py) are Channels consumers
served ahead of Django. Both answer 405 for another method and stop reading a body past
DATA_UPLOAD_MAX_MEMORY_SIZE (each says 413 in its own words), then hand the whole body to ``handle``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from channels.exceptions import StopConsumer
from channels.generic.http import AsyncHttpConsumer
from django.conf import settings


class BoundedPost(AsyncHttpConsumer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.body_size = 0

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels' dispatch first closes the database connections past their age, on the one thread
        # that also does the doors' database work, for every message: each request would queue behind
        # that thread. The doors' database calls reset a broken connection themselves
        # (kourier/db.in_database_thread).
        if message["type"] == "http.request":
            await self.http_request(message)
        elif message["type"] == "http.disconnect":
            raise StopConsumer()

    async def http_request(self, message: dict[str, Any]) -> None:
        """Reads the body as it arrives, up to the limit: a larger one is refused, not held in memory."""
        if self.scope["method"] != "POST":
            await self.respond(405, b"", [(b"allow", b"POST")])
            raise StopConsumer()
        chunk = message.get("body", b"")
        self.body_size += len(chunk)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and self.body_size > limit:
            self.body.clear()
            await self.too_large()
            raise StopConsumer()
        self.body.append(chunk)
        if not message.get("more_body", False):
            await self.handle(b"".join(self.body))
            raise StopConsumer()

    async def too_large(self) -> None:
        """Answers a body over the limit; a door that logs or words it its own way overrides this."""
        await self.respond_json(413, {"error": "request too large"})

    def request_headers(self) -> dict[str, str]:
        """The request's headers, names in lower case (HTTP's are latin-1)."""
        return {
            key.decode("latin-1").lower(): value.decode("latin-1") for key, value in self.scope["headers"]
        }

    async def respond_json(self, status: int, content: dict[str, Any]) -> None:
        await self.respond(status, json.dumps(content).encode(), [(b"content-type", b"application/json")])

    async def respond(self, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]]) -> None:
        await self.send_response(
            status, body, headers=[(b"content-length", str(len(body)).encode()), *headers]
        )
