"""From an HTTP request to the fake's answer: parse, authenticate, inject faults, rate-limit, run, record.

Independent of the HTTP server, so the order of Slack's checks reads top to bottom in ``WebApi.handle``.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl

from . import agent_sessions, agent_view, home, interactivity, methods, modals, streams
from .errors import SlackError
from .faults import TRANSPORT_FAULTS, Fault, FaultPlan
from .rate_limits import RateLimiter
from .state import SlackState, Workspace
from .web_api import METHODS, Args, Call, normalize_json_arguments

Transport = Literal["respond", "hold", "disconnect"]
EventSink = Callable[[Workspace, list[dict[str, Any]]], None]
# Importing the method modules registers them; name them so the registry's contents are explicit.
REGISTERING_MODULES = (methods, modals, streams, agent_view, agent_sessions, home)


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    query: str
    headers: Mapping[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    # "hold": keep the connection open without answering until the client gives up (a timeout);
    # "disconnect": close it without answering.
    transport: Transport = "respond"


@dataclass(frozen=True)
class RecordedCall:
    """One call the app made, as the fake saw and answered it."""

    method: str
    args: dict[str, Any]
    team_id: str | None
    at: float
    status: int | None  # the HTTP status sent; None when the answer was withheld (timeout, disconnect)
    error: str | None  # Slack's error name, "http_500", "timeout", ...; None for ok
    response: dict[str, Any] | None  # the body (also for a withheld answer: what would have been sent)
    fault: str | None = None  # the injected fault this call ran into
    applied: bool = False  # whether the call took effect in Slack

    @property
    def ok(self) -> bool:
        return self.error is None


class WebApi:
    def __init__(
        self, state: SlackState, limiter: RateLimiter, faults: FaultPlan, on_events: EventSink
    ) -> None:
        self.state = state
        self.limiter = limiter
        self.faults = faults
        self._on_events = on_events
        # apps.connections.open's answer: a websocket URL for the workspace's app (socket_mode.py).
        self.open_socket: Callable[[Workspace], str] | None = None
        self.revoked_tokens: set[str] = set()
        self._calls: list[RecordedCall] = []
        self.internal_errors: list[str] = []  # tracebacks of the fake's own failures
        # Notified on every recorded call, so tests can wait for the app to do something.
        self.changed = threading.Condition(state.lock)

    # The record.

    def calls(self, method: str | None = None) -> list[RecordedCall]:
        with self.state.lock:
            return [c for c in self._calls if method is None or c.method == method]

    def reset_calls(self) -> None:
        with self.state.lock:
            self._calls.clear()

    def record(self, call: RecordedCall) -> None:
        with self.changed:
            self._calls.append(call)
            self.changed.notify_all()

    # Serving.

    def handle(self, request: HttpRequest) -> HttpAnswer:
        try:
            if request.path.startswith("/api/"):
                return self._handle_method_call(request, request.path[len("/api/") :])
            if request.path.startswith("/actions/"):
                return self._handle_response_url(request)
            return HttpAnswer(404, b"Not Found", {"Content-Type": "text/plain"})
        except Exception:
            # A bug in the fake must not pass for a Slack outage: keep it for the fixture to fail the test.
            detail = traceback.format_exc()
            with self.state.lock:
                self.internal_errors.append(detail)
            return _json_answer(500, {"ok": False, "error": "fake_internal_error", "detail": detail})

    def _handle_method_call(self, request: HttpRequest, method: str) -> HttpAnswer:
        now = self.state.now()
        try:
            raw_args, body_token = _parse_arguments(request)
        except SlackError as refusal:
            return self._refuse(method, {}, None, now, refusal)
        args = normalize_json_arguments(raw_args)
        if method == "apps.connections.open":
            return self._open_connection(request, args, now)
        if method not in METHODS:
            return self._refuse(method, args, None, now, SlackError("unknown_method", req_method=method))
        workspace_or_refusal = self._authenticate(request, body_token)
        if isinstance(workspace_or_refusal, SlackError):
            return self._refuse(method, args, None, now, workspace_or_refusal)
        workspace = workspace_or_refusal

        # Slack counts every call against the budget, including one that then fails.
        # A budget kept per channel is kept per person for a method that names a person (views.publish).
        place = _text_or_none(args.get("channel")) or _text_or_none(args.get("user_id"))
        retry_after = self.limiter.admit(workspace.team_id, method, place)
        if retry_after is not None:
            return self._rate_limited(method, args, workspace, now, retry_after, fault=None)

        fault = self.faults.take(method, workspace.team_id, args)
        if fault is not None and not fault.after_apply:
            return self._inject(fault, method, args, workspace, now, response=None, applied=False)

        call = Call(method=method, args=Args(args), workspace=workspace, state=self.state)
        with self.state.lock:
            try:
                body = {"ok": True, **METHODS[method](call)}
                error = None
            except SlackError as refusal:
                body, error = refusal.body(), refusal.error
                call.events.clear()
        if call.events:
            self._on_events(workspace, call.events)
        if fault is not None:  # applied, and now its answer is lost
            return self._inject(fault, method, args, workspace, now, response=body, applied=error is None)
        self.record(
            RecordedCall(method, args, workspace.team_id, now, 200, error, body, applied=error is None)
        )
        return _json_answer(200, body)

    def _authenticate(self, request: HttpRequest, body_token: str | None) -> Workspace | SlackError:
        """Bearer header first, then a form ``token`` field (Slack ignores a token inside a JSON body)."""
        authorization = request.headers.get("authorization", "")
        token = authorization[len("Bearer ") :].strip() if authorization.startswith("Bearer ") else body_token
        if not token:
            return SlackError("not_authed")
        with self.state.lock:
            known = self.state.tokens.get(token)
            if known is None:
                return SlackError("invalid_auth")
            if token in self.revoked_tokens:
                return SlackError("token_revoked")
            team_id, kind = known
            if kind != "bot":  # an app-level token only opens Socket Mode connections
                return SlackError("not_allowed_token_type")
            return self.state.workspace(team_id)

    def _open_connection(self, request: HttpRequest, args: dict[str, Any], now: float) -> HttpAnswer:
        """apps.connections.open: an app-level token, in the Authorization header only (Slack's page:
        passing it as a POST parameter is an error), answers a one-time websocket URL."""
        authorization = request.headers.get("authorization", "")
        token = authorization[len("Bearer ") :].strip() if authorization.startswith("Bearer ") else ""
        method = "apps.connections.open"
        with self.state.lock:
            known = self.state.tokens.get(token) if token else None
        if not token:
            return self._refuse(method, args, None, now, SlackError("not_authed"))
        if known is None:
            return self._refuse(method, args, None, now, SlackError("invalid_auth"))
        if token in self.revoked_tokens:
            return self._refuse(method, args, known[0], now, SlackError("token_revoked"))
        team_id, kind = known
        if kind != "app":
            return self._refuse(method, args, team_id, now, SlackError("not_allowed_token_type"))
        workspace = self.state.workspace(team_id)
        fault = self.faults.take(method, team_id, args)
        if fault is not None:
            return self._inject(fault, method, args, workspace, now, response=None, applied=False)
        if self.open_socket is None:
            raise RuntimeError("the fake's Socket Mode server is not running")
        body = {"ok": True, "url": self.open_socket(workspace)}
        self.record(RecordedCall(method, args, team_id, now, 200, None, body, applied=True))
        return _json_answer(200, body)

    def _refuse(
        self, method: str, args: dict[str, Any], team_id: str | None, now: float, refusal: SlackError
    ) -> HttpAnswer:
        body = refusal.body()
        self.record(RecordedCall(method, args, team_id, now, 200, refusal.error, body))
        return _json_answer(200, body)

    def _rate_limited(
        self,
        method: str,
        args: dict[str, Any],
        workspace: Workspace,
        now: float,
        retry_after: int,
        fault: str | None,
    ) -> HttpAnswer:
        body = {"ok": False, "error": "ratelimited"}
        self.record(RecordedCall(method, args, workspace.team_id, now, 429, "ratelimited", body, fault=fault))
        return _json_answer(429, body, {"Retry-After": str(retry_after)})

    def _inject(
        self,
        fault: Fault,
        method: str,
        args: dict[str, Any],
        workspace: Workspace,
        now: float,
        *,
        response: dict[str, Any] | None,
        applied: bool,
    ) -> HttpAnswer:
        team_id = workspace.team_id
        if fault.error == "ratelimited":
            return self._rate_limited(method, args, workspace, now, fault.retry_after, fault="ratelimited")
        if fault.error in TRANSPORT_FAULTS:
            self.record(
                RecordedCall(method, args, team_id, now, None, fault.error, response, fault.error, applied)
            )
            transport: Transport = "hold" if fault.error.startswith("timeout") else "disconnect"
            return HttpAnswer(0, b"", transport=transport)
        status = fault.http_status or 200
        body = (
            fault.body
            if fault.body is not None
            else {"ok": False, "error": _body_error(fault), **fault.extra}
        )
        recorded = body if isinstance(body, dict) else None
        self.record(RecordedCall(method, args, team_id, now, status, fault.error, recorded, fault.error))
        if isinstance(body, str):
            return HttpAnswer(status, body.encode(), {"Content-Type": "text/html; charset=utf-8"})
        return _json_answer(status, body)

    def _handle_response_url(self, request: HttpRequest) -> HttpAnswer:
        now = self.state.now()
        try:
            payload = json.loads(request.body or b"{}")
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            self.record(RecordedCall("response_url", {}, None, now, 400, "invalid_payload", None))
            return HttpAnswer(400, b"invalid_payload", {"Content-Type": "text/plain"})
        with self.state.lock:
            status, body, team_id, emitted = interactivity.apply_response_url(
                self.state, request.path, payload
            )
        if emitted and team_id is not None:
            self._on_events(self.state.workspace(team_id), emitted)
        error = None if status == 200 else str(body.get("error"))
        self.record(
            RecordedCall("response_url", payload, team_id, now, status, error, body, applied=error is None)
        )
        return _json_answer(status, body)


def _body_error(fault: Fault) -> str:
    return "internal_error" if fault.http_status else fault.error


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _json_answer(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> HttpAnswer:
    return HttpAnswer(
        status,
        json.dumps(body).encode(),
        {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
    )


def _parse_arguments(request: HttpRequest) -> tuple[dict[str, Any], str | None]:
    """The call's arguments from the query string and the body, and a token sent as a form field."""
    args: dict[str, Any] = dict(parse_qsl(request.query, keep_blank_values=True))
    args.pop("token", None)  # Slack no longer takes tokens in query strings
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body_token: str | None = None
    if not request.body:
        return args, None
    if content_type == "application/json":
        try:
            decoded = json.loads(request.body)
        except ValueError:
            raise SlackError("invalid_json") from None
        if not isinstance(decoded, dict):
            raise SlackError("json_not_object")
        decoded.pop("token", None)
        args.update(decoded)
    elif content_type == "application/x-www-form-urlencoded":
        form = dict(parse_qsl(request.body.decode("utf-8"), keep_blank_values=True))
        body_token = form.pop("token", None)
        args.update(form)
    elif content_type == "multipart/form-data":
        form = _parse_multipart(request.headers.get("content-type", ""), request.body)
        body_token = form.pop("token", None)
        args.update(form)
    else:
        raise SlackError("invalid_form_data")
    return args, body_token


def _parse_multipart(content_type: str, body: bytes) -> dict[str, str]:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            fields[name] = payload.decode("utf-8") if isinstance(payload, bytes) else ""
    return fields
