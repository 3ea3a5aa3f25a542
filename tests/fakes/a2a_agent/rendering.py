"""Text styles: how one script looks on the wire, modelled on captured kagent transcripts.

A renderer turns steps into the SDK events (Task, TaskStatusUpdateEvent, TaskArtifactUpdateEvent)
one kind of agent emits. Four styles (docs/kagent-dialect.md §1; the captures in tests/a2a/data/):

- "artifact"    generic A2A 1.0 streaming: one artifact per model turn; the first chunk without
                `append`, the next ones `append: true`, the turn's last chunk `lastChunk: true`
                (on an append). Tool calls are chunks of the turn, tool results their own artifact.
                Tool parts marked `adk_type` (upstream ADK).
- "kagent-1.0"  kagent 1.0 alpha (ADK 2 executor): text deltas as above, then one `lastChunk: true`
                update *without* `append` carrying the full turn (text + function_call parts):
                replace semantics. Then an empty working status message; tool results (and the
                approval placeholders) in their own artifact; usage metadata; adk_* task metadata.
                Tool parts marked `kagent.dev/a2a/part-type`.
- "kagent-0.10" kagent 0.10 (A2A 0.3): a submitted status carrying the user message opens the task;
                every text delta is a working status message with `kagent_adk_partial: true`, then
                the whole turn again as a non-partial message; tool calls and results ride in status
                messages; a pause is a working status then the input-required one with the same
                message; success ends with an artifact (`lastChunk`) holding the parts of the last
                non-partial message. Tool parts marked `kagent_type`.
- "kagent-go"   kagent 0.10's Go runtime (A2A 0.3; go/adk/pkg/a2a/executor.go, release/v0.10.x): as
                "kagent-0.10" with `adk_*` metadata keys (`adk_partial`, `adk_usage_metadata` on each
                non-partial event), tool parts marked `adk_type`; a pause is the input-required status
                alone (no working repeat), and the closing status carries no usage.
- "status"      plain A2A: every chunk, call and result is a working status message.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

from a2a.types import Artifact, Message, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from google.protobuf.json_format import ParseDict

from tests.fakes.a2a_agent.parts import (
    ADK_TYPE,
    KAGENT_PART_TYPE,
    KAGENT_TYPE,
    JsonPart,
    agent_message,
    function_call_part,
    function_response_part,
    merge_into,
    new_id,
    status,
    text_part,
    thought_part,
)
from tests.fakes.a2a_agent.steps import (
    FileOut,
    Finish,
    InputRequired,
    Text,
    TextStyle,
    Thought,
    ToolCall,
    ToolMarker,
    ToolResult,
)

Event: TypeAlias = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
Emit: TypeAlias = Callable[[Event], Awaitable[None]]
SeedTask: TypeAlias = Callable[[Task], Awaitable[None]]
TurnContent: TypeAlias = Text | Thought | ToolCall

FINAL_STATES = {
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "canceled": TaskState.TASK_STATE_CANCELED,
    "rejected": TaskState.TASK_STATE_REJECTED,
}

ADK_EXTENSION_KEY = "https://google.github.io/adk-docs/a2a/a2a-extension/"
KAGENT_USAGE_KEY = "kagent.dev/a2a/usage"
TOKEN_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


@dataclass
class _Turn:
    """One model turn being streamed: its artifact id, what was sent, and the aggregate so far."""

    artifact_id: str = field(default_factory=new_id)
    parts: list[JsonPart] = field(default_factory=list)
    deltas_sent: int = 0


class Renderer:
    """Base: the generic A2A shapes. Subclasses change what differs in their dialect."""

    default_marker: ClassVar[ToolMarker] = ADK_TYPE

    def __init__(self, *, task_id: str, context_id: str, agent_name: str, emit: Emit, seed_task: SeedTask):
        self.task_id = task_id
        self.context_id = context_id
        self.agent_name = agent_name
        self._emit = emit
        self._seed_task = seed_task
        self._turn: _Turn | None = None

    # --- the task around the script ---

    async def open(self, user_message: Message, *, new_task: bool) -> None:
        """First events of an execution: a fresh task is announced, a continued one goes back to work."""
        if new_task:
            task = Task(
                id=self.task_id,
                context_id=self.context_id,
                status=status(TaskState.TASK_STATE_SUBMITTED),
                history=[user_message],
            )
            task_metadata = self.task_metadata()
            if task_metadata:
                task.metadata.update(task_metadata)
            await self._emit(task)
        await self._status(TaskState.TASK_STATE_WORKING, metadata=self.task_metadata())

    def task_metadata(self) -> dict[str, Any] | None:
        return None

    # --- model turns ---

    async def content(self, step: TurnContent, *, last_in_turn: bool) -> None:
        raise NotImplementedError

    async def end_turn(self) -> None:
        self._turn = None

    async def tool_results(self, steps: Sequence[ToolResult]) -> None:
        await self.end_turn()
        await self._artifact(new_id(), self.result_parts(steps), last_chunk=True)

    # --- the end of the execution ---

    async def input_required(self, step: InputRequired, requested_extensions: frozenset[str]) -> None:
        await self.end_turn()
        await self._status(
            TaskState.TASK_STATE_INPUT_REQUIRED, self.pause_message(step, requested_extensions)
        )

    async def finish(self, step: Finish) -> None:
        await self.end_turn()
        await self._status(FINAL_STATES[step.state], self._text_message(step.text))

    async def file_artifact(self, step: FileOut) -> None:
        """A file the agent returns: an artifact of its own, whole in one update."""
        part: JsonPart = {"mediaType": step.media_type, "filename": step.filename}
        if step.raw is not None:
            part["raw"] = base64.b64encode(step.raw).decode()
        else:
            part["url"] = step.url or ""
        await self._artifact(new_id(), [part], last_chunk=True)

    # --- building blocks ---

    def part_for(self, step: TurnContent) -> JsonPart:
        if isinstance(step, Text):
            return text_part(step.chunk)
        if isinstance(step, Thought):
            return thought_part(step)
        return function_call_part(step, self.default_marker)

    def result_parts(self, steps: Sequence[ToolResult]) -> list[JsonPart]:
        return [function_response_part(step, self.default_marker) for step in steps]

    def pause_message(
        self,
        step: InputRequired,
        requested_extensions: frozenset[str],
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        structured = not step.only_if_requested or set(step.extensions) <= requested_extensions
        parts = ([text_part(step.text)] if step.text else []) + [dict(part) for part in step.data_parts]
        message_metadata = dict(metadata or {})
        if structured and step.metadata:
            message_metadata.update(step.metadata)
        return self._message(
            parts,
            metadata=message_metadata or None,
            extensions=step.extensions if structured else (),
        )

    def current_turn(self) -> _Turn:
        if self._turn is None:
            self._turn = _Turn()
        return self._turn

    def _message(self, parts: Sequence[JsonPart], **kwargs: Any) -> Message:
        return agent_message(parts, task_id=self.task_id, context_id=self.context_id, **kwargs)

    def _text_message(self, text: str | None) -> Message | None:
        return self._message([text_part(text)]) if text else None

    async def _status(
        self, state: TaskState, message: Message | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        event = TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=status(state, message)
        )
        if metadata:
            event.metadata.update(metadata)
        await self._emit(event)

    async def _artifact(
        self,
        artifact_id: str,
        parts: Sequence[JsonPart],
        *,
        append: bool = False,
        last_chunk: bool = False,
        artifact_metadata: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        artifact_json: dict[str, Any] = {"artifactId": artifact_id, "parts": list(parts)}
        if artifact_metadata is not None:
            artifact_json["metadata"] = artifact_metadata
        event = TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=ParseDict(artifact_json, Artifact()),
            append=append,
            last_chunk=last_chunk,
        )
        if metadata:
            event.metadata.update(metadata)
        await self._emit(event)


class ArtifactStyle(Renderer):
    """Generic streaming: every chunk is an artifact update; the turn's last one has `lastChunk`."""

    async def content(self, step: TurnContent, *, last_in_turn: bool) -> None:
        turn = self.current_turn()
        await self._artifact(
            turn.artifact_id, [self.part_for(step)], append=turn.deltas_sent > 0, last_chunk=last_in_turn
        )
        turn.deltas_sent += 1
        if last_in_turn:
            self._turn = None


class StatusStyle(Renderer):
    """Plain A2A: every chunk, call and result is its own working status message."""

    async def content(self, step: TurnContent, *, last_in_turn: bool) -> None:
        await self._status(TaskState.TASK_STATE_WORKING, self._message([self.part_for(step)]))

    async def tool_results(self, steps: Sequence[ToolResult]) -> None:
        await self._status(TaskState.TASK_STATE_WORKING, self._message(self.result_parts(steps)))


class KagentV1Style(Renderer):
    """kagent 1.0 alpha (tests/a2a/data/kagent_v1alpha): deltas, then the full turn as a replacing
    lastChunk."""

    default_marker = KAGENT_PART_TYPE

    def event_metadata(self) -> dict[str, Any]:
        return {ADK_EXTENSION_KEY: {"adk_agent_executor_v2": True}}

    def task_metadata(self) -> dict[str, Any]:
        return {
            "adk_app_name": self.agent_name,
            "adk_user_id": f"A2A_USER_{self.context_id}",
            "adk_session_id": self.context_id,
            **self.event_metadata(),
        }

    async def content(self, step: TurnContent, *, last_in_turn: bool) -> None:
        turn = self.current_turn()
        part = self.part_for(step)
        merge_into(turn.parts, part)
        if isinstance(step, ToolCall):
            return  # function calls only appear in the turn's final, aggregated update
        await self._artifact(
            turn.artifact_id,
            [part],
            append=turn.deltas_sent > 0,
            artifact_metadata={},
            metadata=self.event_metadata(),
        )
        turn.deltas_sent += 1

    async def end_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None or not turn.parts:
            return
        await self._artifact(
            turn.artifact_id,
            turn.parts,
            last_chunk=True,
            artifact_metadata={KAGENT_USAGE_KEY: dict(TOKEN_USAGE)},
            metadata=self.event_metadata(),
        )
        # kagent follows every model turn with a working status whose message has no parts at all.
        empty = agent_message([], task_id=None, context_id=None, metadata={})
        await self._status(TaskState.TASK_STATE_WORKING, empty, metadata=self.event_metadata())

    async def tool_results(self, steps: Sequence[ToolResult]) -> None:
        await self.end_turn()
        await self._artifact(
            new_id(),
            self.result_parts(steps),
            last_chunk=True,
            artifact_metadata={},
            metadata=self.event_metadata(),
        )

    async def input_required(self, step: InputRequired, requested_extensions: frozenset[str]) -> None:
        await self.end_turn()
        await self._status(
            TaskState.TASK_STATE_INPUT_REQUIRED,
            self.pause_message(step, requested_extensions),
            metadata={KAGENT_USAGE_KEY: dict(TOKEN_USAGE), **self.event_metadata()},
        )

    async def finish(self, step: Finish) -> None:
        await self.end_turn()
        metadata = self.event_metadata()
        if step.state == "completed":
            metadata = {KAGENT_USAGE_KEY: dict(TOKEN_USAGE), **metadata}
        await self._status(FINAL_STATES[step.state], self._text_message(step.text), metadata=metadata)


class KagentV010Style(Renderer):
    """kagent 0.10 (tests/a2a/data/kagent_v010): everything rides in status messages with kagent_*
    metadata."""

    default_marker = KAGENT_TYPE

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._invocation_id = f"e-{new_id()}"
        self._last_full_parts: list[JsonPart] = []  # what the closing artifact repeats

    def session_metadata(self) -> dict[str, Any]:
        return {
            "kagent_app_name": self.agent_name,
            "kagent_user_id": f"A2A_USER_{self.context_id}",
            "kagent_session_id": self.context_id,
        }

    def model_event_metadata(self, partial: bool | None) -> dict[str, Any]:
        return {
            **self.session_metadata(),
            "kagent_adk_partial": partial,
            "kagent_invocation_id": self._invocation_id,
            "kagent_author": self.agent_name,
        }

    def run_metadata(self) -> dict[str, Any]:
        return {
            **self.session_metadata(),
            "kagent_invocation_id": self._invocation_id,
            "kagent_usage_metadata": dict(TOKEN_USAGE),
        }

    async def open(self, user_message: Message, *, new_task: bool) -> None:
        if new_task:
            # kagent opens with a *status update* (submitted, carrying the user message), not a Task
            # event. a2a-sdk 1.x refuses a status update for a task it has never stored, so the task
            # is stored first, as a2a-sdk 0.3 did on its own.
            await self._seed_task(
                Task(
                    id=self.task_id,
                    context_id=self.context_id,
                    status=status(TaskState.TASK_STATE_SUBMITTED),
                    history=[user_message],
                )
            )
            await self._status(TaskState.TASK_STATE_SUBMITTED, user_message)
        await self._status(TaskState.TASK_STATE_WORKING, metadata=self.session_metadata())

    async def content(self, step: TurnContent, *, last_in_turn: bool) -> None:
        turn = self.current_turn()
        part = self.part_for(step)
        merge_into(turn.parts, part)
        if isinstance(step, ToolCall):
            return  # function calls only appear in the turn's non-partial message
        metadata = self.model_event_metadata(partial=True)
        await self._status(TaskState.TASK_STATE_WORKING, self._message([part], metadata=metadata), metadata)

    async def end_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None or not turn.parts:
            return
        metadata = {**self.model_event_metadata(partial=False), "kagent_usage_metadata": dict(TOKEN_USAGE)}
        await self._status(
            TaskState.TASK_STATE_WORKING, self._message(turn.parts, metadata=metadata), metadata
        )
        self._last_full_parts = turn.parts

    async def tool_results(self, steps: Sequence[ToolResult]) -> None:
        await self.end_turn()
        parts = self.result_parts(steps)
        metadata = self.model_event_metadata(partial=None)
        await self._status(TaskState.TASK_STATE_WORKING, self._message(parts, metadata=metadata), metadata)
        self._last_full_parts = parts

    async def input_required(self, step: InputRequired, requested_extensions: frozenset[str]) -> None:
        await self.end_turn()
        message_metadata = self.model_event_metadata(partial=None)
        message = self.pause_message(step, requested_extensions, metadata=message_metadata)
        # kagent's result aggregator forwards the pausing event as "working" and repeats the same
        # message (same messageId) in the final input-required update.
        await self._status(TaskState.TASK_STATE_WORKING, message, message_metadata)
        await self._status(TaskState.TASK_STATE_INPUT_REQUIRED, message, self.run_metadata())

    async def finish(self, step: Finish) -> None:
        await self.end_turn()
        if step.state == "completed" and self._last_full_parts:
            await self._artifact(new_id(), self._last_full_parts, last_chunk=True)
        await self._status(FINAL_STATES[step.state], self._text_message(step.text), self.run_metadata())


class KagentGoStyle(KagentV010Style):
    """kagent 0.10's Go runtime (tests/a2a/data/kagent_go/README.md cites the source)."""

    default_marker = ADK_TYPE

    def session_metadata(self) -> dict[str, Any]:
        return {
            "adk_app_name": self.agent_name,
            "adk_user_id": f"A2A_USER_{self.context_id}",
            "adk_session_id": self.context_id,
        }

    def model_event_metadata(self, partial: bool | None) -> dict[str, Any]:
        metadata = {
            **self.session_metadata(),
            "adk_invocation_id": self._invocation_id,
            "adk_author": self.agent_name,
        }
        if partial:
            metadata["adk_partial"] = True
        return metadata

    def run_metadata(self) -> dict[str, Any]:
        return {**self.session_metadata(), "adk_invocation_id": self._invocation_id}

    async def end_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None or not turn.parts:
            return
        metadata = {**self.model_event_metadata(partial=False), "adk_usage_metadata": dict(TOKEN_USAGE)}
        await self._status(
            TaskState.TASK_STATE_WORKING, self._message(turn.parts, metadata=metadata), metadata
        )
        self._last_full_parts = turn.parts

    async def input_required(self, step: InputRequired, requested_extensions: frozenset[str]) -> None:
        await self.end_turn()
        message = self.pause_message(step, requested_extensions)
        await self._status(TaskState.TASK_STATE_INPUT_REQUIRED, message, self.run_metadata())


RENDERERS: dict[TextStyle, type[Renderer]] = {
    "artifact": ArtifactStyle,
    "kagent-1.0": KagentV1Style,
    "kagent-0.10": KagentV010Style,
    "kagent-go": KagentGoStyle,
    "status": StatusStyle,
}
