"""The interactions app's sweep (kourier/sweeps.py): questions nobody answered in time."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync

from kourier.a2a.dialects import dialect_for
from kourier.a2a.errors import A2AError
from kourier.a2a.events import Question
from kourier.a2a.factory import make_client
from kourier.queue import enqueue_after_commit
from kourier.slack.clients import async_web_client, connection_workspace
from kourier.slack.outbox import notice_key, post_notice
from kourier.sweeps import Swept, sweep
from sessions import notices
from sessions.outbox import TurnOutbox
from sessions.queue import DRIVE_SESSION

from . import services
from .models import Interaction

logger = logging.getLogger(__name__)


@sweep("time-out-interactions")
def time_out_interactions() -> Swept:
    """At an open question's deadline: cancels the paused task, closes the prompt (controls removed, a
    line that says it timed out) and tells the thread, once; then the replies that waited are run.

    Each step can be repeated: run twice, or after a run that stopped half-way, the thread is told once
    (the notice is in the outbox under the asking turn's key)."""
    timed_out = services.claim_timeouts()
    closed = 0
    for interaction in services.timed_out_to_close():
        try:
            _cancel_task(interaction)
            services.rewrite_prompt(interaction)
            _tell_thread(interaction)
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
    return Swept({"questions timed out": timed_out, "prompts closed": closed})


def _cancel_task(interaction: Interaction) -> None:
    binding = interaction.session.binding
    if binding is None:
        return
    question = Question.from_dict(interaction.pause)
    dialect = dialect_for(binding.dialect)

    async def cancel() -> None:
        async with make_client(
            binding.agent_url,
            headers=binding.agent_headers_resolved(),
            protocol_version=binding.protocol_version,  # type: ignore[arg-type]  # validated on apply
            extensions=dialect.extensions,
        ) as agent:
            await agent.cancel_task(question.task_id)

    try:
        async_to_sync(cancel)()
    except A2AError as exc:
        # An agent that cannot cancel a paused task (kagent 0.10) leaves it paused; the session goes on
        # with a task of its own at the next reply.
        logger.info(
            "interaction.cancel_failed", extra={"interaction_id": interaction.pk, "error": type(exc).__name__}
        )


def _tell_thread(interaction: Interaction) -> None:
    connection = interaction.session.connection
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    async_to_sync(post_notice)(
        client,
        interaction.channel_id,
        interaction.session.thread_ts,
        notices.QUESTION_TIMED_OUT,
        key=notice_key(interaction.turn.message_id, "timed-out"),
        outbox=TurnOutbox(interaction.turn_id),
    )
