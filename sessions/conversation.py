"""What one turn does with its agent: the message it sends (a person's words, or the answer to a pause),
the events it follows to the task's end (``kourier.a2a.follow``), the task it records, and how the turn
ends (``TurnEnd``): completed, failed with the notice the thread is told, or paused for people."""

import logging
from contextlib import aclosing
from dataclasses import dataclass

from django.conf import settings

from bindings.manifest import UserIdentity
from kourier import metrics
from kourier.a2a import follow
from kourier.a2a.client import A2AClient
from kourier.a2a.dialects import Dialect, dialect_for
from kourier.a2a.events import ApprovalRequest, Question, TaskEnded, TaskStarted, UnusablePause
from kourier.a2a.factory import make_client
from kourier.a2a.wire import Message, Role, TaskState, TextPart
from kourier.db import in_database_thread
from kourier.progress import Ending
from kourier.slack.people import person_email, person_name

from . import agent_log, notices, pauses, turns
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
            kept = await in_database_thread(pauses.current().keep_undelivered)(self.work.turn_id)
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
