"""A stand-in for kagent's controller: it serves agents by namespace and name, at the address each line uses.

kagent's controller serves every agent of a cluster below one URL (docs/kagent-dialect.md, "The
controller"; kagent's controller source): kagent 1.0 at ``/agents/<namespace>/<name>`` and kagent 0.10 at
``/api/a2a/<namespace>/<name>/``, the agent card at ``.well-known/agent-card.json`` below each. This
fake passes what arrives at an agent's address to the agent's own server (a real runtime or the
scripted agent), streams included, and answers 404 for any name it was not given. ``serve_card``
puts a fixed card (or any bytes) at an address instead, for the cards neither line serves.

    controller = KagentController()
    controller.add("1.0", "ops", "k8s-agent", runtime.url)    # POST /agents/ops/k8s-agent -> runtime /
    controller.add("0.10", "ops", "old-agent", other.url)     # POST /api/a2a/ops/old-agent/ -> other /
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.a2a_agent.server import ServerThread, listening_socket

PREFIXES = {"1.0": "/agents/{namespace}/{name}", "0.10": "/api/a2a/{namespace}/{name}"}
FEEDBACK_PATH = "/api/feedback"
# kagent's database.Feedback, as its JSON decoder takes it (a wrong type is a 400).
FEEDBACK_FIELDS: dict[str, type | tuple[type, ...]] = {
    "is_positive": bool, "feedback_text": str, "issue_type": str, "message_id": int, "user_id": str,
}  # fmt: skip
PASSED_HEADERS = ("content-type", "a2a-version", "a2a-extensions", "authorization", "x-user-id", "accept")


class KagentController:
    def __init__(self) -> None:
        self._agents: dict[str, str] = {}  # address prefix -> upstream URL
        self._cards: dict[str, bytes] = {}  # card path -> body
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (method, path, identity headers)
        # POST /api/feedback bodies taken, with the user they came as: (X-User-Id, body)
        self.feedback: list[tuple[str, dict[str, Any]]] = []
        self.feedback_status: int | None = None  # answer every feedback POST with this status instead
        sock = listening_socket()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._server = ServerThread(_asgi3(self._app), sock, name="kagent-controller")
        self._server.start()

    def add(self, line: str, namespace: str, name: str, upstream: str) -> str:
        """Serves the agent at ``upstream`` at its line's address; returns that address as kagent writes it."""
        prefix = PREFIXES[line].format(namespace=namespace, name=name)
        self._agents[prefix] = upstream.rstrip("/")
        return self.url + prefix + ("/" if line == "0.10" else "")

    def serve_card(self, line: str, namespace: str, name: str, body: bytes) -> None:
        prefix = PREFIXES[line].format(namespace=namespace, name=name)
        self._cards[prefix + "/.well-known/agent-card.json"] = body

    async def _take_feedback(self, headers: dict[str, str], raw: bytes, send: Any) -> None:
        """kagent's HandleCreateFeedback: the body read into its database.Feedback (message_id a
        number), feedback_text required, the user from the request; one row per POST."""
        if self.feedback_status is not None:
            await _answer(send, self.feedback_status, b'{"error": true}', b"application/json")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        well_typed = isinstance(body, dict) and all(
            isinstance(body.get(key), kind) for key, kind in FEEDBACK_FIELDS.items() if key in body
        )
        if not well_typed:
            await _answer(
                send, 400, b'{"error": true, "message": "Invalid feedback data format"}', b"application/json"
            )
            return
        if not body.get("feedback_text"):
            await _answer(
                send,
                400,
                b'{"error": true, "message": "Missing required field: feedbackText"}',
                b"application/json",
            )
            return
        self.feedback.append((headers.get("x-user-id", ""), body))
        await _answer(
            send,
            200,
            b'{"error": false, "data": {}, "message": "Feedback submitted successfully"}',
            b"application/json",
        )

    def stop(self) -> None:
        self._server.stop()

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        path = scope["path"]
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
            if name.decode("latin-1").lower() in PASSED_HEADERS
        }
        self.requests.append((scope["method"], path, headers))
        if path == FEEDBACK_PATH and scope["method"] == "POST":
            await self._take_feedback(headers, await _body(receive), send)
            return
        if path in self._cards:
            await _answer(send, 200, self._cards[path], b"application/json")
            return
        upstream = next(
            (
                url + (path[len(prefix) :] or "/")
                for prefix, url in self._agents.items()
                if path.startswith(prefix)
            ),
            None,
        )
        if upstream is None:
            await _answer(send, 404, b'{"error": "agent not found"}', b"application/json")
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(120.0)) as client,
            client.stream(scope["method"], upstream, content=body or None, headers=headers) as answer,
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": answer.status_code,
                    "headers": [(b"content-type", answer.headers.get("content-type", "").encode())],
                }
            )
            async for chunk in answer.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})


async def _body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _answer(send: Any, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]}
    )
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def kagent_controller() -> Iterator[KagentController]:
    controller = KagentController()
    yield controller
    controller.stop()


def _asgi3(handle: Any) -> Any:
    """A plain coroutine function around a bound method: uvicorn takes a bound method for ASGI 2."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await handle(scope, receive, send)

    return app
