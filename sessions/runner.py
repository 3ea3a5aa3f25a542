"""Runs a session's turns against its agent and writes the answers into the thread.

One runner per session at a time, settled by a lease in the database; the runner renews it while
a turn runs, and a runner that dies leaves it to expire so another takes the session over.
"""

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

from django.conf import settings

from bindings.manifest import UserIdentity
from kourier import metrics
from kourier.a2a import follow
from kourier.a2a.client import A2AClient
from kourier.a2a.dialects import Dialect, dialect_for
from kourier.a2a.events import (
    AgentEvent,
    ApprovalRequest,
    Question,
    TaskEnded,
    TaskStarted,
    TextDelta,
    UnusablePause,
)
from kourier.a2a.factory import make_client
from kourier.a2a.factory import shared_connections as a2a_shared_connections
from kourier.a2a.wire import Message, Role, TaskState, TextPart
from kourier.db import in_database_thread
from kourier.progress import Card, CardStatus, Ending, Progress, ThreadKind
from kourier.slack.blocks import feedback_block
from kourier.slack.clients import SlackError, async_web_client, connection_workspace
from kourier.slack.clients import shared_session as slack_shared_session
from kourier.slack.outbox import notice_key, post_notice
from kourier.slack.people import person_email, person_name
from kourier.slack.status import AssistantStatus
from kourier.slack.writer import MESSAGE_TEXT_LIMIT, ReplyTarget, SlackReply

from . import acknowledgments, notices, pauses, turns
from .agent_text import Author, Note, build_turn_text, strip_bot_mention
from .identity import identity_headers, is_person
from .models import Turn
from .outbox import TurnOutbox
from .turn_loop import turn_loop

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


def drive(session_id: int) -> None:
    """Hands the session to this process's turn loop (turn_loop.py); returns at once."""
    turn_loop(
        run_session, acknowledge=acknowledgments.acknowledge_waiting_turns, shared=shared_connections
    ).drive(session_id)


@contextlib.asynccontextmanager
async def shared_connections() -> AsyncIterator[None]:
    """What every turn on the loop shares: one aiohttp session for Slack's calls and one connection
    pool for the agents', instead of one per call and one per turn (docs/performance.md)."""
    async with slack_shared_session(), a2a_shared_connections():
        yield


async def run_session(session_id: int) -> None:
    """Acknowledges the session's waiting turns, then runs them one at a time unless another runner
    holds the session's lease (that runner takes the new turns in order)."""
    await acknowledgments.acknowledge_waiting_turns(session_id)
    await _run_session(session_id)


async def _run_session(session_id: int) -> None:
    owner = runner_identity()
    # Each look takes or renews the lease and lets it go when nothing is left to run, in one hand-over
    # to the database thread (turns.lease_next_turn); a turn queued meanwhile is seen, or finds the
    # lease free.
    turn = await _db(turns.lease_next_turn)(session_id, owner, seconds=LEASE_SECONDS)
    if turn is None:
        return  # nothing to run, or another runner has the session
    try:
        while turn is not None:
            if not await _run_turn_with_lease(session_id, turn.pk, owner):
                return  # the lease was lost: another runner has the session now
            turn = await _db(turns.lease_next_turn)(session_id, owner, seconds=LEASE_SECONDS)
    except BaseException:  # a crash, or the hand-over's cancel: the lease is let go at once
        await _db(turns.release_lease)(session_id, owner)
        raise


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
        if not await _db(turns.renew_lease)(session_id, owner, seconds=LEASE_SECONDS):
            logger.warning("session.lease_lost", extra={"session_id": session_id, "turn_id": turn_id})
            turn_task.cancel()
            return False


@dataclass
class TurnEnd:
    """How a turn ended: its outcome, the notice the thread is told, whether the agent's context is gone."""

    outcome: Turn.Outcome
    notice: str | None = None
    forget_context: bool = False
    kept: bool = False  # a person's answer the agent could not be reached to take: queued again

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

    def __init__(self, reply: SlackReply, progress: Progress | None, *, max_messages: int) -> None:
        self.reply = reply
        self.progress = progress
        self.text = ""
        # The answer's text is kept up to a message past what the reply may post, never more: a
        # runaway answer costs the worker no more memory than that (the writer cuts and says so).
        self.text_limit = (max_messages + 1) * MESSAGE_TEXT_LIMIT
        self.received = 0  # characters of the answer the agent sent
        self.closing_blocks: list[dict] = []  # under a completed answer: its feedback buttons (spec.feedback)
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False

    async def begin(self) -> None:
        await self.reply.begin()
        self._arm()

    def feed(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            self.received = len(event.text) if event.replace else self.received + len(event.text)
            room = self.text_limit - (0 if event.replace else len(self.text))
            event = TextDelta(event.text[: max(room, 0)], replace=event.replace)
            self.text = event.text if event.replace else self.text + event.text
            self.reply.note_not_kept(self.received - len(self.text))
        if self.progress is not None and not self._ended:
            self.reply.write(self.progress.feed(event))
            self._arm()

    async def end(self, outcome: Ending, *, notice_follows: bool = False) -> None:
        """Ends the reply: the last write, with every card closed as ``outcome`` says."""
        if self._ended:
            return
        self._ended = True
        self.close()
        if self.progress is None:
            if outcome is Ending.COMPLETED:
                await self.reply.finish(self.text, closing_blocks=self.closing_blocks)
            else:
                await self.reply.stop()
            return
        closing = self.closing_blocks if outcome is Ending.COMPLETED else ()
        await self.reply.end(
            self.progress.finish(outcome), notice_follows=notice_follows, closing_blocks=closing
        )

    async def before_a_post(self) -> None:
        """Lets a message of the turn's own (a prompt) be posted before the reply ends, so that the
        reply ends as the post turned out: the clock stopped, and a reply that has no message yet
        makes the writes asked for so far, so that it comes first in the thread."""
        self.close()
        if self.reply.ts is None:
            await self.reply.settled()

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


def _display(work: turns.TurnWork, slack, turn_id: int) -> TurnDisplay:
    thread = work.thread_kind
    progress = Progress(work.progress, thread, clock=asyncio.get_running_loop().time) if work.live else None
    status = None
    # The chat-thread rule against a status does not hold in a direct message: the agent surface is
    # built for it (docs/slack-direct-messages.md).
    if work.direct or (progress is not None and progress.uses_assistant_status):
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
        on_posted=_ReplyPosted(work),
        outbox=TurnOutbox(turn_id, reply_key=work.message_id),
        adopted_cards=[Card(card_id, title, CardStatus.IN_PROGRESS) for card_id, title in work.stream_cards],
        on_stream_cards=lambda cards: _db(turns.record_stream_cards)(
            turn_id, [{"id": card.id, "title": card.title} for card in cards]
        ),
        allow_user_mentions=work.allow_user_mentions,
        max_messages=work.max_messages,
    )
    display = TurnDisplay(reply, progress, max_messages=work.max_messages)
    if work.feedback:
        display.closing_blocks = [feedback_block(work.turn_id)]
    return display


class _ReplyPosted:
    """Measures how long the thread waited to see the reply (not for a resumed turn: its reply may
    have been shown by the runner before). The reply's ts is kept with its confirmation in the outbox."""

    def __init__(self, work: turns.TurnWork) -> None:
        self.work = work
        self.measured = work.resumed

    async def __call__(self, ts: str) -> None:
        if not self.measured:
            self.measured = True
            metrics.turn_output_shown(self.work.binding_name, self.work.accepted_at)


async def run_turn(turn_id: int) -> None:
    work = await _db(turns.start_turn)(turn_id)
    if work is None:
        return
    if work.resumed:
        metrics.recovered(metrics.Recovery.TURN)
    else:
        metrics.turn_started(work.binding_name)
    slack = async_web_client(work.bot_token, workspace=connection_workspace(work.connection_id))
    display = _display(work, slack, turn_id)
    logger.info(
        "turn.started", extra={"turn_id": turn_id, "binding": work.binding_name, "resumed": work.resumed}
    )
    try:
        spent = work.budget_spent
        if spent is not None:
            # Not sent; the thread is told once a day, whatever else its people send meanwhile.
            outcome = TurnEnd(Turn.Outcome.BUDGET_SPENT, None if spent.told else notices.BUDGET_SPENT)
        else:
            await display.begin()
            outcome = await _converse(work, display, slack)
    except Exception:
        logger.exception("turn.crashed", extra={"turn_id": turn_id})
        outcome = TurnEnd(Turn.Outcome.CRASHED, notices.TASK_FAILED)
        try:
            await display.end(Ending.FAILED, notice_follows=True)
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
        except SlackError as exc:
            # The notice stays intended in the outbox: beat's sweep posts it once the turn has ended.
            logger.warning(
                "turn.notice_deferred", extra={"turn_id": turn_id, "error": exc.response.get("error")}
            )
    if outcome.kept:  # not ended: the turn is queued again (sessions/pauses.py, ``keep_undelivered``)
        logger.info("turn.kept", extra={"turn_id": turn_id})
        return
    left = await _db(_end_turn)(
        turn_id,
        outcome.outcome,
        failed=outcome.failed,
        answer=work.kind is not Turn.Kind.MESSAGE,
        forget_context_of=work.session_id if outcome.forget_context else None,
    )
    metrics.turn_ended(
        work.binding_name, outcome.outcome.value, failed=outcome.failed, started_at=work.started_at
    )
    if left is not None:
        await acknowledgments.take_off(left)
    logger.info("turn.ended", extra={"turn_id": turn_id, "outcome": outcome.outcome})


def _end_turn(
    turn_id: int, outcome: Turn.Outcome, *, failed: bool, answer: bool, forget_context_of: int | None
) -> acknowledgments.Acknowledgment | None:
    """The database's part of a turn's end, in one hand-over: the kept answer settled, the context
    forgotten, the turn ended, and the reaction it leaves on its message read."""
    if answer:
        pauses.current().settle_answer(turn_id)
    if forget_context_of is not None:
        turns.forget_context(forget_context_of)
    turns.finish_turn(turn_id, outcome=outcome, failed=failed)
    return acknowledgments.of_turn(turn_id)


async def _turn_text(work: turns.TurnWork, slack) -> str:
    # What the system identity wrote (an alert thread's first turn and its trigger's notes) names no
    # person and is never looked up in Slack: it goes as "Slack: alert: ...".
    people = {work.user_id, *(user for user, _ in work.notes)}
    names = {
        user_id: await person_name(slack, work.team_id, user_id) for user_id in people if is_person(user_id)
    }
    return build_turn_text(
        Author(work.user_id, names[work.user_id]) if is_person(work.user_id) else None,
        strip_bot_mention(work.text, work.bot_user_id),
        [Note(Author(user, names[user]) if is_person(user) else None, text) for user, text in work.notes],
    )


class Conversation:
    """What one turn does with its agent's events: records the task, shows the reply, and decides how
    the turn ends (the A2A steps that bring the events are ``kourier.a2a.follow``)."""

    def __init__(
        self, work: turns.TurnWork, display: TurnDisplay, agent: A2AClient, dialect: Dialect, slack
    ) -> None:
        self.work = work
        self.display = display
        self.agent = agent
        self.reader = dialect.reader()
        self.task_id = work.task_id or None
        self.pause: Question | ApprovalRequest | UnusablePause | None = None
        self.slack = slack

    async def run(self, message: Message) -> TurnEnd:
        try:
            ended = await self._follow(message)
        except follow.TaskGone:
            outcome = TurnEnd(Turn.Outcome.GONE, notices.CONVERSATION_GONE, forget_context=True)
        except follow.AgentGarbled:
            outcome = TurnEnd(Turn.Outcome.GARBLED, notices.AGENT_GARBLED)
        except follow.RequestLost as lost:
            # Lost before this runner tried anything: an earlier one sent it and died.
            notice = notices.REQUEST_LOST if lost.failed_attempts == 0 else notices.AGENT_UNREACHABLE
            outcome = TurnEnd(Turn.Outcome.LOST, notice)
        except follow.AgentOutOfReach as out_of_reach:
            outcome = await self._unreachable(out_of_reach)
        else:
            return await self._end(ended)
        await self.display.end(Ending.FAILED, notice_follows=True)
        return outcome

    async def _unreachable(self, out_of_reach: follow.AgentOutOfReach) -> TurnEnd:
        """A person's answer that never reached the agent is kept for another try, or given up as a
        timeout past its deadline (the timeout sweep tells the thread); any other turn fails."""
        if out_of_reach.unsent and self.work.kind is not Turn.Kind.MESSAGE:
            kept = await _db(pauses.current().keep_undelivered)(self.work.turn_id)
            if kept is not pauses.UndeliveredAnswer.NOT_AN_ANSWER:
                return TurnEnd(Turn.Outcome.UNREACHABLE, kept=kept is pauses.UndeliveredAnswer.KEPT)
        return TurnEnd(Turn.Outcome.UNREACHABLE, notices.AGENT_UNREACHABLE)

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
                elif isinstance(event, Question | ApprovalRequest | UnusablePause):
                    self.pause = event
                self.display.feed(event)
        assert ended is not None, "follow_turn ends with TaskEnded or raises"
        await self._record_usage()
        return ended

    async def _record_usage(self) -> None:
        """Keeps the tokens the agent reported for the turn, if it reported any."""
        usage = self.reader.usage
        if usage is None:
            return
        charged_in, charged_out = await _db(turns.record_usage)(
            self.work.turn_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            task_total=self.reader.usage_is_task_total,
        )
        metrics.agent_tokens(self.work.binding_name, input_tokens=charged_in, output_tokens=charged_out)

    async def _note_task(self, task_id: str, context_id: str | None) -> None:
        if task_id != self.task_id:
            self.task_id = task_id
            await _db(turns.record_task)(
                self.work.turn_id,
                self.work.session_id,
                task_id=task_id,
                context_id=context_id or "",
                known_context_id=self.work.context_id,
            )

    async def _end(self, ended: TaskEnded) -> TurnEnd:
        if ended.state == TaskState.COMPLETED:
            await self.display.end(Ending.COMPLETED)
            return TurnEnd(Turn.Outcome.COMPLETED)
        if ended.state == TaskState.INPUT_REQUIRED:
            return await self._paused()
        await self.display.end(Ending.FAILED, notice_follows=True)
        state = str(ended.state)
        outcome = Turn.Outcome(state) if state in Turn.Outcome.values else Turn.Outcome.FAILED
        return TurnEnd(outcome, TERMINAL_FAILURES.get(ended.state, notices.TASK_FAILED))

    async def _paused(self) -> TurnEnd:
        """The task waits for people: the pause goes to the channel (askUser, toolApprovals: the
        pauses handed in, sessions/pauses.py), or the task is cancelled and the thread told why."""
        pause = self.pause
        if (isinstance(pause, Question) and self.work.ask_user) or (
            isinstance(pause, ApprovalRequest) and self.work.tool_approvals
        ):
            # The reply ends once the prompt's fate is known: waiting, or stopped with the task.
            await self.display.before_a_post()
            end = await pauses.current().put(self._paused_turn(), pause)
            if end.outcome is Turn.Outcome.ASKED:  # posted, or posted later by the sweep
                await self.display.end(Ending.WAITING)
            else:
                await self.display.end(Ending.FAILED, notice_follows=True)
            return TurnEnd(end.outcome, end.notice)
        # The task is cancelled; an agent that refuses (kagent 0.10 cannot cancel a paused task) still
        # leaves the session usable: the next reply starts a task of its own. One that cannot be
        # reached is tried again later by the pauses handed in. Nobody is asked, so the reply ends as
        # a cancelled task's does (Stopped), not as waiting for an answer.
        await pauses.current().cancel_unasked(
            self._paused_turn(), approval=isinstance(pause, ApprovalRequest)
        )
        await self.display.end(Ending.FAILED, notice_follows=True)
        if isinstance(pause, ApprovalRequest):
            return TurnEnd(Turn.Outcome.QUESTION_CANCELED, notices.APPROVAL_NOT_ENABLED)
        if isinstance(pause, Question) or not self.work.ask_user:
            return TurnEnd(Turn.Outcome.QUESTION_CANCELED, notices.QUESTION_NOT_ENABLED)
        return TurnEnd(Turn.Outcome.QUESTION_UNUSABLE, notices.QUESTION_UNUSABLE)

    def _paused_turn(self) -> pauses.PausedTurn:
        return pauses.PausedTurn(
            turn_id=self.work.turn_id,
            channel_id=self.work.channel_id,
            thread_ts=self.work.thread_ts,
            reply_key=self.work.message_id,
            slack=self.slack,
            cancel=self._cancel,
            task_id=self.task_id or "",
        )

    async def _cancel(self) -> bool:
        """Cancels the paused task; False only when the agent could not be reached (to try again)."""
        if not self.task_id:
            return True
        cancelled = await follow.cancel_paused_task(self.agent, self.task_id)
        if cancelled.error:
            logger.info("turn.cancel_failed", extra={"turn_id": self.work.turn_id, "error": cancelled.error})
        return cancelled.settled


async def _converse(work: turns.TurnWork, display: TurnDisplay, slack) -> TurnEnd:
    dialect = dialect_for(work.agent.dialect)

    async def email_of(user_id: str) -> str | None:
        return await person_email(slack, work.team_id, user_id)

    who = await identity_headers(UserIdentity(work.agent.user_identity), work.user_id or None, email_of)
    async with make_client(
        work.agent.url,
        headers={**work.agent.headers, **who},
        protocol_version=work.agent.protocol_version,  # type: ignore[arg-type]  # validated on apply
        extensions=dialect.extensions,
    ) as agent:
        message = await _message(work, dialect, slack)
        return await Conversation(work, display, agent, dialect, slack).run(message)


async def _message(work: turns.TurnWork, dialect: Dialect, slack) -> Message:
    """What the turn sends: a person's message as text, or what answers the agent's pause (the
    pauses handed in build it: sessions/pauses.py)."""
    if work.kind == Turn.Kind.MESSAGE:
        return Message(
            message_id=work.message_id,
            role=Role.USER,
            parts=(TextPart(await _turn_text(work, slack)),),
            context_id=work.context_id or None,
        )
    answer = pauses.AnswerTurn(
        turn_id=work.turn_id,
        message_id=work.message_id,
        team_id=work.team_id,
        user_id=work.user_id,
        slack=slack,
    )
    return await pauses.current().answer_message(answer, dialect)
