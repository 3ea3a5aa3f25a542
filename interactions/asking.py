"""Putting a paused task's question or approval request to the thread, one way whatever its kind: the
Interaction opened, its prompt posted once, with one failure policy (a prompt Slack refuses for now
is kept and posted by the sweep; one that cannot be shown, or that Slack refuses for good, is refused
and its task cancelled); a pause nobody is asked, its task cancelled; and what the answer turn then
sends to the task.

``Asking`` is the session core's ``Pauses`` (sessions/pauses.py), handed in at start-up
(interactions/apps.py): the runner calls it when a turn's task pauses to ask and the Binding has
askUser (or, for an approval, toolApprovals). A runner that dies half-way is followed by one that
reads the same pause again and lands here again: the Interaction is the turn's one, and the prompt's
post is in the outbox under the turn's key.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from kourier.a2a.dialects import Dialect
from kourier.a2a.events import AnswerFormat, ApprovalRequest, Decision
from kourier.a2a.wire import Message
from kourier.db import in_database_thread
from kourier.slack.alerts import message_link, workspace_url
from kourier.slack.clients import SlackError, error_name, may_pass
from kourier.slack.outbox import PostKind, notice_key, post_once, prompt_metadata
from kourier.slack.people import person_name
from sessions.agent_text import Author, build_turn_text
from sessions.models import Session, Turn
from sessions.outbox import TurnOutbox
from sessions.pauses import AnswerTurn, Pause, PausedTurn, PauseEnd, UndeliveredAnswer

from . import approval_prompts, approvals, cancellations, kept_answers, questions, services
from .models import Interaction
from .registry import KINDS

logger = logging.getLogger(__name__)


class Put(enum.Enum):
    """What became of a pause put to the thread."""

    POSTED = "posted"  # its prompt waits in the thread (or it was decided already)
    DEFERRED = "deferred"  # Slack refused the post for now: the sweep posts it (the Interaction waits)
    UNUSABLE = "unusable"  # it cannot be shown, or Slack refused it for good: the task is to be cancelled


@dataclass(frozen=True)
class PutPause:
    outcome: Put
    interaction_id: int
    reason: str = ""  # why it is unusable: a fixed token


def open_pause(turn_id: int, pause: Pause) -> Interaction:
    """The turn's Interaction for its pause, opened as its kind opens one; the same when called again."""
    if isinstance(pause, ApprovalRequest):
        return approvals.open_approval(turn_id, pause)
    return questions.open_question(turn_id, pause)


async def put_pause(slack, *, turn_id: int, thread_ts: str, reply_key: str, pause: Pause) -> PutPause:
    """Opens the turn's Interaction and posts its prompt once, whatever its kind: one failure policy.
    A prompt that cannot be shown exactly (never truncated), or that Slack refuses for good, is
    ``UNUSABLE``; one Slack refuses for now is ``DEFERRED``, left open for the sweep to post."""
    interaction = await in_database_thread(open_pause)(turn_id, pause)
    if interaction.state == Interaction.State.CANCELLED:
        return PutPause(Put.UNUSABLE, interaction.pk, "refused-before")  # a restart: cancel again only
    if interaction.prompt_ts or (
        interaction.state != Interaction.State.OPEN and not approvals.denied_whole_by_policy(interaction)
    ):
        return PutPause(Put.POSTED, interaction.pk)
    return await post_prompt(slack, interaction, thread_ts=thread_ts, reply_key=reply_key)


async def post_prompt(slack, interaction: Interaction, *, thread_ts: str, reply_key: str) -> PutPause:
    """Posts an Interaction's prompt once (its key in the outbox): by the runner that opened it, or by
    the sweep after Slack refused it for now."""
    kind = KINDS[interaction.kind]
    shown = await in_database_thread(kind.open_prompt)(interaction)  # it reads the Binding's options
    if isinstance(shown, approval_prompts.Unshowable):
        return PutPause(Put.UNUSABLE, interaction.pk, shown.reason)
    blocks, text = shown
    key = f"{reply_key}:prompt"
    try:
        ts = await post_once(
            slack,
            interaction.channel_id,
            thread_ts,
            key=key,
            kind=PostKind.PROMPT,
            metadata=prompt_metadata(key),
            outbox=TurnOutbox(interaction.turn_id),
            blocks=blocks,
            text=text,
        )
    except SlackError as exc:
        if approvals.denied_whole_by_policy(interaction):
            # Decided already, the decision queued: the ended prompt only tells the thread. No retry.
            logger.warning(
                "interaction.policy_prompt_not_posted",
                extra={"interaction_id": interaction.pk, "error": error_name(exc)},
            )
            return PutPause(Put.POSTED, interaction.pk)
        if may_pass(exc):
            logger.warning(
                "interaction.prompt_deferred",
                extra={"interaction_id": interaction.pk, "kind": interaction.kind, "error": error_name(exc)},
            )
            return PutPause(Put.DEFERRED, interaction.pk)
        logger.warning(
            "interaction.prompt_refused",
            extra={"interaction_id": interaction.pk, "kind": interaction.kind, "error": error_name(exc)},
        )
        return PutPause(Put.UNUSABLE, interaction.pk, "prompt-refused")
    await in_database_thread(services.record_prompt)(interaction.pk, ts)
    if interaction.kind == Interaction.Kind.APPROVAL:
        await _copy_to_approvals_channel(slack, interaction, blocks, text, prompt_ts=ts)
    return PutPause(Put.POSTED, interaction.pk)


async def _copy_to_approvals_channel(
    slack, interaction: Interaction, blocks: list[dict[str, Any]], text: str, *, prompt_ts: str
) -> None:
    """A direct message's approval, also put to the Binding's approvalsChannel with a link to the
    conversation: an approver outside it could not see the prompt. Either prompt decides; a copy Slack
    refuses leaves the one in the conversation (logged)."""
    copy = await in_database_thread(services.copy_channel_of)(interaction.pk)
    if copy is None:
        return
    channel, person = copy
    try:
        link = message_link(await workspace_url(slack), interaction.channel_id, prompt_ts)
        where = f"<{link}|a direct message>" if link else "a direct message"
        context = {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"Asked in {where} with <@{person}>."}],
        }
        response = await slack.chat_postMessage(channel=channel, blocks=[context, *blocks], text=text)
    except SlackError as exc:
        logger.warning(
            "interaction.prompt_copy_not_posted",
            extra={"interaction_id": interaction.pk, "error": error_name(exc)},
        )
        return
    await in_database_thread(services.record_copy)(interaction.pk, channel, response["ts"])


class Asking:
    """The pauses people settle, as the session core sees them (sessions/pauses.py)."""

    async def put(self, turn: PausedTurn, pause: Pause) -> PauseEnd:
        """The pause goes to the thread (askUser, toolApprovals). One that cannot be shown, or that
        Slack refuses for good, is refused whatever its kind: the notice queued and the Interaction
        closed before the task is cancelled, so a restart retries only the cancellation (as the sweep
        does while the agent cannot be reached: cancellations.py)."""
        put = await put_pause(
            turn.slack, turn_id=turn.turn_id, thread_ts=turn.thread_ts, reply_key=turn.reply_key, pause=pause
        )
        if put.outcome is not Put.UNUSABLE:
            return PauseEnd(Turn.Outcome.ASKED)
        notice = KINDS[_kind_of(pause)].unusable_notice
        await TurnOutbox(turn.turn_id).intend(notice_key(turn.reply_key), PostKind.NOTICE, notice)
        await in_database_thread(services.refuse)(put.interaction_id, put.reason)
        if await turn.cancel():
            await in_database_thread(cancellations.mark_cancelled)(put.interaction_id)
        return PauseEnd(Turn.Outcome.QUESTION_UNUSABLE, notice)

    async def cancel_unasked(self, turn: PausedTurn, *, approval: bool) -> None:
        if await turn.cancel():
            return
        kind = Interaction.Kind.APPROVAL if approval else Interaction.Kind.QUESTION
        await in_database_thread(cancellations.keep_unasked)(turn.turn_id, kind, turn.task_id)

    async def answer_message(self, work: AnswerTurn, dialect: Dialect) -> Message:
        decision = await in_database_thread(approvals.decision_of)(work.turn_id)
        if decision is not None:
            # Denials carry the dialect's fixed reason, never anything a person typed, unless the
            # Binding asks a reason with a denial (denyReasons): then the person's, redacted.
            reason = dialect.timeout_denial_reason if decision.timed_out else dialect.denial_reason
            if decision.reason and not decision.timed_out:
                reason = decision.reason
            decisions = {
                tool.approval_id: Decision(
                    approved=approved,
                    reason=None
                    if approved
                    else dialect.policy_denial_reason
                    if index in decision.denied_by_policy
                    else reason,
                )
                for index, (tool, approved) in enumerate(
                    zip(decision.request.tools, decision.verdicts, strict=True)
                )
            }
            return dialect.decision_message(decision.request, decisions, message_id=work.message_id)
        answer = await in_database_thread(questions.answer_of)(work.turn_id)
        if answer is None:
            raise LookupError(f"answer turn {work.turn_id} has no Interaction")
        answers = answer.answers
        if answer.question.answer_format is AnswerFormat.TEXT:
            # A text answer is a person's words to the agent: it carries who wrote it, as any turn does.
            name = await person_name(work.slack, work.team_id, work.user_id)
            answers = [
                [build_turn_text(Author(work.user_id, name), text) for text in answer_list]
                for answer_list in answers
            ]
        return dialect.answer_message(answer.question, answers, message_id=work.message_id)

    def awaits_typed_reply(self, session_id: int) -> bool:
        return questions.awaits_typed_answer(session_id)

    def take_typed_reply(
        self, session: Session, *, message_ts: str, user_id: str, text: str, now: datetime
    ) -> int | None:
        taken = questions.take_typed_answer(
            session, message_ts=message_ts, user_id=user_id, text=text, now=now
        )
        return taken.turn_id if taken is not None else None

    def holds(self, session_id: int, *, now: datetime) -> Q:
        open_pause = Interaction.objects.filter(session_id=session_id, state=Interaction.State.OPEN)
        return Q(Exists(open_pause)) | Q(Exists(kept_answers.holding_back(session_id, now=now)))

    def held_sessions(self) -> QuerySet[Any]:
        now = timezone.now()
        return Session.objects.filter(
            Exists(Interaction.objects.filter(session=OuterRef("pk"), state=Interaction.State.OPEN))
            | Exists(kept_answers.not_due(now).filter(session_id=OuterRef("pk")))
        ).values("pk")

    def keep_undelivered(self, turn_id: int) -> UndeliveredAnswer:
        return kept_answers.keep(turn_id)

    def settle_answer(self, turn_id: int) -> None:
        kept_answers.settle(turn_id)


def _kind_of(pause: Pause) -> Interaction.Kind:
    return Interaction.Kind.APPROVAL if isinstance(pause, ApprovalRequest) else Interaction.Kind.QUESTION
