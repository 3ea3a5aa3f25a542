"""A tiny stand-in for the app's endpoint: it checks Slack's signature the way Bolt does and records requests."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.signature import SignatureVerifier

SIGNING_SECRET = "receiver-signing-secret"


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]  # lower-case names
    body: bytes
    signature_valid: bool

    def json(self) -> Any:
        if self.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            return json.loads(parse_qs(self.body.decode())["payload"][0])
        return json.loads(self.body)


class Receiver:
    """Answers 401 to a request whose signature does not verify, the challenge to url_verification, else 200.

    ``before_answer`` runs in the request's thread before it answers (to hold it, or to meet another request).
    """

    def __init__(self, signing_secret: str = SIGNING_SECRET) -> None:
        self.verifier = SignatureVerifier(signing_secret)
        self.received: list[Received] = []
        self.before_answer: Callable[[Received], object] | None = None
        # The body of the answer to an interactivity request (a view_submission's response_action).
        self.answer_interactive: Callable[[dict[str, Any]], bytes] | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/slack/events"

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                valid = receiver.verifier.is_valid_request(body, headers)
                request = Received(headers, body, valid)
                with receiver._lock:
                    receiver.received.append(request)
                if receiver.before_answer is not None:
                    receiver.before_answer(request)
                status, answer = 200, b""
                if not valid:
                    status = 401
                elif headers.get("content-type", "").startswith("application/json"):
                    payload = json.loads(body)
                    if payload.get("type") == "url_verification":
                        answer = json.dumps({"challenge": payload["challenge"]}).encode()
                elif receiver.answer_interactive is not None:
                    answer = receiver.answer_interactive(request.json())
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except BrokenPipeError:
                    pass  # the sender stopped waiting (a delivery that timed out)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.json()["event"] for r in self.received if r.json().get("type") == "event_callback"]

    def interactions(self) -> list[dict[str, Any]]:
        """The interactivity payloads received, in order (the app's own echoed messages left out)."""
        with self._lock:
            forms = [
                r for r in self.received if r.headers.get("content-type", "").startswith("application/x-www")
            ]
        return [r.json() for r in forms]
