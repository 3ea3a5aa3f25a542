"""Putting a paused task's question or approval request to the thread: the Interaction opened, its
prompt posted once.

Called by the runner when a turn's task pauses to ask and the Binding has askUser (or for approval
and has toolApprovals). A runner that dies
half-way is followed by one that reads the same pause again and lands here again: the Interaction is
the turn's one, and the prompt's post is in the outbox under the turn's key.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from kourier.a2a.events import ApprovalRequest, Question
from kourier.db import in_database_thread
from kourier.slack.clients import SlackError, error_name, may_pass
from kourier.slack.outbox import PostKind, post_once, prompt_metadata
from sessions.outbox import TurnOutbox

from . import approval_prompts, approvals, prompts, services
from .models import Interaction

logger = logging.getLogger(__name__)


async def put_question(
    slack, *, turn_id: int, channel_id: str, thread_ts: str, reply_key: str, question: Question
) -> int:
    """Opens the turn's Interaction and posts its prompt in the thread; the Interaction's id."""
    interaction = await in_database_thread(services.open_question)(turn_id, question)
    key = f"{reply_key}:prompt"
    try:
        ts = await post_once(
            slack,
            channel_id,
            thread_ts,
            key=key,
            kind=PostKind.PROMPT,
            metadata=prompt_metadata(key),
            outbox=TurnOutbox(turn_id),
            blocks=prompts.open_prompt(question, interaction.pk, typed_replies=interaction.typed_replies),
            text=prompts.fallback_text(question),
        )
    except Exception:
        await in_database_thread(services.give_up)(interaction.pk)
        raise
    await in_database_thread(services.record_prompt)(interaction.pk, ts)
    return interaction.pk


class Put(enum.Enum):
    """What became of an approval request put to the thread."""

    POSTED = "posted"  # its prompt waits in the thread (or was decided already)
    DEFERRED = "deferred"  # Slack refused the post for now: the sweep posts it (the Interaction waits)
    UNUSABLE = "unusable"  # it cannot be shown, or Slack refused it for good: the task is to be cancelled


@dataclass(frozen=True)
class PutApproval:
    outcome: Put
    interaction_id: int
    reason: str = ""


async def put_approval(
    slack, *, turn_id: int, channel_id: str, thread_ts: str, reply_key: str, request: ApprovalRequest
) -> PutApproval:
    """Opens the turn's approval Interaction and posts its prompt once. A prompt that cannot be shown
    exactly, or that Slack refuses for good, is ``UNUSABLE``; never truncated."""
    interaction = await in_database_thread(approvals.open_approval)(turn_id, request)
    if interaction.state == Interaction.State.CANCELLED:
        return PutApproval(Put.UNUSABLE, interaction.pk, "refused-before")  # a restart: cancel again only
    if interaction.state != Interaction.State.OPEN or interaction.prompt_ts:
        return PutApproval(Put.POSTED, interaction.pk)
    return await post_approval_prompt(slack, interaction, thread_ts=thread_ts, reply_key=reply_key)


async def post_approval_prompt(
    slack, interaction: Interaction, *, thread_ts: str, reply_key: str
) -> PutApproval:
    request = approvals.request_of(interaction)
    blocks = approval_prompts.open_prompt(request, interaction.pk)
    if isinstance(blocks, approval_prompts.Unshowable):
        return PutApproval(Put.UNUSABLE, interaction.pk, blocks.reason)
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
            text=approval_prompts.fallback_text(request),
        )
    except SlackError as exc:
        if may_pass(exc):
            logger.warning(
                "interaction.prompt_deferred",
                extra={"interaction_id": interaction.pk, "error": error_name(exc)},
            )
            return PutApproval(Put.DEFERRED, interaction.pk)
        logger.warning(
            "interaction.prompt_refused", extra={"interaction_id": interaction.pk, "error": error_name(exc)}
        )
        return PutApproval(Put.UNUSABLE, interaction.pk, "prompt-refused")
    await in_database_thread(services.record_prompt)(interaction.pk, ts)
    return PutApproval(Put.POSTED, interaction.pk)
