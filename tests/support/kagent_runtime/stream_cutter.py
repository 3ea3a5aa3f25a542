"""A proxy in front of a kagent runtime that drops the first stream after the run ended.

The product talks to the proxy; the proxy passes every request to the runtime and every answer back,
except the first streamed answer (``message/stream`` / ``SendStreamingMessage``): of that one it reads
the runtime's whole stream (the run ends), passes on every event but the last, and then cuts the
connection, as a load balancer that drops a long stream does. What the product does next (look the
task up, subscribe, poll) goes to the runtime as it is, and the proxy notes each JSON-RPC method and
the error code the runtime answered, if any.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from tests.fakes.a2a_agent.server import ServerThread, listening_socket
from tests.fakes.a2a_agent.wire import ConnectionCut, install_log_filter

STREAMING_METHODS = ("message/stream", "SendStreamingMessage")
PASSED_HEADERS = ("content-type", "a2a-version", "a2a-extensions", "authorization", "x-user-id", "accept")


@dataclass(frozen=True)
class Exchange:
    method: str
    error_code: int | None  # the JSON-RPC error the runtime answered (a plain JSON answer), else None


class StreamCutter:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self.cut_done = False
        sock = listening_socket()
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        install_log_filter()
        self._server = ServerThread(_asgi3(self._app), sock, name="kagent-stream-cutter")
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    def methods(self) -> list[str]:
        """The JSON-RPC methods the product called, in order (card reads left out)."""
        return [exchange.method for exchange in self.exchanges if exchange.method]

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope["headers"]
            if name.decode("latin-1").lower() in PASSED_HEADERS
        }
        method = _method_of(body)
        url = self.upstream + scope["path"]
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(120.0)) as client,
            client.stream(scope["method"], url, content=body, headers=headers) as answer,
        ):
            streamed = answer.headers.get("content-type", "").startswith("text/event-stream")
            if streamed and method in STREAMING_METHODS and not self.cut_done:
                self.cut_done = True
                self.exchanges.append(Exchange(method, None))
                await self._pass_all_but_the_last_event(answer, send)
                raise ConnectionCut("the first stream, after the run ended")
            payload = b"" if streamed else await answer.aread()
            await send(
                {
                    "type": "http.response.start",
                    "status": answer.status_code,
                    "headers": [
                        (b"content-type", answer.headers.get("content-type", "application/json").encode())
                    ],
                }
            )
            if streamed:
                async for chunk in answer.aiter_raw():
                    payload += chunk
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            else:
                await send({"type": "http.response.body", "body": payload})
            self.exchanges.append(Exchange(method, _error_code(payload, streamed=streamed)))

    async def _pass_all_but_the_last_event(self, answer: httpx.Response, send: Any) -> None:
        text = (await answer.aread()).decode()
        events = [event for event in text.replace("\r\n", "\n").split("\n\n") if event.strip()]
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for event in events[:-1]:
            await send({"type": "http.response.body", "body": (event + "\n\n").encode(), "more_body": True})


def _method_of(body: bytes) -> str:
    try:
        request = json.loads(body)
    except ValueError:
        return ""
    return str(request.get("method", "")) if isinstance(request, dict) else ""


def _error_code(payload: bytes, *, streamed: bool) -> int | None:
    """The JSON-RPC error code of a plain answer, or of the first SSE event that is an error."""
    texts = [payload.decode(errors="replace")]
    if streamed:
        texts = [line[5:] for line in texts[0].splitlines() if line.startswith("data:")]
    for text in texts:
        try:
            answer = json.loads(text)
        except ValueError:
            continue
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            return error.get("code")
    return None


def _asgi3(handle: Any) -> Any:
    """A plain coroutine function around a bound method: uvicorn takes a bound method for ASGI 2."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await handle(scope, receive, send)

    return app
