"""The AgentExecutor: plays the test's script for each message the SDK hands over.

The SDK calls `execute()` once per incoming message (a new task, or the continuation of one that
waits for input) and `cancel()` for CancelTask. Everything else - task store, event streaming,
resubscription, the JSON-RPC surface - is the SDK's own DefaultRequestHandler.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.events.event_queue_v2 import EventQueueSource
from a2a.types import Task, TaskState, TaskStatusUpdateEvent

from tests.fakes.a2a_agent.gates import wait_for_gate
from tests.fakes.a2a_agent.parts import status
from tests.fakes.a2a_agent.records import ReceivedMessage, Recorder
from tests.fakes.a2a_agent.rendering import RENDERERS, Event, Renderer
from tests.fakes.a2a_agent.steps import (
    TURN_CONTENT,
    DropConnection,
    FileOut,
    Finish,
    Garbage,
    InputRequired,
    JsonRpcError,
    Script,
    ScriptSource,
    Sleep,
    Step,
    TextStyle,
    ToolResult,
    WaitFor,
    as_script,
    complete,
    text,
)
from tests.fakes.a2a_agent.store import RecordingTaskStore
from tests.fakes.a2a_agent.wire import CutOrder, Wire

logger = logging.getLogger(__name__)

EXCHANGE_STATE_KEY = "scripted_agent_exchange"  # ServerCallContext.state key: the HTTP exchange's token
SETTLE_TIMEOUT = 2.0


class ScriptBook:
    """What the agent answers: one default script, or a function deciding per message."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # written by the test thread, read on the server loop
        self._default = as_script([text("ok")])
        self._decide: ScriptSource | None = None

    def set_script(self, steps: Script | Sequence[Step], text_style: TextStyle | None) -> None:
        script = as_script(steps, text_style)
        with self._lock:
            self._default, self._decide = script, None

    def set_on_message(self, decide: ScriptSource) -> None:
        with self._lock:
            self._decide = decide

    def script_for(self, received: ReceivedMessage) -> Script:
        with self._lock:
            decide, default = self._decide, self._default
        return as_script(decide(received)) if decide is not None else default


@dataclass
class AgentRuntime:
    """Server-side state shared by the executor, the wire and the agent facade."""

    agent_name: str
    default_text_style: TextStyle
    recorder: Recorder
    store: RecordingTaskStore
    scripts: ScriptBook
    task_events: dict[str, int] = field(default_factory=dict)  # events emitted per task, for cut accounting
    wire: Wire = field(init=False)

    def __post_init__(self) -> None:
        self.wire = Wire(self.recorder, lambda task_id: self.task_events.get(task_id or "", 0))


class EventEmitter:
    """Enqueues events for the SDK, counts them (per request, and per task), and can wait for them."""

    def __init__(self, queue: EventQueue, task_events: dict[str, int], task_id: str) -> None:
        self._queue = queue
        self._task_events = task_events
        self._task_id = task_id
        self.count = 0

    async def emit(self, event: Event) -> None:
        await self._queue.enqueue_event(event)
        self.count += 1
        self._task_events[self._task_id] = self._task_events.get(self._task_id, 0) + 1

    async def applied(self) -> None:
        """Until the SDK has stored every event enqueued so far and handed it to the task's streams.

        The queue the SDK gives an executor is its EventQueueSource: a dispatcher moves events to the
        task's consumer, which stores each one, fans it out to subscribers and marks it done.
        """
        if not isinstance(self._queue, EventQueueSource):
            return
        try:
            await asyncio.wait_for(self._queue.test_only_join_incoming_queue(), SETTLE_TIMEOUT)  # dispatched
            await asyncio.wait_for(self._queue.queue.join(), SETTLE_TIMEOUT)  # stored and fanned out
        except TimeoutError:
            logger.warning("scripted agent: the SDK did not process task %s's events in time", self._task_id)


@dataclass
class _Execution:
    """One `execute()` call: the script, where its events go, and which HTTP request started it."""

    runtime: AgentRuntime
    renderer: Renderer
    emitter: EventEmitter
    task_id: str
    origin: int | None  # token of the HTTP exchange that delivered the message
    call_context: ServerCallContext
    requested_extensions: frozenset[str]

    async def play(self, steps: Sequence[Step]) -> None:
        position = 0
        while position < len(steps):
            step = steps[position]
            if isinstance(step, TURN_CONTENT):
                await self.renderer.content(step, last_in_turn=not _more_turn_content(steps, position + 1))
            elif isinstance(step, ToolResult):
                batch = _consecutive_results(steps, position)
                await self.renderer.tool_results(batch)
                position += len(batch) - 1
            elif isinstance(step, InputRequired):
                await self.renderer.input_required(step, self.requested_extensions)
                return
            elif isinstance(step, Finish):
                await self.renderer.finish(step)
                return
            elif isinstance(step, FileOut):
                await self.renderer.file_artifact(step)
            elif isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, WaitFor):
                await self._settle()  # so a test that sees the script arrive sees all it sent before
                await wait_for_gate(step.gate)
            elif isinstance(step, DropConnection):
                await self.drop_connection(step)
                if step.forget_task:
                    return  # the agent "crashed": the rest of the script never runs
            elif isinstance(step, JsonRpcError):
                await self._settle()
                await self.runtime.wire.cut(self.task_id, CutOrder("error", error=step))
            elif isinstance(step, Garbage):
                await self._settle()
                await self.runtime.wire.inject_garbage(self.task_id, step)
            position += 1
        await self.renderer.finish(complete())

    async def drop_connection(self, step: DropConnection) -> None:
        await self._settle()
        await self.runtime.wire.cut(self.task_id, CutOrder("drop"))
        if step.forget_task:
            await self.runtime.store.forget(self.task_id, self.call_context)

    async def _settle(self) -> None:
        """Until everything emitted so far is in the task store and on the wire of every open stream."""
        await self.emitter.applied()
        await self.runtime.wire.deliver_pending(self.task_id, self.origin, self.emitter.count)


def _more_turn_content(steps: Sequence[Step], start: int) -> bool:
    """Whether the model turn under way continues after `start` (pauses and faults don't end it)."""
    for step in steps[start:]:
        if isinstance(step, TURN_CONTENT):
            return True
        if isinstance(step, ToolResult | InputRequired | Finish) or (
            isinstance(step, DropConnection) and step.forget_task
        ):
            return False
    return False


def _consecutive_results(steps: Sequence[Step], start: int) -> list[ToolResult]:
    batch: list[ToolResult] = []
    for step in steps[start:]:
        if not isinstance(step, ToolResult):
            break
        batch.append(step)
    return batch


class ScriptedExecutor(AgentExecutor):
    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        try:
            await self._execute(context, event_queue)
        except Exception as error:
            # The SDK turns this into a failed task; the fixture turns it into a failed test.
            self.runtime.recorder.add_error(error)
            raise

    async def _execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id, message = context.task_id, context.context_id, context.message
        if not task_id or not context_id or message is None:
            raise ValueError("the SDK handed over a request without task id, context id or message")
        received = ReceivedMessage.from_request(context)
        self.runtime.recorder.add_received(received)
        script = self.runtime.scripts.script_for(received)

        origin = context.call_context.state.get(EXCHANGE_STATE_KEY)
        self.runtime.wire.attach(origin, task_id)
        emitter = EventEmitter(event_queue, self.runtime.task_events, task_id)

        async def seed_task(task: Task) -> None:
            await self.runtime.store.save(task, context.call_context)

        renderer = RENDERERS[script.text_style or self.runtime.default_text_style](
            task_id=task_id,
            context_id=context_id,
            agent_name=self.runtime.agent_name,
            emit=emitter.emit,
            seed_task=seed_task,
        )
        await renderer.open(message, new_task=context.current_task is None)
        execution = _Execution(
            runtime=self.runtime,
            renderer=renderer,
            emitter=emitter,
            task_id=task_id,
            origin=origin,
            call_context=context.call_context,
            requested_extensions=received.requested_extensions,
        )
        await execution.play(script.steps)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """CancelTask: the task ends canceled (the SDK then stops a running script)."""
        task_id, context_id = context.task_id or "", context.context_id or ""
        await EventEmitter(event_queue, self.runtime.task_events, task_id).emit(
            TaskStatusUpdateEvent(
                task_id=task_id, context_id=context_id, status=status(TaskState.TASK_STATE_CANCELED)
            )
        )
