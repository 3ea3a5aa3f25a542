"""The agent's questions (askUser): the kind plugged into the one press path, and what only a
question does: opening one when a task pauses to ask, a reply typed in the thread as its answer,
the answer a turn carries, timing one out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from kourier import metrics
from kourier.a2a.events import AnswerFormat, Question
from sessions import notices
from sessions.models import Session, Turn

from . import kept_answers, prompts, services
from .answers import Answers, Incomplete, Mismatch, read_answers, read_typed_reply
from .audit import answer_shape
from .kinds import PauseKind, Reading, Refusal, ShownPrompt, Taken, Unfit
from .models import Interaction

logger = logging.getLogger(__name__)

ANSWERED = "interaction.answered"  # the audit's action and the log's event


def _read(interaction: Interaction, action_id: str, values: Mapping[str, Any]) -> Reading | Unfit:
    question = Question.from_dict(interaction.pause)
    answers = read_answers(question, values)
    if isinstance(answers, Mismatch):
        return Unfit(Refusal.MISMATCH, reason=answers.reason)
    if isinstance(answers, Incomplete):
        return Unfit(Refusal.INCOMPLETE, message=f"Your answer was not sent: {answers.message}")
    return Reading(answers, answer_shape(question, answers))


def _open_prompt(interaction: Interaction) -> ShownPrompt:
    question = Question.from_dict(interaction.pause)
    blocks = prompts.open_prompt(question, interaction.pk, typed_replies=interaction.typed_replies)
    return blocks, prompts.fallback_text(question)


def _ended_prompt(interaction: Interaction) -> ShownPrompt:
    question = Question.from_dict(interaction.pause)
    if interaction.state == Interaction.State.ANSWERED and interaction.answered_at is not None:
        line = prompts.answered_line(interaction.answered_by, interaction.answered_at) + kept_answers.waiting(
            interaction
        )
    else:
        line = prompts.TIMED_OUT_LINE
    return prompts.closed_prompt(question, line), prompts.fallback_text(question)


QUESTION = PauseKind(
    kind=Interaction.Kind.QUESTION,
    actions=(prompts.SUBMIT_ACTION,),
    taken=ANSWERED,
    turn_key="answer",
    refusals={
        Refusal.UNKNOWN: "This question is not one I can take an answer for.",
        Refusal.CLOSED: "This question is closed: it timed out or was cancelled, so the answer was not sent.",
        Refusal.TAKEN: "Someone answered this question already; your answer was not sent.",
        Refusal.MISMATCH: "This answer does not fit the question as it was asked, so it was not sent.",
        Refusal.NOT_A_MEMBER: "Only members of this channel can answer the agent's questions.",
        Refusal.MEMBERSHIP_UNKNOWN: (
            "I could not check that you are a member of this channel, so your answer was not sent. "
            "Try again in a moment."
        ),
    },
    read=_read,
    open_prompt=_open_prompt,
    ended_prompt=_ended_prompt,
    unusable_notice=notices.QUESTION_NOT_POSTED,
)


def open_question(turn_id: int, question: Question, *, now: datetime | None = None) -> Interaction:
    """Opens the Interaction of a turn whose task paused to ask; the same one when called again."""
    return services.open_interaction(
        turn_id,
        Interaction.Kind.QUESTION,
        question.to_dict(),
        typed_replies=question.answer_format is AnswerFormat.TEXT,
        now=now,
    )


def awaits_typed_answer(session_id: int) -> bool:
    """Whether the session's open question takes a reply typed in the thread as its answer."""
    return Interaction.objects.filter(
        session_id=session_id, state=Interaction.State.OPEN, typed_replies=True
    ).exists()


def take_typed_answer(
    session: Session, *, message_ts: str, user_id: str, text: str, now: datetime | None = None
) -> Taken | None:
    """A reply typed in a thread whose open question takes typed replies: the first reply is the answer.
    None when the thread has no such question open (the reply is then routed as any other). Its
    author was checked first, as a press's presser is (presses.typed_reply_author_may_answer)."""
    interaction = (
        Interaction.objects.select_related("session__binding")
        .filter(session=session, state=Interaction.State.OPEN, typed_replies=True)
        .first()
    )
    if interaction is None or not text.strip():
        return None
    question = Question.from_dict(interaction.pause)
    answers = read_typed_reply(question, text.strip())
    taken = services.take(
        QUESTION,
        interaction,
        Reading(answers, answer_shape(question, answers)),
        user_id,
        turn_key=message_ts,
        turn_kind=Turn.Kind.TYPED_ANSWER,
        text=text,
        now=now,
    )
    return taken if isinstance(taken, Taken) else None


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
