"""The interactions app's sweeps (kourier/sweeps.py): questions nobody answered in time, approvals
nobody decided in time, and the work a failure left behind, whatever the pause's kind (a prompt
Slack refused for now, a paused task the agent could not be reached to cancel, kept presses, owed
prompt rewrites, kept answers)."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync

from kourier.a2a.dialects import dialect_for
from kourier.a2a.factory import make_client
from kourier.a2a.follow import Cancelled, cancel_paused_task
from kourier.queue import enqueue_after_commit
from kourier.slack.clients import SlackError, async_web_client, connection_workspace, error_name
from kourier.slack.outbox import PostKind, notice_key, post_notice
from kourier.sweeps import Swept, sweep
from sessions import notices
from sessions.outbox import TurnOutbox
from sessions.task_names import DRIVE_SESSION

from . import (
    approvals,
    asking,
    cancellations,
    closings,
    kept_answers,
    kept_presses,
    questions,
    reminders,
    services,
)
from .models import Interaction
from .registry import KINDS

logger = logging.getLogger(__name__)


def _timed_out_notice(interaction: Interaction, nobody_took_it: str) -> str:
    """What the thread is told at the deadline: nobody answered or decided, or a person did and the
    agent could not be reached to take it (kept_answers.py gave it up: ``answered_by`` is kept)."""
    if not interaction.answered_by:
        return nobody_took_it
    if interaction.kind == Interaction.Kind.APPROVAL:
        return notices.DECISION_UNDELIVERED
    return notices.ANSWER_UNDELIVERED


@sweep("time-out-interactions")
def time_out_interactions() -> Swept:
    """At an open question's deadline: cancels the paused task, closes the prompt (controls removed, a
    line that says it timed out) and tells the thread, once; then the replies that waited are run.
    At an approval's: audited, every tool denied, the prompt closed and the thread told. And, for
    either kind, what a failure left: the paused tasks still to cancel, the prompts still to post.

    Each step can be repeated: run twice, or after a run that stopped half-way, the thread is told once
    (the notice is in the outbox under the asking turn's key)."""
    # First the tasks owed a cancellation by earlier runs: a question timed out below tries its own.
    cancelled = _cancel_owed_tasks()
    timed_out = questions.claim_timeouts()
    closed = 0
    for interaction in questions.timed_out_to_close():
        try:
            if interaction.task_cancelled_at is None and _cancel_for_good(interaction):
                cancellations.mark_cancelled(interaction.pk)
            services.rewrite_prompt(interaction, questions.QUESTION)
            _tell_thread(interaction, _timed_out_notice(interaction, notices.QUESTION_TIMED_OUT))
        except Exception as exc:  # Slack or the database failed: the next run takes it again
            logger.warning(
                "interaction.timeout_unfinished",
                extra={"interaction_id": interaction.pk, "error": type(exc).__name__},
            )
            continue
        services.mark_closed(interaction.pk)
        enqueue_after_commit(DRIVE_SESSION, interaction.session_id)
        logger.info("interaction.timed_out", extra={"interaction_id": interaction.pk})
        closed += 1
    left_behind = {
        **_approvals(),
        "paused tasks cancelled": cancelled,
        "prompts posted": sum(_post_prompt(interaction) for interaction in services.unposted_prompts()),
    }
    # A run with nothing left behind says only what the spec's sweep does.
    return Swept(
        {
            "questions timed out": timed_out,
            "prompts closed": closed,
            **{what: count for what, count in left_behind.items() if count},
        }
    )


def _cancel_owed_tasks() -> int:
    """Cancels the paused tasks still owed a cancellation (cancellations.py); how many were settled."""
    cancelled = 0
    for interaction in cancellations.owed():
        if _cancel_for_good(interaction):
            cancellations.mark_cancelled(interaction.pk)
            cancelled += 1
    return cancelled


@sweep("retry-kept-presses")
def retry_kept_presses() -> Swept:
    """Sends again the tries of kept presses whose worker died holding them (kept_presses.py)."""
    return Swept({"kept presses tried again": kept_presses.RETRIES.send_overdue()})


@sweep("close-owed-prompts")
def close_owed_prompts() -> Swept:
    """Sends again the rewrites of decided or answered prompts whose message was lost (a Redis that
    lost its data) or whose worker died holding it (closings.py)."""
    return Swept({"prompt rewrites sent again": closings.RETRIES.send_overdue()})


@sweep("remind-approvers")
def remind_approvers() -> Swept:
    """Reminds the approvers of open tool approvals whose Binding sets remindBefore, once each, that
    long before the deadline (reminders.py)."""
    return Swept({"approvers reminded": sum(reminders.remind(pk) for pk in reminders.due())})


@sweep("deliver-kept-answers")
def deliver_kept_answers() -> Swept:
    """Sends again the answers and decisions the agent could not be reached to take, once due; past
    their Interaction's deadline, gives them up as a timeout (kept_answers.py), which
    time-out-interactions then cancels and tells the thread."""
    driven, expired = kept_answers.send_due()
    return Swept({"kept answers sent again": driven, "kept answers given up": expired})


def _approvals() -> dict[str, int]:
    """At an approval's deadline: its timeout audited first, then every tool denied through the
    dialect (the denial is the Interaction's answer turn), the prompt given its timed-out ending and
    the thread told, each step safe to repeat."""
    timed_out = superseded = closed = 0
    for interaction_id in approvals.open_approvals_past_deadline():
        try:
            approvals.audit_timeout(interaction_id)
        except Exception as exc:
            logger.warning(
                "interaction.timeout_not_audited",
                extra={"interaction_id": interaction_id, "error": type(exc).__name__},
            )
            continue
        if approvals.claim_timeout(interaction_id):
            timed_out += 1
            continue
        # A person's decision won the race after the timeout's audit: the audit is corrected, appended.
        try:
            approvals.supersede_timeout(interaction_id)
            superseded += 1
        except Exception as exc:
            logger.error(
                "interaction.supersede_not_audited",
                extra={"interaction_id": interaction_id, "error": type(exc).__name__},
            )
    for interaction in approvals.timed_out_to_close():
        try:
            approvals.audit_timeout(interaction.pk)  # recovery: written if a sweep stopped before it
            approvals.queue_timeout_denial(interaction.pk)
            services.rewrite_prompt(interaction, approvals.APPROVAL)
            _tell_thread(interaction, _timed_out_notice(interaction, notices.APPROVAL_TIMED_OUT))
        except Exception as exc:
            logger.warning(
                "interaction.timeout_unfinished",
                extra={"interaction_id": interaction.pk, "error": type(exc).__name__},
            )
            continue
        services.mark_closed(interaction.pk)
        logger.info("interaction.timed_out", extra={"interaction_id": interaction.pk})
        closed += 1
    return {
        "approvals timed out": timed_out,
        "timeouts superseded": superseded,
        "approval prompts closed": closed,
    }


def _cancel_for_good(interaction: Interaction) -> bool:
    """Cancels a pause's task; False when the agent could not be reached (tried again next run)."""
    cancelled = _cancel(interaction)
    if not cancelled.settled:
        logger.warning(
            "interaction.cancel_deferred", extra={"interaction_id": interaction.pk, "error": cancelled.error}
        )
        return False
    if cancelled.error:  # the agent refuses (the task has ended, or it cannot cancel): nothing left to do
        logger.info(
            "interaction.cancel_failed", extra={"interaction_id": interaction.pk, "error": cancelled.error}
        )
    return True


def _post_prompt(interaction: Interaction) -> int:
    connection = interaction.session.connection
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    put = async_to_sync(asking.post_prompt)(
        client, interaction, thread_ts=interaction.session.thread_ts, reply_key=interaction.turn.message_id
    )
    if put.outcome is asking.Put.UNUSABLE:
        refuse_unusable(interaction, put.reason)
    return int(put.outcome is asking.Put.POSTED)


def refuse_unusable(interaction: Interaction, reason: str) -> None:
    """The refusal notice queued, the Interaction closed; the next run cancels the task."""
    notice = KINDS[interaction.kind].unusable_notice
    connection = interaction.session.connection
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    key = notice_key(interaction.turn.message_id)
    outbox = TurnOutbox(interaction.turn_id)
    async_to_sync(outbox.intend)(key, PostKind.NOTICE, notice)
    services.refuse(interaction.pk, reason)
    try:
        async_to_sync(post_notice)(
            client, interaction.channel_id, interaction.session.thread_ts, notice, key=key, outbox=outbox
        )
    except SlackError as exc:  # queued in the outbox: the owed-notices sweep posts it
        logger.warning(
            "interaction.notice_deferred", extra={"interaction_id": interaction.pk, "error": error_name(exc)}
        )


def _cancel(interaction: Interaction) -> Cancelled:
    binding = interaction.session.binding
    if binding is None:
        return Cancelled(settled=True)
    task_id = interaction.pause["task_id"]
    dialect = dialect_for(binding.dialect)

    async def cancel() -> Cancelled:
        async with make_client(
            binding.agent_url,
            headers=binding.agent_headers_resolved(),
            protocol_version=binding.protocol_version,  # type: ignore[arg-type]  # validated on apply
            extensions=dialect.extensions,
        ) as agent:
            return await cancel_paused_task(agent, task_id)

    return async_to_sync(cancel)()


def _tell_thread(interaction: Interaction, text: str) -> None:
    connection = interaction.session.connection
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    async_to_sync(post_notice)(
        client,
        interaction.channel_id,
        interaction.session.thread_ts,
        text,
        key=notice_key(interaction.turn.message_id, "timed-out"),
        outbox=TurnOutbox(interaction.turn_id),
    )
