"""Sending feedback on an answer to kagent's controller: ``POST <controller>/api/feedback``.

kagent's controller (go/core/internal/httpserver/handlers/feedback.go; its ``database.Feedback``)
reads a JSON body ``{is_positive, feedback_text, issue_type, message_id}``: ``feedback_text`` must
not be empty (400 otherwise), ``issue_type`` is one of instructions, factual, incomplete, tool, and
``message_id`` is a number, its own database's id of a message, which an A2A client never learns (so
it is left out). The user is the request's (``X-User-Id``, as turns name it: none when the Binding's
userIdentity sends none). Each POST stores a row. docs/kagent-feedback.md has the details.

kagent 1.0's controller took feedback off its REST API: it is its gRPC ``FeedbackService.CreateFeedback``
(kagent's proto/kagent/api/v1alpha1/feedback.proto) on the controller's gRPC port (8084 by default,
beside its HTTP port), the user in the ``x-user-id`` metadata. ``send_feedback`` speaks the protocol of
the line the Binding's agent was found on (kourier/a2a/kagent_agents.py) and, when that one is not
served there, the other; ``FeedbackNotSent`` with ``NEITHER_ANSWERS`` when neither is.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import grpc
import httpx

from kourier.a2a.kagent_agents import KAGENT_1_0

FEEDBACK_PATH = "/api/feedback"
USER_ID_HEADER = "X-User-Id"
TIMEOUT_SECONDS = 10.0
CREATE_FEEDBACK_METHOD = "/kagent.api.v1alpha1.FeedbackService/CreateFeedback"
GRPC_PORT = 8084  # kagent 1.0's controller: its gRPC API's port (helm values controller.service.ports.grpc)
GRPC_USER_ID_METADATA = "x-user-id"
NEITHER_ANSWERS = "neither kagent's gRPC FeedbackService nor its REST /api/feedback answered"
# A gRPC status that says the call may succeed later; UNIMPLEMENTED and the rest say it will not.
_TRANSIENT_GRPC = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED,
     grpc.StatusCode.ABORTED, grpc.StatusCode.INTERNAL}
)  # fmt: skip


class NotServed(Exception):
    """The controller does not serve this protocol's feedback (no such route, no such service)."""


class FeedbackNotSent(Exception):
    """The controller did not take the feedback; ``transient``: worth trying again later."""

    def __init__(self, reason: str, *, transient: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


def send_feedback(
    controller: str,
    user_id: str | None,
    body: dict[str, Any],
    *,
    line: str,
    grpc_port: int = GRPC_PORT,
    timeout: float = TIMEOUT_SECONDS,
) -> str:
    """Sends the feedback the way the agent's kagent ``line`` takes it, else the other way; returns
    "grpc" or "rest", the way that took it. Raises ``FeedbackNotSent`` (``NEITHER_ANSWERS`` for good
    when neither way is served)."""
    ways = [
        ("grpc", lambda: _grpc_create(grpc_target(controller, grpc_port), user_id, body, timeout=timeout)),
        ("rest", lambda: post_feedback(controller, user_id, body, timeout=timeout)),
    ]
    if line != KAGENT_1_0:
        ways.reverse()
    for name, send in ways:
        try:
            send()
        except NotServed:
            continue
        return name
    raise FeedbackNotSent(NEITHER_ANSWERS, transient=False)


def grpc_target(controller: str, port: int) -> str:
    """The controller's gRPC address: its host, on the gRPC port."""
    host = urlsplit(controller).hostname or ""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def create_feedback_request(body: dict[str, Any]) -> bytes:
    """kagent's ``CreateFeedbackRequest`` in protobuf's wire format: ``is_positive`` (field 2, bool),
    ``feedback_text`` (3, string), ``issue_type`` (4, optional string); ``message_id`` (1) is never
    known to an A2A client and left out. Fields in number order, defaults omitted, as protobuf writes
    them (tests/a2a/test_kagent_feedback.py checks it against the proto)."""
    encoded = bytearray()
    if body.get("is_positive"):
        encoded += b"\x10\x01"
    for number, value in ((3, body.get("feedback_text", "")), (4, body.get("issue_type"))):
        if value is None or (number == 3 and not value):
            continue
        data = value.encode("utf-8")
        encoded += bytes([number << 3 | 2]) + _varint(len(data)) + data
    return bytes(encoded)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _grpc_create(target: str, user_id: str | None, body: dict[str, Any], *, timeout: float) -> None:
    metadata = ((GRPC_USER_ID_METADATA, user_id),) if user_id else ()
    with grpc.insecure_channel(target) as channel:
        create = channel.unary_unary(
            CREATE_FEEDBACK_METHOD, request_serializer=None, response_deserializer=None
        )
        try:
            create(create_feedback_request(body), timeout=timeout, metadata=metadata)
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            if code is grpc.StatusCode.UNIMPLEMENTED or (
                code is grpc.StatusCode.UNAVAILABLE and _refused(exc)
            ):
                raise NotServed(code.name) from None
            raise FeedbackNotSent(f"grpc_{code.name.lower()}", transient=code in _TRANSIENT_GRPC) from None


def _refused(exc: grpc.RpcError) -> bool:
    """Nothing listens on the gRPC port (a 0.10 controller has none): connection refused."""
    details = (exc.details() or "").lower()  # type: ignore[attr-defined]
    return "connection refused" in details or ("connect" in details and "failed" in details)


def post_feedback(
    controller: str, user_id: str | None, body: dict[str, Any], *, timeout: float = TIMEOUT_SECONDS
) -> None:
    """``user_id`` None: no X-User-Id (kagent files it under its default user)."""
    url = controller.rstrip("/") + FEEDBACK_PATH
    headers = {USER_ID_HEADER: user_id} if user_id else {}
    try:
        answer = httpx.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise FeedbackNotSent(type(exc).__name__, transient=True) from None
    if answer.status_code in (404, 405):  # kagent 1.0's controller has no /api/feedback
        raise NotServed(f"http_{answer.status_code}")
    if answer.status_code >= 500 or answer.status_code == 429:
        raise FeedbackNotSent(f"http_{answer.status_code}", transient=True)
    if answer.status_code >= 400:
        raise FeedbackNotSent(f"http_{answer.status_code}", transient=False)
