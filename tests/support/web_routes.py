"""A request sent through the web process's routing (kourier/http_routes.py) in the test's own
process: the doors ahead of Django, and a stand-in for Django that records the paths handed to it."""

from __future__ import annotations

from kourier.http_routes import http_routes


class Django:
    """Stands for the Django app: records the paths handed to it."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def request(
    path: str, body: bytes | list[bytes] = b"", *, method: str = "POST", headers=None, django=None
):
    """Sends one request through the web process's routing; a list body arrives in those chunks."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    parts = body if isinstance(body, list) else [body]
    chunks = [
        {"type": "http.request", "body": part, "more_body": index < len(parts) - 1}
        for index, part in enumerate(parts)
    ]
    sent: list[dict] = []

    async def receive():
        return chunks.pop(0)

    async def send(message):
        sent.append(message)

    await http_routes(django or Django())(scope, receive, send)
    start, *bodies = sent
    response_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], response_headers, b"".join(m.get("body", b"") for m in bodies)
