"""What the interactions app does: opens an Interaction when a task pauses to ask, takes the first
complete answer (a Submit press or a typed reply), times Interactions out and closes their prompts.

An answer becomes a turn of the session (``Turn.Kind.ANSWER`` or ``TYPED_ANSWER``), queued ahead of
the replies that wait, and goes through the same lease, outbox, reply and recovery as any turn.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.services import record
from kourier import metrics
from kourier.a2a.events import AnswerFormat, ApprovalRequest, Question
from kourier.queue import enqueue_after_commit
from kourier.slack.clients import SlackError, connection_workspace, error_name, web_client
from sessions.models import Session, Turn
from sessions.queue import DRIVE_SESSION
from sessions.turns import message_id_for

from . import approval_prompts, closings, kept_answers, prompts
from .answers import Answers, Incomplete, Mismatch, read_answers
from .audit import answer_shape
from .models import Interaction

logger = logging.getLogger(__name__)


def open_question(turn_id: int, question: Question, *, now: datetime | None = None) -> Interaction:
    """Opens the Interaction of a turn whose task paused to ask; the same one when called again."""
    now = now or timezone.now()
    turn = Turn.objects.select_related("session__binding").get(pk=turn_id)
    binding = turn.session.binding
    assert binding is not None, "a turn that runs has its Binding"
    interaction, _ = Interaction.objects.get_or_create(
        turn=turn,
        defaults={
            "session": turn.session,
            "kind": Interaction.Kind.QUESTION,
            "pause": question.to_dict(),
            "typed_replies": question.answer_format is AnswerFormat.TEXT,
            "deadline": now + binding.interaction_timeout,
            "channel_id": turn.channel_id,
        },
    )
    return interaction


def record_prompt(interaction_id: int, prompt_ts: str) -> None:
    Interaction.objects.filter(pk=interaction_id, prompt_ts="").update(prompt_ts=prompt_ts)


def give_up(interaction_id: int) -> None:
    """The prompt could not be put to the channel: nothing can answer it."""
    Interaction.objects.filter(pk=interaction_id, state=Interaction.State.OPEN).update(
        state=Interaction.State.CANCELLED, closed_at=timezone.now()
    )


class Refusal(enum.StrEnum):
    """Why a press is not taken; each has a message only the person sees (``REFUSALS``)."""

    UNKNOWN = "unknown"
    CLOSED = "closed"
    ANSWERED = "answered"
    MISMATCH = "mismatch"
    NOT_A_MEMBER = "not-a-member"
    INCOMPLETE = "incomplete"


REFUSALS = {
    Refusal.UNKNOWN: "This question is not one I can take an answer for.",
    Refusal.CLOSED: "This question is closed: it timed out or was cancelled, so the answer was not sent.",
    Refusal.ANSWERED: "Someone answered this question already; your answer was not sent.",
    Refusal.MISMATCH: "This answer does not fit the question as it was asked, so it was not sent.",
    Refusal.NOT_A_MEMBER: "Only members of this channel can answer the agent's questions.",
}


@dataclass(frozen=True)
class Taken:
    """The answer won: its turn is queued."""

    interaction_id: int
    turn_id: int


@dataclass(frozen=True)
class Refused:
    refusal: Refusal
    message: str  # for the person alone


def _refused(refusal: Refusal, detail: str | None = None) -> Refused:
    return Refused(refusal, detail if detail is not None else REFUSALS[refusal])


def take_pressed_answer(
    interaction_id: int,
    *,
    channel_id: str,
    prompt_ts: str,
    user_id: str,
    values: dict[str, Any],
    now: datetime | None = None,
) -> Taken | Refused:
    """Takes a Submit press on a prompt: the first complete answer wins (a conditional update)."""
    interaction = Interaction.objects.select_related("session__binding").filter(pk=interaction_id).first()
    if interaction is None or interaction.kind != Interaction.Kind.QUESTION:
        return _refused(Refusal.UNKNOWN)
    if interaction.channel_id != channel_id or interaction.prompt_ts != prompt_ts:
        return _refused(Refusal.UNKNOWN)
    if interaction.state == Interaction.State.ANSWERED:
        return _refused(Refusal.ANSWERED)
    if interaction.state != Interaction.State.OPEN:
        return _refused(Refusal.CLOSED)
    question = Question.from_dict(interaction.pause)
    answers = read_answers(question, values)
    if isinstance(answers, Mismatch):
        logger.info(
            "interaction.answer_mismatch", extra={"interaction_id": interaction_id, "reason": answers.reason}
        )
        return _refused(Refusal.MISMATCH)
    if isinstance(answers, Incomplete):
        return _refused(Refusal.INCOMPLETE, f"Your answer was not sent: {answers.message}")
    turn_key = f"answer-{interaction_id}"
    return _take(interaction, question, answers, user_id, turn_key, Turn.Kind.ANSWER, text="", now=now)


def take_typed_answer(
    session: Session, *, message_ts: str, user_id: str, text: str, now: datetime | None = None
) -> Taken | None:
    """A reply typed in a thread whose open question takes typed replies: the first reply is the answer.
    None when the thread has no such question open (the reply is then routed as any other)."""
    interaction = (
        Interaction.objects.select_related("session__binding")
        .filter(session=session, state=Interaction.State.OPEN, typed_replies=True)
        .first()
    )
    if interaction is None or not text.strip():
        return None
    question = Question.from_dict(interaction.pause)
    taken = _take(
        interaction,
        question,
        [[text.strip()]],
        user_id,
        message_ts,
        Turn.Kind.TYPED_ANSWER,
        text=text,
        now=now,
    )
    return taken if isinstance(taken, Taken) else None


def _take(
    interaction: Interaction,
    question: Question,
    answers: Answers,
    user_id: str,
    turn_key: str,
    kind: str,
    *,
    text: str,
    now: datetime | None,
) -> Taken | Refused:
    now = now or timezone.now()
    session = interaction.session
    with transaction.atomic():
        won = (
            Interaction.objects.filter(pk=interaction.pk, state=Interaction.State.OPEN).update(
                state=Interaction.State.ANSWERED, answered_by=user_id, answered_at=now
            )
            == 1
        )
        if not won:
            return _refused(Refusal.ANSWERED)
        turn = Turn.objects.create(
            session=session,
            connection_id=session.connection_id,
            channel_id=session.channel_id,
            message_ts=turn_key,
            kind=kind,
            user_id=user_id,
            text=text,
            answers=answers,
            state=Turn.State.QUEUED,
            message_id=message_id_for(session.connection_id, session.channel_id, turn_key),
        )
        Interaction.objects.filter(pk=interaction.pk).update(answer_turn=turn)
        record(
            "interaction.answered",
            binding_name=session.binding.name if session.binding else "",
            actor_id=user_id,
            subject=f"interaction {interaction.pk}",
            details=answer_shape(question, answers),
        )
        enqueue_after_commit(DRIVE_SESSION, session.pk)
        closings.intend(interaction.pk, now=now)
    logger.info("interaction.answered", extra={"interaction_id": interaction.pk, "turn_id": turn.pk})
    metrics.interactions_decided(Interaction.Kind.QUESTION.value)
    return Taken(interaction.pk, turn.pk)


@dataclass(frozen=True)
class AnswerWork:
    """What an answer turn carries to the agent's paused task."""

    question: Question
    answers: Answers


def answer_of(turn_id: int) -> AnswerWork | None:
    interaction = (
        Interaction.objects.filter(answer_turn_id=turn_id, kind=Interaction.Kind.QUESTION)
        .select_related("answer_turn")
        .first()
    )
    if interaction is None or interaction.answer_turn is None:
        return None
    return AnswerWork(Question.from_dict(interaction.pause), interaction.answer_turn.answers or [])


def close_prompt(interaction_id: int) -> bool:
    """Rewrites an ended Interaction's prompt to say how it ended, its controls removed. Safe to repeat
    (``chat.update`` shows the same however often it is sent). False when there is nothing to close."""
    interaction = (
        Interaction.objects.select_related("session__connection", "answer_turn")
        .filter(pk=interaction_id)
        .first()
    )
    if interaction is None or interaction.state == Interaction.State.OPEN:
        return False
    rewrite_prompt(interaction)
    Interaction.objects.filter(pk=interaction_id).update(closed_at=timezone.now())
    return True


def close_owed_prompt(interaction_id: int, attempt: int) -> closings.Outcome:
    """Try ``attempt`` at a prompt's owed rewrite (closings.py): taken once, then the prompt rewritten
    as its Interaction stands now. A Slack failure puts the rewrite off; anything else is a bug and
    raises (the row stays owed: the sweep tries it again once overdue, up to the last try)."""
    if not closings.claim(interaction_id, attempt):
        return closings.Outcome.STALE
    try:
        close_prompt(interaction_id)
    except SlackError as exc:
        outcome = closings.put_off(interaction_id, attempt)
        log = logger.error if outcome is closings.Outcome.GAVE_UP else logger.warning
        log(
            "interaction.prompt_not_closed",
            extra={"interaction_id": interaction_id, "attempt": attempt, "error": error_name(exc)},
        )
        return outcome
    except Exception:
        if attempt + 1 >= closings.RETRIES:  # a bug is not retried for ever either
            closings.finished(interaction_id, attempt)
        raise
    closings.finished(interaction_id, attempt)
    return closings.Outcome.CLOSED


def rewrite_prompt(interaction: Interaction) -> None:
    """The prompt, once its Interaction ended: the questions, and a line that says how it ended."""
    if not interaction.prompt_ts:
        return  # never posted
    if interaction.kind == Interaction.Kind.APPROVAL:
        _rewrite_approval_prompt(interaction)
        return
    question = Question.from_dict(interaction.pause)
    if interaction.state == Interaction.State.ANSWERED and interaction.answered_at is not None:
        line = prompts.answered_line(interaction.answered_by, interaction.answered_at) + _waiting(interaction)
    else:
        line = prompts.TIMED_OUT_LINE
    connection = interaction.session.connection
    web_client(connection.bot_token(), workspace=connection_workspace(connection.pk)).chat_update(
        channel=interaction.channel_id,
        ts=interaction.prompt_ts,
        blocks=prompts.closed_prompt(question, line),
        text=prompts.fallback_text(question),
    )


def _rewrite_approval_prompt(interaction: Interaction) -> None:
    """An approval's prompt once it ended: each tool's verdict, or the timed-out ending."""
    request = ApprovalRequest.from_dict(interaction.pause)
    if interaction.state == Interaction.State.ANSWERED and interaction.answered_at is not None:
        turn = interaction.answer_turn
        verdicts = [bool(verdict) for verdict in (turn.answers if turn is not None else None) or []]
        at = interaction.answered_at
        blocks = approval_prompts.decided_prompt(
            request,
            verdicts,
            approval_prompts.decided_line(
                interaction.answered_by, int(at.timestamp()), f"{at:%Y-%m-%d %H:%M}"
            )
            + _waiting(interaction),
        )
    else:
        blocks = approval_prompts.timed_out_prompt(request)
    connection = interaction.session.connection
    web_client(connection.bot_token(), workspace=connection_workspace(connection.pk)).chat_update(
        channel=interaction.channel_id,
        ts=interaction.prompt_ts,
        blocks=blocks,
        text=approval_prompts.fallback_text(request),
    )


def _waiting(interaction: Interaction) -> str:
    """The line an answer or decision the agent has not taken yet adds to the prompt (kept_answers.py)."""
    if not kept_answers.is_waiting(interaction.pk):
        return ""
    return " " + kept_answers.waiting_line(interaction.deadline)


def claim_timeouts(*, now: datetime | None = None) -> int:
    """Marks every open question past its deadline timed out (a conditional update: an answer that
    wins meanwhile keeps it); how many. Approvals time out step by step (approvals.py)."""
    now = now or timezone.now()
    timed_out = Interaction.objects.filter(
        kind=Interaction.Kind.QUESTION, state=Interaction.State.OPEN, deadline__lte=now
    ).update(state=Interaction.State.TIMED_OUT)
    metrics.interactions_timed_out(Interaction.Kind.QUESTION.value, timed_out)
    return timed_out


def timed_out_to_close() -> list[Interaction]:
    """Timed-out questions whose task, prompt and thread are not yet all told (a sweep that stopped
    half-way leaves them here)."""
    return list(
        Interaction.objects.filter(
            kind=Interaction.Kind.QUESTION, state=Interaction.State.TIMED_OUT, closed_at=None
        )
        .select_related("turn", "session__binding", "session__connection")
        .order_by("deadline")
    )


def mark_closed(interaction_id: int) -> None:
    Interaction.objects.filter(pk=interaction_id).update(closed_at=timezone.now())
