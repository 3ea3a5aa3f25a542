"""Feedback on answers (``spec.feedback``, beyond the spec and opt-in per Binding).

An answer's final reply carries a thumbs up and a thumbs down (kourier/slack/blocks.feedback_block,
each button's value its turn's id). A press is recorded once per person and answer (a unique
constraint; a second press of the other thumb changes it, of the same one changes nothing), audited
without text, counted by Binding and verdict. Thumbs down also opens a modal for an optional comment
and an issue type (kagent's); the comment is redacted and kept, never audited. For a kagent agent
named by its controller (``spec.agent.kagent``), each recorded change is sent to the controller's
feedback API after commit (tasks.send_feedback, a version sent once: safe to run twice), naming the
person only as the Binding's ``userIdentity`` lets turns name them (sessions/identity.sent_as).

A press on an answer that is gone (its session deleted), or on a Binding without feedback, is a log
line and nothing stored.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.services import record
from bindings.manifest import UserIdentity
from bindings.models import Connection, MissingSecret
from kourier import metrics
from kourier.a2a.kagent_agents import line_of
from kourier.a2a.kagent_feedback import FeedbackNotSent, send_feedback
from kourier.db import in_database_thread
from kourier.queue import enqueue_after_commit
from kourier.redaction import redact_text
from kourier.slack.blocks import FEEDBACK_UP_ACTION
from kourier.slack.clients import SlackError, async_web_client, connection_workspace, error_name
from kourier.slack.incoming import ModalSubmission, SubmitPress, input_text, selected_value
from kourier.slack.modals import open_modal
from kourier.slack.people import person_email
from sessions.identity import sent_as
from sessions.models import Turn

from .models import Feedback
from .task_names import SEND_FEEDBACK

logger = logging.getLogger(__name__)

RECORDED = "feedback.recorded"
COMMENTED = "feedback.commented"
UP, DOWN = "up", "down"
MAX_COMMENT = 500

# The modal a thumbs down opens, and its fixed wordings (docs/manifests.md, feedback).
CALLBACK_ID = "kourier_feedback_comment"
COMMENT_BLOCK, COMMENT_ACTION = "feedback_comment", "comment"
ISSUE_BLOCK, ISSUE_ACTION = "feedback_issue", "issue_type"
TITLE = "Feedback"
SUBMIT = "Send"
CLOSE = "Skip"
ASKING = "Thanks. What was wrong with this answer? Both are optional."
COMMENT_LABEL = "Comment"
ISSUE_LABEL = "Issue type"
COMMENT_TOO_LONG = f"A comment can be at most {MAX_COMMENT} characters."
# What kagent's feedback API is sent as feedback_text when there is no comment (it requires one).
NO_COMMENT = {True: "Thumbs up in Slack.", False: "Thumbs down in Slack."}


@dataclass(frozen=True)
class Recorded:
    feedback_id: int
    version: int
    changed: bool  # False: the same verdict again, nothing changed


def record_press(
    turn_id: int,
    *,
    connection_id: int,
    channel_id: str,
    message_ts: str,
    user_id: str,
    positive: bool,
    now: datetime | None = None,
) -> Recorded | None:
    """A person's thumbs on an answer; None (logged, nothing stored) when the answer is gone or not one."""
    now = now or timezone.now()
    turn = (
        Turn.objects.select_related("session__binding")
        .filter(pk=turn_id, connection_id=connection_id, channel_id=channel_id)
        .first()
    )
    binding = turn.session.binding if turn is not None else None
    if turn is None or binding is None or not binding.feedback or turn.reply_ts != message_ts:
        logger.info(
            "feedback.answer_gone",
            extra={"turn_id": turn_id, "connection_id": connection_id, "channel": channel_id},
        )
        return None
    try:
        recorded = _record(turn, binding, user_id, positive, now)
    except IntegrityError:  # two first presses at once: the other made the row, this one changes it
        recorded = _record(turn, binding, user_id, positive, now)
    logger.info(
        RECORDED, extra={"turn_id": turn_id, "verdict": UP if positive else DOWN, "changed": recorded.changed}
    )
    return recorded


def _record(turn: Turn, binding: Any, user_id: str, positive: bool, now: datetime) -> Recorded:
    verdict = UP if positive else DOWN
    with transaction.atomic():
        feedback = Feedback.objects.select_for_update().filter(turn=turn, user_id=user_id).first()
        if feedback is None:
            feedback = Feedback.objects.create(turn=turn, user_id=user_id, is_positive=positive)
        elif feedback.is_positive == positive:
            return Recorded(feedback.pk, feedback.version, changed=False)
        else:
            feedback.is_positive, feedback.comment, feedback.issue_type = positive, "", ""
            feedback.version += 1
            feedback.save(update_fields=["is_positive", "comment", "issue_type", "version", "updated_at"])
        record(
            RECORDED,
            binding_name=binding.name,
            actor_id=user_id,
            subject=f"turn {turn.pk}",
            details={"verdict": verdict},
        )
        _send_later(binding, feedback)
    metrics.feedback_recorded(binding.name, verdict)
    return Recorded(feedback.pk, feedback.version, changed=True)


def _send_later(binding: Any, feedback: Feedback) -> None:
    if binding.kagent_controller:
        enqueue_after_commit(SEND_FEEDBACK, feedback.pk, feedback.version)


# -- the thumbs-down modal -------------------------------------------------------------------------------


def comment_modal(recorded: Recorded) -> dict[str, Any]:
    options = [
        {"text": {"type": "plain_text", "text": label}, "value": value}
        for value, label in Feedback.IssueType.choices
    ]
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": json.dumps({"f": recorded.feedback_id}),
        "title": {"type": "plain_text", "text": TITLE},
        "submit": {"type": "plain_text", "text": SUBMIT},
        "close": {"type": "plain_text", "text": CLOSE},
        "blocks": [
            {"type": "section", "text": {"type": "plain_text", "text": ASKING}},
            {
                "type": "input",
                "block_id": ISSUE_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": ISSUE_LABEL},
                "element": {"type": "static_select", "action_id": ISSUE_ACTION, "options": options},
            },
            {
                "type": "input",
                "block_id": COMMENT_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": COMMENT_LABEL},
                "element": {
                    "type": "plain_text_input",
                    "action_id": COMMENT_ACTION,
                    "multiline": True,
                    "max_length": MAX_COMMENT,
                },
            },
        ],
    }


@dataclass(frozen=True)
class Comment:
    feedback_id: int
    user_id: str
    text: str  # redacted, at most MAX_COMMENT characters
    issue_type: str  # one of Feedback.IssueType, or ""


def read_comment(submission: ModalSubmission) -> Comment | str | None:
    """The comment a modal submitted; a message to show under the comment when it must be fixed;
    None when the modal is not one we opened (its metadata)."""
    try:
        kept = json.loads(submission.private_metadata)
    except ValueError:
        return None
    if not isinstance(kept, dict) or not isinstance(kept.get("f"), int):
        return None
    typed = input_text(submission.values, COMMENT_BLOCK, COMMENT_ACTION)
    if len(typed) > MAX_COMMENT:
        return COMMENT_TOO_LONG
    issue = selected_value(submission.values, ISSUE_BLOCK, ISSUE_ACTION)
    if issue not in Feedback.IssueType.values:
        issue = ""
    return Comment(kept["f"], submission.user_id, redact_text(typed.strip())[:MAX_COMMENT], issue)


def channel_of(feedback_id: int) -> str | None:
    """The conversation of the answer a feedback is on (None when it is gone): a comment in a direct
    message answers to its Binding's allow-list (sessions.direct_messages.may_act)."""
    return Feedback.objects.filter(pk=feedback_id).values_list("turn__channel_id", flat=True).first()


def add_comment(comment: Comment) -> bool:
    """Keeps a thumbs down's comment and issue type; False (logged, nothing stored) when that thumbs
    down is gone (the answer deleted, or changed to a thumbs up since)."""
    with transaction.atomic():
        feedback = (
            Feedback.objects.select_for_update(of=("self",))
            .select_related("turn__session__binding")
            .filter(pk=comment.feedback_id, user_id=comment.user_id, is_positive=False)
            .first()
        )
        if feedback is None:
            logger.info("feedback.comment_not_kept", extra={"feedback_id": comment.feedback_id})
            return False
        feedback.comment, feedback.issue_type = comment.text, comment.issue_type
        feedback.version += 1
        feedback.save(update_fields=["comment", "issue_type", "version", "updated_at"])
        binding = feedback.turn.session.binding
        record(
            COMMENTED,
            binding_name=binding.name if binding else "",
            actor_id=comment.user_id,
            subject=f"turn {feedback.turn_id}",
            details={"issue_type": comment.issue_type, "comment": bool(comment.text)},
        )
        if binding is not None:
            _send_later(binding, feedback)
    logger.info(COMMENTED, extra={"feedback_id": comment.feedback_id})
    return True


# -- kagent ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToSend:
    controller: str
    user_id: str  # the person's Slack ID, as the feedback was recorded
    body: dict[str, Any]
    user_identity: UserIdentity = UserIdentity.NONE  # the Binding's: what the person is sent as
    # For their email (users.info), when that is what is sent; "" when the token is not set.
    connection_id: int = 0
    team_id: str = ""
    bot_token: str = field(default="", repr=False)
    # The kagent line the agent was found on at apply (kourier/a2a/kagent_agents.py): the protocol
    # its controller takes feedback in (1.0: gRPC FeedbackService; 0.10: REST).
    line: str = ""


def to_send(feedback_id: int, version: int) -> ToSend | None:
    """What to send kagent for this version of a feedback; None when it is sent, superseded or gone."""
    feedback = (
        Feedback.objects.select_related("turn__session__binding", "turn__connection")
        .filter(pk=feedback_id, version=version, sent_version__lt=version)
        .first()
    )
    binding = feedback.turn.session.binding if feedback is not None else None
    if feedback is None or binding is None or not binding.kagent_controller:
        return None
    body: dict[str, Any] = {
        "is_positive": feedback.is_positive,
        # kagent requires a text; its message_id is its own database's number for a message, which
        # an A2A client never learns: the task id goes in the text instead (docs/kagent-feedback.md).
        "feedback_text": _feedback_text(feedback),
    }
    if feedback.issue_type:
        body["issue_type"] = feedback.issue_type
    identity = UserIdentity(binding.user_identity)
    connection = feedback.turn.connection
    return ToSend(
        binding.kagent_controller,
        feedback.user_id,
        body,
        user_identity=identity,
        connection_id=connection.pk,
        team_id=connection.team_id,
        bot_token=_bot_token(connection) if identity is UserIdentity.EMAIL else "",
        line=line_of(binding.protocol_version),
    )


def _bot_token(connection: Connection) -> str:
    try:
        return connection.bot_token()
    except MissingSecret:  # no email then: the Slack ID, as a turn sends when Slack shows none
        return ""


async def sent_user(sending: ToSend) -> str | None:
    """Who the feedback names to kagent: as the Binding's turns name the person (none, the Slack ID,
    or the email, the Slack ID when Slack shows none), so that it names no one they do not."""

    async def email_of(user_id: str) -> str | None:
        if not sending.bot_token:
            return None
        slack = async_web_client(sending.bot_token, workspace=connection_workspace(sending.connection_id))
        return await person_email(slack, sending.team_id, user_id)

    return await sent_as(sending.user_identity, sending.user_id, email_of)


def _feedback_text(feedback: Feedback) -> str:
    text = feedback.comment or NO_COMMENT[feedback.is_positive]
    return f"{text} (A2A task {feedback.turn.task_id})" if feedback.turn.task_id else text


def mark_sent(feedback_id: int, version: int) -> bool:
    return bool(
        Feedback.objects.filter(pk=feedback_id, sent_version__lt=version).update(
            sent_version=version, kagent_problem=""
        )
    )


def send(feedback_id: int, version: int) -> str:
    """Sends one version of a feedback to kagent: "sent", "nothing" (sent, superseded or gone),
    "refused" (the controller said no for good); raises FeedbackNotSent when worth trying again."""
    sending = to_send(feedback_id, version)
    if sending is None:
        return "nothing"
    try:
        way = send_feedback(
            sending.controller,
            async_to_sync(sent_user)(sending),
            sending.body,
            line=sending.line,
            grpc_port=settings.KAGENT_GRPC_PORT,
        )
    except FeedbackNotSent as exc:
        logger.warning(
            "feedback.not_sent",
            extra={"feedback_id": feedback_id, "error": exc.reason, "transient": exc.transient},
        )
        if exc.transient:
            raise
        Feedback.objects.filter(pk=feedback_id).update(kagent_problem=exc.reason[:200])
        return "refused"
    mark_sent(feedback_id, version)
    logger.info("feedback.sent", extra={"feedback_id": feedback_id, "way": way})
    return "sent"


# -- the press, as the listener hands it over ------------------------------------------------------------


async def receive_thumbs_press(press: SubmitPress, *, connection_id: int, bot_token: str) -> Recorded | None:
    """Records a thumbs press; a thumbs down then opens the comment modal (views.open, the press's trigger_id)."""
    turn_id = int(press.value) if press.value.isascii() and press.value.isdigit() else 0
    positive = press.action_id == FEEDBACK_UP_ACTION
    recorded = await in_database_thread(record_press)(
        turn_id,
        connection_id=connection_id,
        channel_id=press.channel_id,
        message_ts=press.message_ts,
        user_id=press.user_id,
        positive=positive,
    )
    if recorded is None or positive or not press.trigger_id:
        return recorded
    slack = async_web_client(bot_token, workspace=connection_workspace(connection_id))
    try:
        await open_modal(slack, press.trigger_id, comment_modal(recorded))
    except SlackError as exc:  # the thumbs down is kept; only its comment cannot be asked now
        logger.warning(
            "feedback.comment_form_unavailable", extra={"turn_id": turn_id, "error": error_name(exc)}
        )
    return recorded
