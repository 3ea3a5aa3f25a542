"""Sending feedback on an answer to kagent's controller: ``POST <controller>/api/feedback``.

kagent's controller (go/core/internal/httpserver/handlers/feedback.go; its ``database.Feedback``)
reads a JSON body ``{is_positive, feedback_text, issue_type, message_id}``: ``feedback_text`` must
not be empty (400 otherwise), ``issue_type`` is one of instructions, factual, incomplete, tool, and
``message_id`` is a number, its own database's id of a message, which an A2A client never learns (so
it is left out). The user is the request's (``X-User-Id``, as turns name it: none when the Binding's
userIdentity sends none). Each POST stores a row. docs/kagent-feedback.md has the details.
"""

from __future__ import annotations

from typing import Any

import httpx

FEEDBACK_PATH = "/api/feedback"
USER_ID_HEADER = "X-User-Id"
TIMEOUT_SECONDS = 10.0


class FeedbackNotSent(Exception):
    """The controller did not take the feedback; ``transient``: worth trying again later."""

    def __init__(self, reason: str, *, transient: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


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
    if answer.status_code >= 500 or answer.status_code == 429:
        raise FeedbackNotSent(f"http_{answer.status_code}", transient=True)
    if answer.status_code >= 400:
        raise FeedbackNotSent(f"http_{answer.status_code}", transient=False)
