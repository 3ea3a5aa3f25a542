"""An in-process A2A endpoint for the client's unit tests (httpx.MockTransport).

Each JSON-RPC method gets a scripted reply: a stream of SSE events, a plain JSON body, an HTTP status,
or a transport failure. Replies are built per request, so the JSON-RPC id echoes the request's.
Every request is recorded (method, headers, params) for assertions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

AGENT_URL = "http://agent.test/a2a/"
CARD_URL = AGENT_URL + ".well-known/agent-card.json"

CARD_V10 = {
    "name": "stub",
    "supportedInterfaces": [{"url": AGENT_URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
    "capabilities": {"streaming": True, "extensions": [{"uri": "https://kagent.dev/extensions/hitl/v1"}]},
}
CARD_V03 = {"name": "stub", "protocolVersion": "0.3.0", "url": AGENT_URL, "preferredTransport": "JSONRPC"}

Reply = Callable[[dict[str, Any]], httpx.Response]


@dataclass
class Recorded:
    method: str  # the JSON-RPC method, or "GET card"
    headers: httpx.Headers
    body: dict[str, Any] | None

    @property
    def params(self) -> dict[str, Any]:
        return (self.body or {}).get("params", {})


@dataclass
class WireStub:
    card: dict[str, Any] | None = field(default_factory=lambda: CARD_V10)
    requests: list[Recorded] = field(default_factory=list)
    replies: dict[str, list[Reply]] = field(default_factory=dict)
    responses: list[httpx.Response] = field(default_factory=list)  # as handed to the client

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def on(self, method: str, reply: Reply) -> None:
        """Answer the next call of ``method`` with ``reply`` (queued: one reply per call)."""
        self.replies.setdefault(method, []).append(reply)

    def calls(self, method: str) -> list[Recorded]:
        return [request for request in self.requests if request.method == method]

    async def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.requests.append(Recorded("GET card", request.headers, None))
            if str(request.url) != CARD_URL or self.card is None:
                return httpx.Response(404)
            return httpx.Response(200, json=self.card)
        body = json.loads(request.content)
        self.requests.append(Recorded(body["method"], request.headers, body))
        queue = self.replies.get(body["method"])
        if not queue:
            return httpx.Response(200, json=error_body(body["id"], -32601, "Method not found"))
        response = queue.pop(0)(body)
        self.responses.append(response)
        return response

    # -- replies ------------------------------------------------------------------------------------

    def stream(self, *results: Any, then: BaseException | None = None, hang: bool = False) -> Reply:
        """An SSE stream of JSON-RPC results; then ``then`` is raised, or the stream hangs, or it closes."""

        def reply(body: dict[str, Any]) -> httpx.Response:
            return sse_response([result_body(body["id"], result) for result in results], then=then, hang=hang)

        return reply

    def stream_bodies(self, *bodies: Callable[[Any], Any], then: BaseException | None = None) -> Reply:
        """An SSE stream of arbitrary JSON-RPC bodies, each built from the request id."""

        def reply(body: dict[str, Any]) -> httpx.Response:
            return sse_response([make(body["id"]) for make in bodies], then=then)

        return reply

    @staticmethod
    def result(result: Any) -> Reply:
        return lambda body: httpx.Response(200, json=result_body(body["id"], result))

    @staticmethod
    def error(
        code: int, message: str = "error text from the agent", data: Any = None, status: int = 200
    ) -> Reply:
        return lambda body: httpx.Response(status, json=error_body(body["id"], code, message, data))

    @staticmethod
    def status(status: int, headers: dict[str, str] | None = None, content: bytes = b"") -> Reply:
        return lambda body: httpx.Response(status, headers=headers, content=content)

    @staticmethod
    def raw(content: bytes, content_type: str = "application/json") -> Reply:
        return lambda body: httpx.Response(200, headers={"content-type": content_type}, content=content)

    @staticmethod
    def fail(error: BaseException) -> Reply:
        def reply(body: dict[str, Any]) -> httpx.Response:
            raise error

        return reply


def result_body(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_body(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def sse_frames(bodies: list[Any]) -> list[bytes]:
    return [f"data: {json.dumps(body)}\n\n".encode() for body in bodies]


def sse_response(
    bodies: list[Any],
    *,
    then: BaseException | None = None,
    hang: bool = False,
    frames: list[bytes] | None = None,
) -> httpx.Response:
    async def content() -> AsyncIterator[bytes]:
        for frame in frames if frames is not None else sse_frames(bodies):
            yield frame
        if then is not None:
            raise then
        if hang:
            await asyncio.Event().wait()  # a server that keeps the stream open and says nothing

    return httpx.Response(
        200, headers={"content-type": "text/event-stream; charset=utf-8"}, content=content()
    )
