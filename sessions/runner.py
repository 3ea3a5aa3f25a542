"""Runs a session's turns against its agent and writes the answers into the thread.

One runner per session at a time, settled by a lease in the database; the runner renews it while
a turn runs, and a runner that dies leaves it to expire so another takes the session over.
"""

import asyncio
import logging
import os
import socket
import uuid
from contextlib import aclosing
from dataclasses import dataclass

from django.conf import settings
from slack_sdk.errors import SlackApiError

from kourier.a2a import errors as a2a_errors
from kourier.a2a import follow
from kourier.a2a.client import A2AClient
from kourier.a2a.dialects import Dialect, dialect_for
from kourier.a2a.events import AgentEvent, TaskEnded, TaskStarted, TextDelta
from kourier.a2a.factory import make_client
from kourier.a2a.wire import Message, Role, TaskState, TextPart
from kourier.db import in_database_thread
from kourier.progress import Card, CardStatus, Outcome, Progress, ThreadKind
from kourier.slack.clients import async_web_client, connection_workspace, may_pass
from kourier.slack.people import person_name
from kourier.slack.status import AssistantStatus
from kourier.slack.writer import (
    ReplyTarget,
    SlackReply,
    add_reaction,
    error_name,
    notice_key,
    post_notice,
    remove_reaction,
)

from . import notices, services
from .outbox import TurnOutbox
from .prompts import Author, Note, build_turn_text, strip_bot_mention

logger = logging.getLogger(__name__)

LEASE_SECONDS = settings.SESSION_LEASE_SECONDS

TERMINAL_FAILURES = {
    "failed": notices.TASK_FAILED,
    "rejected": notices.TASK_REJECTED,
    "canceled": notices.TASK_CANCELED,
}


def _db(fn):
    return in_database_thread(fn)


def runner_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


async def run_session(session_id: int) -> None:
    """Acknowledges the session's waiting turns, then runs them one at a time unless another runner
    holds the session's lease (that runner takes the new turns in order)."""
    await acknowledge_waiting_turns(session_id)
    await _run_session(session_id)


async def acknowledge_waiting_turns(session_id: int) -> None:
    """Adds the acknowledgment reaction to every turn of the session that waits or runs without one."""
    for ack in await _db(services.claim_acknowledgments)(session_id):
        slack = async_web_client(ack.bot_token, workspace=connection_workspace(ack.connection_id))
        try:
            await add_reaction(slack, ack.channel_id, ack.message_ts, ack.emoji)
        except Exception as exc:  # a Slack error, a timeout, a dropped connection
            # A reaction is a courtesy: the turn runs without it (one whose answer was lost may be on;
            # the turn's end removes it).
            logger.warning(
                "turn.acknowledgment_failed", extra={"turn_id": ack.turn_id, "error": error_name(exc)}
            )
            continue
        # The turn may have ended while the reaction was on its way; its runner then found nothing
        # to remove.
        if await _db(services.turn_is_over)(ack.turn_id):
            await remove_acknowledgment(slack, ack.turn_id, ack.channel_id, ack.message_ts, ack.emoji)


async def remove_acknowledgment(slack, turn_id: int, channel_id: str, message_ts: str, emoji: str) -> None:
    """Takes an ended turn's reaction off its message. A failure is logged, never raised: the session
    goes on to its next turn, and beat's recovery sweep tries again after a fault that may pass (a 5xx,
    a 429, a timeout). A refusal that will not pass (the message is gone) leaves nothing to remove."""
    try:
        await remove_reaction(slack, channel_id, message_ts, emoji)
    except Exception as exc:
        logger.warning(
            "turn.acknowledgment_not_removed", extra={"turn_id": turn_id, "error": error_name(exc)}
        )
        if may_pass(exc):
            return
    await _db(services.acknowledgment_removed)(turn_id)


async def _run_session(session_id: int) -> None:
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
        try:
            done, _ = await asyncio.wait({turn_task}, timeout=LEASE_SECONDS / 3)
        except asyncio.CancelledError:
            turn_task.cancel()
            await asyncio.gather(turn_task, return_exceptions=True)
            raise
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


class TurnDisplay:
    """What one turn shows in its thread while it runs.

    With output: live, every normalized event goes to the turn's ``Progress`` and its writes to the
    Slack reply; an asyncio timer at ``progress.deadline`` calls ``tick()`` (the Working… card or line,
    an alert thread's deferred update), re-armed after every event and tick. With output: final,
    nothing is shown until ``end`` posts the answer.
    """

    def __init__(self, reply: SlackReply, progress: Progress | None) -> None:
        self.reply = reply
        self.progress = progress
        self.text = ""
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False

    async def begin(self) -> None:
        await self.reply.begin()
        self._arm()

    def feed(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            self.text = event.text if event.replace else self.text + event.text
        if self.progress is not None and not self._ended:
            self.reply.write(self.progress.feed(event))
            self._arm()

    async def end(self, outcome: Outcome, *, notice_follows: bool = False) -> None:
        """Ends the reply: the last write, with every card closed as ``outcome`` says."""
        if self._ended:
            return
        self._ended = True
        self.close()
        if self.progress is None:
            if outcome is Outcome.COMPLETED:
                await self.reply.finish(self.text)
            else:
                await self.reply.stop()
            return
        await self.reply.end(self.progress.finish(outcome), notice_follows=notice_follows)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        self.close()
        if self.progress is None or self._ended:
            return
        deadline = self.progress.deadline
        if deadline is not None:
            # The progress clock is the loop's (see _display), so its deadline is a loop time.
            self._timer = asyncio.get_running_loop().call_at(deadline, self._on_deadline)

    def _on_deadline(self) -> None:
        self._timer = None
        if self.progress is None or self._ended:
            return
        self.reply.write(self.progress.tick())
        self._arm()


def _display(work: services.TurnWork, slack, turn_id: int) -> TurnDisplay:
    thread = ThreadKind.ALERT if work.thread_kind == ThreadKind.ALERT else ThreadKind.CHAT
    progress = Progress(work.progress, thread, clock=asyncio.get_running_loop().time) if work.live else None
    status = None
    if progress is not None and progress.uses_assistant_status:
        status = AssistantStatus(
            slack, work.channel_id, work.thread_ts, connection_key=str(work.connection_id)
        )
    chat = thread is ThreadKind.CHAT
    reply = SlackReply(
        slack,
        ReplyTarget(
            channel_id=work.channel_id,
            thread_ts=work.thread_ts,
            # A chat thread's stream is shown to the person who wrote; an alert thread has no one to
            # show a stream to, so its reply is posted and updated.
            recipient_user_id=(work.user_id or None) if chat else None,
            recipient_team_id=(work.team_id or None) if chat else None,
            reply_key=work.message_id,
        ),
        live=work.live,
        stream=chat,
        progress=progress,
        status=status,
        existing_ts=work.reply_ts or None,
        on_posted=lambda ts: _db(services.record_reply)(turn_id, ts),
        outbox=TurnOutbox(turn_id),
        adopted_cards=[Card(card_id, title, CardStatus.IN_PROGRESS) for card_id, title in work.stream_cards],
        on_stream_cards=lambda cards: _db(services.record_stream_cards)(
            turn_id, [{"id": card.id, "title": card.title} for card in cards]
        ),
    )
    return TurnDisplay(reply, progress)


async def run_turn(turn_id: int) -> None:
    work = await _db(services.start_turn)(turn_id)
    if work is None:
        return
    slack = async_web_client(work.bot_token, workspace=connection_workspace(work.connection_id))
    display = _display(work, slack, turn_id)
    logger.info(
        "turn.started", extra={"turn_id": turn_id, "binding": work.binding_name, "resumed": work.resumed}
    )
    try:
        await display.begin()
        outcome = await _converse(work, display, slack)
    except Exception:
        logger.exception("turn.crashed", extra={"turn_id": turn_id})
        outcome = TurnOutcome("crashed", notices.TASK_FAILED)
        try:
            await display.end(Outcome.FAILED, notice_follows=True)
        except Exception:
            logger.exception("turn.reply_not_ended", extra={"turn_id": turn_id})
    finally:
        display.close()
    if outcome.notice:
        try:
            await post_notice(
                slack,
                work.channel_id,
                work.thread_ts,
                outcome.notice,
                key=notice_key(work.message_id),
                outbox=TurnOutbox(turn_id),
            )
        except SlackApiError as exc:
            # The notice stays intended in the outbox: beat's sweep posts it once the turn has ended.
            logger.warning(
                "turn.notice_deferred", extra={"turn_id": turn_id, "error": exc.response.get("error")}
            )
    if outcome.forget_context:
        await _db(services.forget_context)(work.session_id)
    remove_ack = await _db(services.finish_turn)(turn_id, outcome=outcome.outcome, failed=outcome.failed)
    if remove_ack and work.acknowledgment_emoji:
        await remove_acknowledgment(
            slack, turn_id, work.channel_id, work.message_ts, work.acknowledgment_emoji
        )
    logger.info("turn.ended", extra={"turn_id": turn_id, "outcome": outcome.outcome})


async def _turn_text(work: services.TurnWork, slack) -> str:
    names = {
        user_id: await person_name(slack, work.team_id, user_id)
        for user_id in {work.user_id, *(user for user, _ in work.notes)}
        if user_id
    }
    return build_turn_text(
        # A trigger's turn (an alert) has no person: its text goes as "Slack: alert: ...".
        Author(work.user_id, names[work.user_id]) if work.user_id else None,
        strip_bot_mention(work.text, work.bot_user_id),
        [Note(Author(user, names[user]), text) for user, text in work.notes],
    )


class Conversation:
    """What one turn does with its agent's events: records the task, shows the reply, and decides how
    the turn ends (the A2A steps that bring the events are ``kourier.a2a.follow``)."""

    def __init__(
        self, work: services.TurnWork, display: TurnDisplay, agent: A2AClient, dialect: Dialect
    ) -> None:
        self.work = work
        self.display = display
        self.agent = agent
        self.reader = dialect.reader()
        self.task_id = work.task_id or None

    async def run(self, message: Message) -> TurnOutcome:
        try:
            ended = await self._follow(message)
        except follow.TaskGone:
            outcome = TurnOutcome("gone", notices.CONVERSATION_GONE, forget_context=True)
        except follow.AgentGarbled:
            outcome = TurnOutcome("garbled", notices.AGENT_GARBLED)
        except follow.RequestLost as lost:
            # Lost before this runner tried anything: an earlier one sent it and died.
            notice = notices.REQUEST_LOST if lost.failed_attempts == 0 else notices.AGENT_UNREACHABLE
            outcome = TurnOutcome("lost", notice)
        except follow.AgentOutOfReach:
            outcome = TurnOutcome("unreachable", notices.AGENT_UNREACHABLE)
        else:
            return await self._end(ended)
        await self.display.end(Outcome.FAILED, notice_follows=True)
        return outcome

    async def _follow(self, message: Message) -> TaskEnded:
        ended: TaskEnded | None = None
        events = follow.follow_turn(
            self.agent,
            self.reader,
            message,
            task_id=self.task_id,
            resumed=self.work.resumed,
            poll_timeout=settings.A2A_REQUEST_TIMEOUT,
        )
        async with aclosing(events):
            async for event in events:
                if isinstance(event, TaskStarted):
                    await self._note_task(event.task_id, event.context_id)
                elif isinstance(event, TaskEnded):
                    ended = event
                self.display.feed(event)
        assert ended is not None, "follow_turn ends with TaskEnded or raises"
        return ended

    async def _note_task(self, task_id: str, context_id: str | None) -> None:
        if task_id != self.task_id:
            self.task_id = task_id
            await _db(services.record_task)(
                self.work.turn_id, self.work.session_id, task_id=task_id, context_id=context_id or ""
            )

    async def _end(self, ended: TaskEnded) -> TurnOutcome:
        if ended.state == TaskState.COMPLETED:
            await self.display.end(Outcome.COMPLETED)
            return TurnOutcome("completed")
        if ended.state == TaskState.INPUT_REQUIRED:
            # Until questions reach the channel (askUser), a paused task is cancelled, as the spec says.
            await self._cancel()
            await self.display.end(Outcome.WAITING, notice_follows=True)
            return TurnOutcome("question-canceled", notices.QUESTION_NOT_ENABLED)
        await self.display.end(Outcome.FAILED, notice_follows=True)
        return TurnOutcome(str(ended.state), TERMINAL_FAILURES.get(ended.state, notices.TASK_FAILED))

    async def _cancel(self) -> None:
        if not self.task_id:
            return
        try:
            await self.agent.cancel_task(self.task_id)
        except a2a_errors.A2AError as exc:
            logger.info(
                "turn.cancel_failed", extra={"turn_id": self.work.turn_id, "error": type(exc).__name__}
            )


async def _converse(work: services.TurnWork, display: TurnDisplay, slack) -> TurnOutcome:
    dialect = dialect_for(work.agent.dialect)
    async with make_client(
        work.agent.url,
        headers=work.agent.headers,
        protocol_version=work.agent.protocol_version,  # type: ignore[arg-type]  # validated on apply
        extensions=dialect.extensions,
    ) as agent:
        message = Message(
            message_id=work.message_id,
            role=Role.USER,
            parts=(TextPart(await _turn_text(work, slack)),),
            context_id=work.context_id or None,
        )
        return await Conversation(work, display, agent, dialect).run(message)
