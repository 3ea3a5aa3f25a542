"""Following one turn's message to the task's end: send it, or follow the task it already started.

``follow_turn`` is every A2A step a turn needs and nothing a turn does with them. It sends the message,
or, when the agent already named a task for it (an earlier attempt, an earlier runner), asks the
task's state and subscribes to the rest; it polls a task the agent will not stream again (kagent 0.10
refuses tasks/resubscribe for a task with no live run) and reads the end of one that ended meanwhile
from its state. A turn resumed before its task was named is looked up (ListTasks) before anything is
sent again: agents do not de-duplicate message ids (design.md, invariant 4). Failures that may pass
are retried, a bounded number of times with a growing pause.

What comes out is the turn's normalized events, ``TaskEnded`` last; or one ``GaveUp`` error, whose
type says why in words a caller can tell a person.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass

from kourier.a2a import errors
from kourier.a2a.client import A2AClient, EventStream
from kourier.a2a.dialects import TurnReader
from kourier.a2a.events import AgentEvent, TaskEnded, TaskStarted
from kourier.a2a.wire import Message, StreamEvent

logger = logging.getLogger(__name__)

# Attempts at one turn (sends, follows, lookups) while what fails may pass, before it is given up.
MAX_ATTEMPTS = 5
# The pause after the n-th failed attempt is n times this.
RETRY_BACKOFF_SECONDS = 1.0
# How often a task is asked for its state when the agent cannot stream it again.
POLL_SECONDS = 2.0


class GaveUp(Exception):
    """The turn was given up before the task's end was known; the subclass says why."""


class TaskGone(GaveUp):
    """The agent no longer has the task (or the conversation it ran in)."""


class AgentGarbled(GaveUp):
    """The agent answered something that cannot be read; asking again will not help."""


class AgentOutOfReach(GaveUp):
    """The agent could not be reached or refused the request, and retrying did not help or cannot.

    ``unsent``: the failures were of the kind that may pass, and none could have delivered the message
    (no connection was made), so sending it again later cannot run it twice."""

    def __init__(self, detail: str, *, unsent: bool = False) -> None:
        super().__init__(detail)
        self.unsent = unsent


class RequestLost(GaveUp):
    """The message may have reached the agent, which cannot be asked whether it has it, so sending it
    again could run it twice. ``failed_attempts``: how many attempts of this call had failed before
    (0: the message was lost before this call, by an earlier attempt at the turn)."""

    def __init__(self, failed_attempts: int) -> None:
        super().__init__(f"request lost after {failed_attempts} failed attempts")
        self.failed_attempts = failed_attempts


async def follow_turn(
    agent: A2AClient,
    reader: TurnReader,
    message: Message,
    *,
    task_id: str | None,
    resumed: bool,
    poll_timeout: float,
    max_attempts: int = MAX_ATTEMPTS,
    backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    poll_seconds: float = POLL_SECONDS,
) -> AsyncGenerator[AgentEvent, None]:
    """The normalized events of one turn, ``TaskEnded`` last.

    ``task_id``: the task an earlier attempt at the turn recorded (None: none known). ``resumed``: an
    earlier attempt may have sent ``message`` already, so without a task id it is looked up before it
    is sent. ``TaskStarted`` comes whenever the agent names the task (again, after a lookup or in a
    fresh snapshot). A task the agent will not stream again is polled every ``poll_seconds`` for at
    most ``poll_timeout`` seconds per attempt. Raises a ``GaveUp`` subclass instead of an end.

    Close the iterator when stopping early (``contextlib.aclosing``): that closes its connection.
    """
    turn = _Turn(agent, reader, message, task_id, poll_timeout=poll_timeout, poll_seconds=poll_seconds)
    failures = 0
    # An earlier attempt sent this message and stopped before the agent named its task: look first.
    must_look = resumed and not task_id
    while True:
        try:
            if turn.task_id:
                async with aclosing(turn.follow()) as events:
                    async for event in events:
                        yield event
            elif must_look:
                try:
                    found = await agent.find_task_for_message(message.context_id, message.message_id)
                except errors.NotSupportedByProtocol:
                    raise RequestLost(failures) from None
                must_look = False
                if found is not None:
                    yield turn.adopt(found.id, found.context_id)
                continue
            else:
                async with aclosing(turn.read(agent.send_streaming(message))) as events:
                    async for event in events:
                        yield event
            if turn.ended:
                return
            raise errors.StreamDropped("the stream ended before the task did")
        except errors.TaskNotFound as exc:
            raise TaskGone(str(exc)) from exc
        except errors.InvalidAgentResponse as exc:
            raise AgentGarbled(str(exc)) from exc
        except errors.A2AError as exc:
            failures += 1
            # A request that may have reached the agent is looked up before it is sent again.
            must_look = must_look or (exc.outcome_unknown and not turn.task_id)
            if not exc.retryable or failures >= max_attempts:
                unsent = exc.retryable and not must_look and not turn.task_id and not exc.outcome_unknown
                raise AgentOutOfReach(str(exc), unsent=unsent) from exc
            logger.info(
                "a2a.turn_retry",
                extra={
                    "message_id": message.message_id,
                    "task_id": turn.task_id,
                    "attempt": failures,
                    "error": type(exc).__name__,
                },
            )
            await asyncio.sleep(backoff_seconds * failures)


class _Turn:
    """What one turn knows of its task while it is followed: its id and, once it came, its end."""

    def __init__(
        self,
        agent: A2AClient,
        reader: TurnReader,
        message: Message,
        task_id: str | None,
        *,
        poll_timeout: float,
        poll_seconds: float,
    ) -> None:
        self.agent = agent
        self.reader = reader
        self.message = message
        self.task_id = task_id
        self.ended = False
        self.poll_timeout = poll_timeout
        self.poll_seconds = poll_seconds

    def adopt(self, task_id: str, context_id: str | None) -> TaskStarted:
        self.task_id = task_id
        return TaskStarted(task_id=task_id, context_id=context_id)

    async def follow(self) -> AsyncGenerator[AgentEvent, None]:
        """Asks the agent where the task got to, then subscribes to the rest of it."""
        assert self.task_id is not None
        for event in self.take(await self.agent.get_task(self.task_id)):
            yield event
        if self.ended:
            return
        try:
            async with aclosing(self.read(self.agent.subscribe(self.task_id))) as events:
                async for event in events:
                    yield event
        except errors.TaskNotFound:
            # kagent 0.10 refuses tasks/resubscribe for a task it has but no live run of: poll it instead.
            async for event in self.poll():
                yield event
        except errors.UnsupportedOperation:
            # A task that ended since the look cannot be subscribed to: its end is in its state.
            for event in self.take(await self.agent.get_task(self.task_id)):
                yield event
            if not self.ended:
                async for event in self.poll():
                    yield event

    async def poll(self) -> AsyncGenerator[AgentEvent, None]:
        """Asks for the task's state until it ends or ``poll_timeout`` has passed (then nothing ends)."""
        assert self.task_id is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.poll_timeout
        while loop.time() < deadline:
            await asyncio.sleep(self.poll_seconds)
            for event in self.take(await self.agent.get_task(self.task_id)):
                yield event
            if self.ended:
                return

    async def read(self, stream: EventStream) -> AsyncGenerator[AgentEvent, None]:
        async with stream:
            async for wire_event in stream:
                for event in self.take(wire_event):
                    yield event
                if self.ended:
                    return

    def take(self, wire_event: StreamEvent) -> list[AgentEvent]:
        events = self.reader.feed(wire_event)
        for event in events:
            if isinstance(event, TaskStarted):
                self.task_id = event.task_id
            elif isinstance(event, TaskEnded):
                self.ended = True
        return events


@dataclass(frozen=True)
class Cancelled:
    """What became of cancelling a paused task. ``settled`` is False only when the agent could not be
    reached (worth trying again); ``error`` names the error the agent answered, if any (an agent that
    refuses, because the task ended or it cannot cancel, leaves nothing more to try)."""

    settled: bool
    error: str = ""


async def cancel_paused_task(agent: A2AClient, task_id: str) -> Cancelled:
    """Cancels a task that waits for input: the one way every caller does it (a runner whose pause
    cannot be put, a sweep at a timeout or after a refusal)."""
    try:
        await agent.cancel_task(task_id)
    except (errors.AgentUnreachable, errors.AgentTimeout) as exc:
        return Cancelled(settled=False, error=type(exc).__name__)
    except errors.A2AError as exc:
        return Cancelled(settled=True, error=type(exc).__name__)
    return Cancelled(settled=True)
