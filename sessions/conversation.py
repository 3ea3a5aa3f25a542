"""What one turn does with its agent: the message it sends (a person's words, or the answer to a pause),
the events it follows to the task's end (``kourier.a2a.follow``), the task it records, and how the turn
ends (``TurnEnd``): completed, failed with the notice the thread is told, or paused for people."""

import asyncio
import logging
from contextlib import aclosing
from dataclasses import dataclass

from django.conf import settings

from bindings.manifest import UserIdentity
from kourier import metrics
from kourier.a2a import follow
from kourier.a2a.client import A2AClient
from kourier.a2a.dialects import Dialect, dialect_for
from kourier.a2a.events import (
    ApprovalRequest,
    FileReturned,
    Question,
    TaskEnded,
    TaskStarted,
    UnusablePause,
)
from kourier.a2a.factory import make_client
from kourier.a2a.wire import FilePart, Message, Role, TaskState, TextPart
from kourier.db import in_database_thread
from kourier.progress import Ending
from kourier.slack.people import person_email, person_name
from kourier.slack.thread_history import ThreadSoFar, ThreadUnread, read_thread_so_far

from . import agent_log, files_in, files_out, notices, pauses, stops, thread_context, turns
from .agent_text import Author, Note, build_turn_text, strip_bot_mention
from .display import TurnDisplay
from .identity import identity_headers, is_person
from .models import Turn

logger = logging.getLogger(__name__)

TERMINAL_FAILURES = {
    "failed": notices.TASK_FAILED,
    "rejected": notices.TASK_REJECTED,
    "canceled": notices.TASK_CANCELED,
}

# How often a running turn looks whether someone pressed its Stop (sessions/stops.py): the shared
# cache's word at every look, the turn's row (the truth, should the cache have lost the word) at every
# STOP_ROW_LOOKS-th; the press is answered at once, the task cancelled within a second.
STOP_LOOK_SECONDS = 1.0
STOP_ROW_LOOKS = 30


class StopPressed(Exception):
    """Someone pressed the turn's Stop (sessions/stops.py) while it followed the agent."""

    def __init__(self, user_id: str) -> None:
        super().__init__(user_id)
        self.user_id = user_id


@dataclass
class TurnEnd:
    """How a turn ended: its outcome, the notice the thread is told, whether the agent's context is gone."""

    outcome: Turn.Outcome
    notice: str | None = None
    forget_context: bool = False
    kept: bool = False  # a person's answer the agent could not be reached to take: queued again

    @property
    def failed(self) -> bool:
        return self.notice is not None and self.outcome is not Turn.Outcome.STOPPED


async def _turn_text(work: turns.TurnWork, slack) -> str:
    # What the system identity wrote (an alert thread's first turn and its trigger's notes) names no
    # person and is never looked up in Slack: it goes as "Slack: alert: ...".
    thread = await _thread_so_far(work, slack)
    people = {work.user_id, *(user for user, _ in work.notes)}
    if isinstance(thread, ThreadSoFar):
        people.update(thread_context.people(thread))
    # At once: a thread so far may name many people, and each lookup is bounded on its own.
    asked = [user_id for user_id in people if is_person(user_id)]
    found = await asyncio.gather(*(person_name(slack, work.team_id, user_id) for user_id in asked))
    names = dict(zip(asked, found, strict=True))
    block = ""
    if isinstance(thread, ThreadSoFar) and work.thread_context is not None:
        # Redacting up to 50 messages costs tens of milliseconds of CPU (docs/performance.md): off the
        # turn loop, so the other turns it runs go on meanwhile.
        block = await asyncio.to_thread(thread_context.thread_block, thread, names, work.thread_context)
    elif isinstance(thread, ThreadUnread):
        block = thread_context.unread_line(thread.reason)
    return build_turn_text(
        Author(work.user_id, names[work.user_id]) if is_person(work.user_id) else None,
        strip_bot_mention(work.text, work.bot_user_id),
        [Note(Author(user, names[user]) if is_person(user) else None, text) for user, text in work.notes],
        thread_so_far=block,
    )


async def _thread_so_far(work: turns.TurnWork, slack) -> ThreadSoFar | ThreadUnread | None:
    """The thread before the mention that started the session in it (``work.thread_context``), read
    from Slack; None when the turn carries none, or the thread's root is Kourier's own; what stopped
    the read when Slack did not give it: the turn goes on without it (docs/prompt-format.md)."""
    bounds = work.thread_context
    if bounds is None:
        return None
    try:
        thread = await read_thread_so_far(
            slack,
            work.channel_id,
            work.thread_ts,
            before_ts=work.message_ts,
            keep=bounds.max_messages,
            bot_user_id=work.bot_user_id,
        )
    except ThreadUnread as unread:
        logger.warning(
            "turn.thread_unread",
            extra={"turn_id": work.turn_id, "binding": work.binding_name, "error": unread.reason},
        )
        return unread
    if thread.root is not None and thread.root.own:
        return None  # Kourier's own thread: what it said there is its agent's, not context to quote
    logger.info(
        "turn.thread_read",
        extra={
            "turn_id": work.turn_id,
            "messages": len(thread.replies) + (thread.root is not None),
            "not_kept": thread.replies_not_kept,
        },
    )
    return thread


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
        self.files_returned: list[FileReturned] = []  # uploaded once the turn ends (files_out.py)

    async def run(self, message: Message) -> TurnEnd:
        try:
            ended = await self._follow_until_stopped(message)
        except StopPressed as stop:
            return await self._stopped(stop.user_id)
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
            kept = await in_database_thread(pauses.current().keep_undelivered)(self.work.turn_id)
            if kept is not pauses.UndeliveredAnswer.NOT_AN_ANSWER:
                return TurnEnd(Turn.Outcome.UNREACHABLE, kept=kept is pauses.UndeliveredAnswer.KEPT)
        return TurnEnd(Turn.Outcome.UNREACHABLE, notices.AGENT_UNREACHABLE)

    async def _follow_until_stopped(self, message: Message) -> TaskEnded:
        """Follows the task while looking whether someone pressed Stop; a press ends the following
        (its stream closed) and raises ``StopPressed``."""
        following = asyncio.create_task(self._follow(message))
        watching = asyncio.create_task(self._watch_for_stop())
        try:
            await asyncio.wait({following, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (following, watching):
                task.cancel()
            await asyncio.gather(following, watching, return_exceptions=True)
        if not following.cancelled() and following.exception() is None:
            return following.result()
        if not watching.cancelled() and watching.exception() is None:
            raise StopPressed(watching.result())
        if not following.cancelled():
            raise following.exception()  # type: ignore[misc]
        raise watching.exception()  # type: ignore[misc]

    async def _watch_for_stop(self) -> str:
        looks = 0
        while True:
            await asyncio.sleep(STOP_LOOK_SECONDS)
            looks += 1
            user_id = await stops.signalled_stop(self.work.turn_id, self.work.started_at)
            if user_id is None and looks % STOP_ROW_LOOKS == 0:
                user_id = await in_database_thread(stops.stopped_by)(self.work.turn_id)
            if user_id is not None:
                return user_id

    async def _stopped(self, user_id: str) -> TurnEnd:
        """A person stopped the turn: the agent's task is cancelled (CancelTask; an agent that
        refuses or cannot be reached leaves nothing more to try: the turn is over for the thread), the
        reply ends as Stopped, and the thread is told who stopped it."""
        if self.task_id:
            cancelled = await follow.cancel_paused_task(self.agent, self.task_id)
            if cancelled.error:
                logger.info(
                    "turn.stop_cancel_failed", extra={"turn_id": self.work.turn_id, "error": cancelled.error}
                )
        logger.info("turn.stopped", extra={"turn_id": self.work.turn_id})
        await self.display.end(Ending.FAILED, notice_follows=True)
        return TurnEnd(Turn.Outcome.STOPPED, stops.stopped_line(user_id))

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
                if isinstance(event, FileReturned):
                    self.files_returned.append(event)
                    continue
                if isinstance(event, TaskStarted):
                    await self._note_task(event.task_id, event.context_id)
                elif isinstance(event, TaskEnded):
                    ended = event
                elif isinstance(event, Question | ApprovalRequest | UnusablePause):
                    self.pause = event
                agent_log.note(event)
                self.display.feed(event)
        assert ended is not None, "follow_turn ends with TaskEnded or raises"
        await self._record_usage()
        return ended

    async def _record_usage(self) -> None:
        """Keeps the tokens the agent reported for the turn, if it reported any."""
        usage = self.reader.usage
        if usage is None:
            return
        charged_in, charged_out = await in_database_thread(turns.record_usage)(
            self.work.turn_id,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            task_total=self.reader.usage_is_task_total,
        )
        metrics.agent_tokens(self.work.binding_name, input_tokens=charged_in, output_tokens=charged_out)

    async def _note_task(self, task_id: str, context_id: str | None) -> None:
        if task_id != self.task_id:
            self.task_id = task_id
            await in_database_thread(turns.record_task)(
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


async def converse(work: turns.TurnWork, display: TurnDisplay, slack) -> TurnEnd:
    """Sends the turn's message to its agent, under the Binding's identity, and follows its task to
    the turn's end."""
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
        message = await _message(work, dialect, slack, agent)
        conversation = Conversation(work, display, agent, dialect, slack)
        end = await conversation.run(message)
    if conversation.files_returned:
        await files_out.upload_files(work, slack, conversation.files_returned)
    return end


async def _message(work: turns.TurnWork, dialect: Dialect, slack, agent: A2AClient) -> Message:
    """What the turn sends: a person's message as text with the files it shares (files_in.py), or
    what answers the agent's pause (the pauses handed in build it: sessions/pauses.py)."""
    if work.kind == Turn.Kind.MESSAGE:
        files: tuple[FilePart, ...] = ()
        # A task the agent already has was sent its files: they are not downloaded again.
        if work.files and not work.task_id:
            taken = await files_in.take_files(work, await files_in.input_modes(agent))
            await files_in.tell_not_sent(work, slack, taken.refused)
            files = taken.parts
        return Message(
            message_id=work.message_id,
            role=Role.USER,
            parts=(TextPart(await _turn_text(work, slack)), *files),
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
