"""Parts and messages in the shapes kagent and ADK put on the wire.

Parts are written in A2A 1.0 JSON form (`{"text": ...}`, `{"data": ..., "metadata": ...}`) and
parsed into the SDK's protobuf types; the SDK's own serializers then produce the 1.0 or 0.3 wire
form, so the JSON the client sees is exactly what an a2a-sdk agent sends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from a2a.types import Message, Part, Role, TaskState, TaskStatus
from google.protobuf.json_format import ParseDict

from tests.fakes.a2a_agent.steps import Thought, ToolCall, ToolMarker, ToolResult

JsonPart = dict[str, Any]

KAGENT_PART_TYPE: ToolMarker = "kagent.dev/a2a/part-type"  # kagent 1.0
KAGENT_TYPE: ToolMarker = "kagent_type"  # kagent 0.10
ADK_TYPE: ToolMarker = "adk_type"  # upstream google-adk
THOUGHT_METADATA = {"kagent_thought": True}


def text_part(text: str) -> JsonPart:
    return {"text": text}


def thought_part(step: Thought) -> JsonPart:
    return {"text": step.text, "metadata": dict(THOUGHT_METADATA)}


def function_call_part(step: ToolCall, default_marker: ToolMarker) -> JsonPart:
    return {
        "data": {"name": step.name, "args": dict(step.args), "id": step.call_id},
        "metadata": {step.marker or default_marker: "function_call"},
    }


def function_response_part(step: ToolResult, default_marker: ToolMarker) -> JsonPart:
    return {
        "data": {"name": step.name, "response": dict(step.response), "id": step.call_id},
        "metadata": {step.marker or default_marker: "function_response"},
    }


def merge_into(parts: list[JsonPart], part: JsonPart) -> None:
    """Add a streamed chunk to a model turn: adjacent text of the same kind becomes one part,
    the way ADK aggregates a streamed turn into its final (non-partial) event."""
    if parts and "text" in part and "text" in parts[-1] and parts[-1].get("metadata") == part.get("metadata"):
        parts[-1] = {**parts[-1], "text": parts[-1]["text"] + part["text"]}
    else:
        parts.append(part)


def to_proto_parts(parts: Iterable[Mapping[str, Any]]) -> list[Part]:
    return [ParseDict(dict(part), Part()) for part in parts]


def new_id() -> str:
    return str(uuid.uuid4())


def agent_message(
    parts: Iterable[Mapping[str, Any]],
    *,
    task_id: str | None,
    context_id: str | None,
    metadata: Mapping[str, Any] | None = None,
    extensions: Iterable[str] = (),
    message_id: str | None = None,
) -> Message:
    message = Message(
        message_id=message_id or new_id(),
        role=Role.ROLE_AGENT,
        parts=to_proto_parts(parts),
        extensions=list(extensions),
    )
    if task_id:
        message.task_id = task_id
    if context_id:
        message.context_id = context_id
    if metadata is not None:
        message.metadata.SetInParent()  # kagent sends `"metadata": {}` on some messages; keep it present
        message.metadata.update(dict(metadata))
    return message


def status(state: TaskState, message: Message | None = None) -> TaskStatus:
    task_status = TaskStatus(state=state)
    task_status.timestamp.FromDatetime(datetime.now(UTC))
    if message is not None:
        task_status.message.CopyFrom(message)
    return task_status
