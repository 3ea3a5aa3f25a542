"""HTTP plumbing: a threaded server on 127.0.0.1 that hands each request to the Web API pipeline.

It knows nothing of Slack. Its one trick is a held answer (an injected timeout): the request is kept
open unanswered until the client hangs up or the server stops, so a held request never blocks shutdown.

It answers programs on this machine, never a browser's page of another site (issue 32, point 7): its
callers (``slack_sdk``'s clients, the simulator page's forwarder) send no ``Origin`` and no
``Sec-Fetch-Site``, where a browser sends them with every cross-site request, to 127.0.0.1 too; and a
request must name this server by a loopback host and its port (``Host``), so that a site whose name
is made to resolve to 127.0.0.1 (DNS rebinding) is refused as well. A refused request is a 403 that
reaches no handler.
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from .pipeline import HttpAnswer, HttpRequest

MAX_HOLD_SECONDS = 120.0  # a held request is given up on after this, whatever the client does
_POLL_SECONDS = 0.05
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# What a browser says of a request its user made here, or that a page of this very origin made.
OWN_FETCH_SITES = ("same-origin", "none")
CROSS_SITE = HttpAnswer(
    403,
    b'{"ok": false, "error": "cross_site_request", "message": "The simulator answers programs on this '
    b'machine, not pages of other sites."}',
    {"Content-Type": "application/json; charset=utf-8"},
)


def cross_site_refusal(
    headers: Mapping[str, str], port: int, hosts: tuple[str, ...] = LOOPBACK_HOSTS
) -> str | None:
    """Why a request (its headers, lower-cased names) is not one this server at ``port``, known by
    ``hosts``, answers, or None. Pure."""
    own = {f"{host}:{port}" for host in hosts}
    if headers.get("host", "").lower() not in own:
        return "host"
    site = headers.get("sec-fetch-site")
    if site is not None and site.lower() not in OWN_FETCH_SITES:
        return "sec-fetch-site"
    origin = headers.get("origin")
    if origin is not None and origin.lower() not in {f"http://{name}" for name in own}:
        return "origin"
    return None


class FakeHttpServer:
    def __init__(
        self, handle: Callable[[HttpRequest], HttpAnswer], port: int = 0, *, public_host: str = ""
    ) -> None:
        """``public_host``: a name the fake gives itself besides the loopback ones (the egress proxy
        test's, which only its proxy resolves); a request may name it too."""
        self._hosts = LOOPBACK_HOSTS + ((public_host.lower(),) if public_host else ())
        self._handle = handle
        self._port = port  # 0: a free one
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not running")
        return self._server.server_address[1]

    def start(self) -> None:
        self._stopping.clear()
        self._server = ThreadingHTTPServer(
            ("127.0.0.1", self._port), _handler_class(self._handle, self._stopping, self._hosts)
        )
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": _POLL_SECONDS},  # how quickly stop() is noticed
            name="slack-fake-http",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # releases held requests
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None


def _handler_class(
    handle: Callable[[HttpRequest], HttpAnswer], stopping: threading.Event, hosts: tuple[str, ...]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "SlackFake/1.0"

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the fake's own call record is the log."""

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            headers = {name.lower(): value for name, value in self.headers.items()}
            if cross_site_refusal(headers, self.connection.getsockname()[1], hosts) is not None:
                self._respond(CROSS_SITE)
                return
            request = HttpRequest(
                method=self.command,
                path=url.path,
                query=url.query,
                headers=headers,
                body=body,
            )
            answer = handle(request)
            if answer.transport == "hold":
                self._hold()
            if answer.transport != "respond":
                self.close_connection = True
                return
            self._respond(answer)

        def _respond(self, answer: HttpAnswer) -> None:
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def _hold(self) -> None:
            """Keep the request unanswered until the client gives up, the server stops, or the cap passes."""
            waited = 0.0
            while waited < MAX_HOLD_SECONDS and not stopping.wait(_POLL_SECONDS):
                waited += _POLL_SECONDS
                if _peer_closed(self.connection):
                    return

    return Handler


def _peer_closed(connection: socket.socket) -> bool:
    readable, _, _ = select.select([connection], [], [], 0)
    if not readable:
        return False
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True
