"""The demo agent's server: a2a-sdk's request handler and task store, with an executor that plays
``script``'s steps in kagent 1.0's shapes (docs/kagent-dialect.md, tests/a2a/data/kagent_v1alpha):

- text streams as chunks of one artifact per model turn, then the whole turn (text and tool calls)
  again as a ``lastChunk`` that replaces it, then a working status with an empty message;
- tool results come in an artifact of their own; a pause's calls are answered first by placeholders
  (``confirmation_requested`` / ``pending``), which are not results;
- a pause is an input-required status whose message carries the hitl/v1 request in its metadata,
  when the client activated the extension (kagent sends only the hint otherwise).
"""

from __future__ import annotations

import asyncio
import base64
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

# a2a-sdk 1.3 has an import cycle (compat.v0_3.jsonrpc_adapter <-> server.routes): routes go first.
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes

# isort: split
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from starlette.applications import Starlette

from demo_agent import script
from demo_agent.script import (
    ASK_USER_CALL_ID,
    ASK_USER_TOOL,
    HITL_EXTENSION,
    AskApproval,
    AskUser,
    CallTool,
    Fail,
    Say,
    SendFile,
    Step,
    ToolResult,
    Wait,
)

PART_TYPE = "kagent.dev/a2a/part-type"  # kagent 1.0's marker of tool parts
NAME = "demo-agent"
DEFAULT_PACE_SECONDS = 0.15  # between streamed chunks: slow enough to watch, quick enough to wait for


def build_app(*, url: str, pace: float = DEFAULT_PACE_SECONDS) -> Starlette:
    """The agent's ASGI app; ``url`` is where clients reach it (the card's interface)."""
    card = agent_card(url)
    handler = DefaultRequestHandler(
        agent_executor=DemoExecutor(pace), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])


def agent_card(url: str) -> AgentCard:
    return AgentCard(
        name=NAME,
        description="Agent Kourier's scripted demo agent: no model, no network.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(
            streaming=True,
            extensions=[AgentExtension(uri=HITL_EXTENSION, description="kagent's human in the loop")],
        ),
        # What Agent Kourier sends it of the files people share: logs and other text, images, PDFs.
        default_input_modes=["text/*", "image/*", "application/pdf", "application/json"],
        default_output_modes=["text"],
        skills=[
            AgentSkill(
                id="demo",
                name="demo",
                description="Answers with tool calls, asks questions, asks approvals, fails on request.",
                tags=["demo"],
            )
        ],
    )


class DemoExecutor(AgentExecutor):
    def __init__(self, pace: float) -> None:
        self.pace = pace

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id, message = context.task_id, context.context_id, context.message
        if not task_id or not context_id or message is None:
            raise ValueError("a request without task id, context id or message")
        turn = _Turn(
            event_queue, task_id, context_id, self.pace, HITL_EXTENSION in context.requested_extensions
        )
        if context.current_task is None:
            await turn.emit(
                Task(
                    id=task_id,
                    context_id=context_id,
                    status=_status(TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
            steps = script.first_turn(_text_of(message), task_id, _files_of(message))
        else:
            try:
                steps = script.continuation(_hitl_response(message), task_id)
            except script.BadContinuation as refusal:
                steps = [Fail(str(refusal))]
        await turn.play(steps)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(
            TaskStatusUpdateEvent(
                task_id=context.task_id or "",
                context_id=context.context_id or "",
                status=_status(TaskState.TASK_STATE_CANCELED),
            )
        )


class _Turn:
    """Plays steps onto the task's event queue, one model turn (artifact) at a time."""

    def __init__(
        self, queue: EventQueue, task_id: str, context_id: str, pace: float, structured_pauses: bool
    ) -> None:
        self.queue = queue
        self.task_id = task_id
        self.context_id = context_id
        self.pace = pace
        self.structured_pauses = structured_pauses
        self.artifact_id: str | None = None
        self.parts: list[dict[str, Any]] = []
        self.chunks_sent = 0

    async def emit(self, event: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent) -> None:
        await self.queue.enqueue_event(event)

    async def play(self, steps: Sequence[Step]) -> None:
        await self.emit(self._status_event(TaskState.TASK_STATE_WORKING))
        for step in steps:
            if isinstance(step, Say):
                await self.say(step.text)
            elif isinstance(step, CallTool):
                self.parts.append(_call_part(step.call_id, step.name, dict(step.args)))
            elif isinstance(step, ToolResult):
                await self.results([_result_part(step.call_id, step.name, dict(step.response))])
            elif isinstance(step, AskUser):
                await self.ask_user(step)
                return
            elif isinstance(step, AskApproval):
                await self.ask_approval(step)
                return
            elif isinstance(step, SendFile):
                await self.end_model_turn()
                await self.emit(self._artifact_event(str(uuid.uuid4()), [_file_part(step)], last_chunk=True))
            elif isinstance(step, Wait):
                await self.end_model_turn()
                await asyncio.sleep(step.seconds)
            elif isinstance(step, Fail):
                await self.end_model_turn()
                await self.emit(self._status_event(TaskState.TASK_STATE_FAILED, _agent_message(step.text)))
                return
        await self.end_model_turn()
        await self.emit(self._status_event(TaskState.TASK_STATE_COMPLETED))

    async def say(self, text: str) -> None:
        if self.artifact_id is None:
            self.artifact_id = str(uuid.uuid4())
        for chunk in _chunks(text):
            await asyncio.sleep(self.pace)
            await self.emit(
                self._artifact_event(self.artifact_id, [{"text": chunk}], append=self.chunks_sent > 0)
            )
            self.chunks_sent += 1
            if self.parts and "text" in self.parts[-1]:
                self.parts[-1] = {"text": self.parts[-1]["text"] + chunk}
            else:
                self.parts.append({"text": chunk})

    async def end_model_turn(self) -> None:
        """The whole turn again, replacing its chunks (kagent 1.0), then an empty working status."""
        if not self.parts:
            return
        await self.emit(
            self._artifact_event(self.artifact_id or str(uuid.uuid4()), self.parts, last_chunk=True)
        )
        await self.emit(self._status_event(TaskState.TASK_STATE_WORKING, _agent_message(None)))
        self.artifact_id, self.parts, self.chunks_sent = None, [], 0

    async def results(self, parts: list[dict[str, Any]]) -> None:
        await self.end_model_turn()
        await asyncio.sleep(self.pace * 4)  # a tool takes a moment: its card is seen running
        await self.emit(self._artifact_event(str(uuid.uuid4()), parts, last_chunk=True))

    async def ask_user(self, step: AskUser) -> None:
        questions = [question.as_json() for question in step.questions]
        self.parts.append(_call_part(ASK_USER_CALL_ID, ASK_USER_TOOL, {"questions": questions}))
        await self.results(
            [_result_part(ASK_USER_CALL_ID, ASK_USER_TOOL, {"status": "pending", "questions": questions})]
        )
        hint = "; ".join(question.question for question in step.questions)
        await self.pause(hint, {"type": "ask_user_request", "id": step.request_id, "questions": questions})

    async def ask_approval(self, step: AskApproval) -> None:
        for tool in step.tools:
            self.parts.append(_call_part(tool.call_id, tool.name, dict(tool.args)))
        await self.results(
            [
                _result_part(tool.call_id, tool.name, {"status": "confirmation_requested", "tool": tool.name})
                for tool in step.tools
            ]
        )
        hints = "; ".join(f"Tool '{tool.name}' requires approval before execution." for tool in step.tools)
        hint = f"{hints} ({', '.join(tool.name for tool in step.tools)})"
        tools = [
            {"id": tool.approval_id, "call_id": tool.call_id, "name": tool.name, "args": dict(tool.args)}
            for tool in step.tools
        ]
        await self.pause(hint, {"type": "tool_approval_request", "hint": hint, "tools": tools})

    async def pause(self, hint: str, request: dict[str, Any]) -> None:
        if self.structured_pauses:
            message = _agent_message(hint, metadata={HITL_EXTENSION: request}, extensions=[HITL_EXTENSION])
        else:
            message = _agent_message(hint)
        await self.emit(self._status_event(TaskState.TASK_STATE_INPUT_REQUIRED, message))

    def _status_event(self, state: TaskState, message: Message | None = None) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=_status(state, message)
        )

    def _artifact_event(
        self, artifact_id: str, parts: list[dict[str, Any]], *, append: bool = False, last_chunk: bool = False
    ) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=ParseDict({"artifactId": artifact_id, "parts": parts}, Artifact()),
            append=append,
            last_chunk=last_chunk,
        )


def _chunks(text: str) -> list[str]:
    """A few words at a time, as a model streams."""
    words = re.findall(r"\s*\S+\s*", text)
    return ["".join(words[i : i + 4]) for i in range(0, len(words), 4)]


def _call_part(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"data": {"id": call_id, "name": name, "args": args}, "metadata": {PART_TYPE: "function_call"}}


def _result_part(call_id: str, name: str, response: dict[str, Any]) -> dict[str, Any]:
    return {
        "data": {"id": call_id, "name": name, "response": response},
        "metadata": {PART_TYPE: "function_response"},
    }


def _agent_message(
    text: str | None, *, metadata: dict[str, Any] | None = None, extensions: Sequence[str] = ()
) -> Message:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_AGENT,
        parts=[ParseDict({"text": text}, Part())] if text else [],
        extensions=list(extensions),
    )
    if metadata:
        message.metadata.update(metadata)
    return message


def _status(state: TaskState, message: Message | None = None) -> TaskStatus:
    status = TaskStatus(state=state)
    status.timestamp.FromDatetime(datetime.now(UTC))
    if message is not None:
        status.message.CopyFrom(message)
    return status


def _files_of(message: Message) -> list[script.SharedFile]:
    return [
        script.SharedFile(part.filename, part.media_type, part.raw)
        for part in message.parts
        if part.HasField("raw")
    ]


def _file_part(step: SendFile) -> dict[str, Any]:
    return {
        "raw": base64.b64encode(step.content).decode(),
        "mediaType": step.media_type,
        "filename": step.filename,
    }


def _text_of(message: Message) -> str:
    return "".join(part.text for part in message.parts if part.HasField("text"))


def _hitl_response(message: Message) -> dict[str, Any] | None:
    response = MessageToDict(message.metadata).get(HITL_EXTENSION)
    return response if isinstance(response, dict) else None
