"""Runs a session's turns against its agent and writes the answers into the thread.

One runner per session at a time, settled by a lease in the database; the runner renews it while
a turn runs, and a runner that dies leaves it to expire so another takes the session over.
"""

import asyncio
import logging
import os
import socket
import uuid
from dataclasses import dataclass

from asgiref.sync import sync_to_async

from kourier.a2a import errors as a2a_errors
from kourier.a2a.client import A2AClient
from kourier.a2a.dialects import dialect_for
from kourier.a2a.events import TaskEnded, TaskStarted, TextDelta
from kourier.a2a.wire import Message, TextPart
from kourier.slack.clients import async_web_client
from kourier.slack.people import person_name
from kourier.slack.writer import ReplyTarget, SlackReply, post_notice, remove_reaction

from . import notices, services
from .prompts import Author, Note, build_turn_text, strip_bot_mention

logger = logging.getLogger(__name__)

LEASE_SECONDS = 60
# Reconnections to one task after its stream dropped, before the turn is given up.
MAX_FOLLOW_ATTEMPTS = 5
# Sends of one message while the agent cannot be reached at all.
MAX_SEND_ATTEMPTS = 3
RETRY_BACKOFF_SECONDS = 1.0

TERMINAL_FAILURES = {
    "failed": notices.TASK_FAILED,
    "rejected": notices.TASK_REJECTED,
    "canceled": notices.TASK_CANCELED,
}


def _db(fn):
    return sync_to_async(fn, thread_sensitive=False)


def runner_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


async def run_session(session_id: int) -> None:
    owner = runner_identity()
    while await _db(services.claim_lease)(session_id, owner, seconds=LEASE_SECONDS):
        try:
            while (turn := await _db(services.next_queued_turn)(session_id)) is not None:
                if not await _run_turn_with_lease(session_id, turn.pk, owner):
                    return  # the lease was lost: another runner has the session now
        finally:
            await _db(services.release_lease)(session_id, owner)
        # A turn queued between the last look and the release found the lease taken; look once more.
        if not await _db(services.has_pending_turns)(session_id):
            return


async def _run_turn_with_lease(session_id: int, turn_id: int, owner: str) -> bool:
    turn_task = asyncio.create_task(run_turn(turn_id))
    while True:
        done, _ = await asyncio.wait({turn_task}, timeout=LEASE_SECONDS / 3)
        if done:
            turn_task.result()
            return True
        if not await _db(services.renew_lease)(session_id, owner, seconds=LEASE_SECONDS):
            logger.warning("session.lease_lost", extra={"session_id": session_id, "turn_id": turn_id})
            turn_task.cancel()
            return False


@dataclass
class TurnOutcome:
    outcome: str
    notice: str | None = None
    forget_context: bool = False

    @property
    def failed(self) -> bool:
        return self.notice is not None


async def run_turn(turn_id: int) -> None:
    work = await _db(services.start_turn)(turn_id)
    if work is None:
        return
    slack = async_web_client(work.bot_token)
    reply = SlackReply(
        slack,
        ReplyTarget(
            channel_id=work.channel_id,
            thread_ts=work.thread_ts,
            recipient_user_id=work.user_id or None,
            recipient_team_id=work.team_id or None,
            reply_key=work.message_id,
        ),
        live=work.live,
        stream=True,
    )
    logger.info("turn.started", extra={"turn_id": turn_id, "binding": work.binding_name, "resumed": work.resumed})
    try:
        outcome = await _converse(work, reply, slack)
    except Exception:
        logger.exception("turn.crashed", extra={"turn_id": turn_id})
        outcome = TurnOutcome("crashed", notices.TASK_FAILED)
    if reply.ts:
        await _db(services.record_reply)(turn_id, reply.ts)
    if outcome.notice:
        await post_notice(slack, work.channel_id, work.thread_ts, outcome.notice)
    if outcome.forget_context:
        await _db(services.forget_context)(work.session_id)
    remove_ack = await _db(services.finish_turn)(turn_id, outcome=outcome.outcome, failed=outcome.failed)
    if remove_ack and work.acknowledgment_emoji:
        await remove_reaction(slack, work.channel_id, work.message_ts, work.acknowledgment_emoji)
    logger.info("turn.ended", extra={"turn_id": turn_id, "outcome": outcome.outcome})


async def _turn_text(work: services.TurnWork, slack) -> str:
    names = {
        user_id: await person_name(slack, work.team_id, user_id)
        for user_id in {work.user_id, *(user for user, _ in work.notes)}
    }
    return build_turn_text(
        Author(work.user_id, names[work.user_id]),
        strip_bot_mention(work.text, work.bot_user_id),
        [Note(Author(user, names[user]), text) for user, text in work.notes],
    )


async def _converse(work: services.TurnWork, reply: SlackReply, slack) -> TurnOutcome:
    dialect = dialect_for(work.agent.dialect)
    reader = dialect.reader()
    text = ""
    task_id = work.task_id
    async with A2AClient(
        work.agent.url,
        headers=work.agent.headers,
        protocol_version=work.agent.protocol_version,
        extensions=dialect.extensions,
    ) as agent:
        message = Message(
            message_id=work.message_id,
            role="user",
            parts=(TextPart(await _turn_text(work, slack)),),
            context_id=work.context_id or None,
        )
        stream = None
        for attempt in range(1, MAX_FOLLOW_ATTEMPTS + 1):
            try:
                if stream is None:
                    stream = agent.send_streaming(message) if not task_id else agent.subscribe(task_id)
                async for wire_event in stream:
                    for event in reader.feed(wire_event):
                        if isinstance(event, TaskStarted):
                            if event.task_id != task_id:
                                task_id = event.task_id
                                await _db(services.record_task)(
                                    work.turn_id, work.session_id, task_id=event.task_id, context_id=event.context_id
                                )
                        elif isinstance(event, TextDelta):
                            text = event.text if event.replace else text + event.text
                            await reply.show(text)
                        elif isinstance(event, TaskEnded):
                            return await _end(agent, reply, text, event, task_id, work)
                raise a2a_errors.StreamDropped("the stream ended before the task did")
            except a2a_errors.TaskNotFound:
                await reply.stop()
                return TurnOutcome("gone", notices.CONVERSATION_GONE, forget_context=True)
            except a2a_errors.InvalidAgentResponse:
                await reply.stop()
                return TurnOutcome("garbled", notices.AGENT_GARBLED)
            except a2a_errors.A2AError as exc:
                if not exc.retryable or attempt == MAX_FOLLOW_ATTEMPTS:
                    await reply.stop()
                    return TurnOutcome("unreachable", notices.AGENT_UNREACHABLE)
                logger.info(
                    "turn.agent_retry",
                    extra={"turn_id": work.turn_id, "attempt": attempt, "error": type(exc).__name__},
                )
                await asyncio.sleep(RETRY_BACKOFF_SECONDS * attempt)
                stream = None
                if task_id:
                    # The agent has the task: ask where it got to, then follow it again.
                    snapshot = await agent.get_task(task_id)
                    for event in reader.feed(snapshot):
                        if isinstance(event, TextDelta):
                            text = event.text if event.replace else text + event.text
                        elif isinstance(event, TaskEnded):
                            return await _end(agent, reply, text, event, task_id, work)
                    await reply.show(text)
        await reply.stop()
        return TurnOutcome("unreachable", notices.AGENT_UNREACHABLE)


async def _end(agent, reply: SlackReply, text: str, ended: TaskEnded, task_id: str | None, work) -> TurnOutcome:
    if ended.state == "completed":
        await reply.finish(text)
        return TurnOutcome("completed")
    if ended.state == "input-required":
        # Questions to the channel are a later feature: until askUser, the task is cancelled (spec).
        if task_id:
            try:
                await agent.cancel_task(task_id)
            except a2a_errors.A2AError as exc:
                logger.info("turn.cancel_failed", extra={"turn_id": work.turn_id, "error": type(exc).__name__})
        await reply.stop()
        return TurnOutcome("question-canceled", notices.QUESTION_NOT_ENABLED)
    await reply.stop()
    return TurnOutcome(ended.state, TERMINAL_FAILURES.get(ended.state, notices.TASK_FAILED))
