"""A2A 0.3 JSON-RPC (kagent 0.10 and other 0.3 agents): method names, params and JSON shapes.

0.3 objects carry a ``kind`` discriminator (``status-update``, ``artifact-update``, ``task``,
``message``; parts ``text`` / ``data`` / ``file``), states are lowercase (``input-required``) and the
last status update of a stream says ``final: true``.

Incoming objects are validated against the SDK's 0.3 models (``a2a.compat.v0_3.types``, generated from
the 0.3 JSON schema) and then read from the raw JSON, exactly like the 1.0 codec.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import pydantic
from a2a.compat.v0_3 import types as v03
from a2a.compat.v0_3.extension_headers import LEGACY_HTTP_EXTENSION_HEADER
from a2a.extensions.common import HTTP_EXTENSION_HEADER
from a2a.utils.constants import PROTOCOL_VERSION_0_3, VERSION_HEADER

from kourier.a2a.codec import compact, metadata_of, optional_str, require_dict, require_id
from kourier.a2a.errors import InvalidAgentResponse
from kourier.a2a.wire import (
    Artifact,
    ArtifactUpdate,
    DataPart,
    FilePart,
    Message,
    Part,
    Role,
    StatusUpdate,
    StreamEvent,
    Task,
    TaskState,
    TextPart,
)

VERSION = PROTOCOL_VERSION_0_3

_SCHEMA_BY_KIND: dict[str, type[pydantic.BaseModel]] = {
    "status-update": v03.TaskStatusUpdateEvent,
    "artifact-update": v03.TaskArtifactUpdateEvent,
    "task": v03.Task,
    "message": v03.Message,
}


class CodecV03:
    version = VERSION
    send_streaming_method = "message/stream"
    get_task_method = "tasks/get"
    cancel_task_method = "tasks/cancel"
    subscribe_method = "tasks/resubscribe"
    list_tasks_method: str | None = None

    def headers(self, extensions: Sequence[str]) -> dict[str, str]:
        # 0.3 servers ignore A2A-Version; a 1.x server with 0.3 compatibility uses it to pick 0.3.
        headers = {VERSION_HEADER: VERSION}
        if extensions:
            # 0.3 named the header X-A2A-Extensions; send both, as the SDK's 0.3 transport does.
            headers[HTTP_EXTENSION_HEADER] = headers[LEGACY_HTTP_EXTENSION_HEADER] = ",".join(extensions)
        return headers

    def send_params(self, message: Message) -> dict[str, Any]:
        return {"message": self.encode_message(message)}

    def list_tasks_params(self, context_id: str | None, page_token: str | None) -> dict[str, Any]:
        raise NotImplementedError("A2A 0.3 has no tasks/list")

    def encode_message(self, message: Message) -> dict[str, Any]:
        return compact(
            {
                "kind": "message",
                "messageId": message.message_id,
                "role": "user" if message.role is Role.USER else "agent",
                "parts": [_encode_part(part) for part in message.parts],
                "contextId": message.context_id,
                "taskId": message.task_id,
                "metadata": dict(message.metadata),
                "extensions": list(message.extensions),
            }
        )

    def decode_stream_event(self, result: Any) -> StreamEvent:
        kind = _validate(result, "stream event")
        if kind == "status-update":
            return _decode_status_update(result)
        if kind == "artifact-update":
            return _decode_artifact_update(result)
        if kind == "task":
            return _decode_task(result)
        return _decode_message(result)

    def decode_task(self, result: Any) -> Task:
        if _validate(result, "task") != "task":
            raise InvalidAgentResponse("expected a task")
        return _decode_task(result)

    def decode_list_tasks(self, result: Any) -> tuple[list[Task], str | None]:
        raise NotImplementedError("A2A 0.3 has no tasks/list")


def _validate(obj: Any, what: str) -> str:
    """Check ``obj`` against the 0.3 model its ``kind`` names; return the kind."""
    if not isinstance(obj, dict):
        raise InvalidAgentResponse(f"{what} is not a JSON object")
    schema = _SCHEMA_BY_KIND.get(obj.get("kind"))  # type: ignore[arg-type]
    if schema is None:
        raise InvalidAgentResponse(f"{what} of unknown kind")
    try:
        schema.model_validate(obj)
    except pydantic.ValidationError as error:
        # Validation errors quote the offending input; name only the kind of object.
        raise InvalidAgentResponse(f"{what} does not match the A2A 0.3 schema") from error
    return str(obj["kind"])


def _decode_state(value: Any) -> TaskState:
    try:
        return TaskState(value)
    except ValueError:
        return TaskState.UNKNOWN


def _decode_part(obj: Any) -> Part:
    part = require_dict(obj, "part")
    metadata = metadata_of(part)
    kind = part.get("kind")
    if kind == "text":
        return TextPart(text=part["text"], metadata=metadata)
    if kind == "data":
        return DataPart(data=part["data"], metadata=metadata)
    if kind == "file":
        file = require_dict(part.get("file"), "file")
        raw = None
        if "bytes" in file:
            try:
                raw = base64.b64decode(file["bytes"], validate=True)
            except (binascii.Error, TypeError, ValueError) as error:
                raise InvalidAgentResponse("file part with invalid base64") from error
        return FilePart(
            url=optional_str(file.get("uri")),
            raw=raw,
            media_type=optional_str(file.get("mimeType")),
            filename=optional_str(file.get("name")),
            metadata=metadata,
        )
    raise InvalidAgentResponse("part of unknown kind")


def _encode_part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        encoded: dict[str, Any] = {"kind": "text", "text": part.text}
    elif isinstance(part, DataPart):
        encoded = {"kind": "data", "data": part.data}
    else:
        file = compact(
            {
                "uri": part.url,
                "bytes": base64.b64encode(part.raw).decode("ascii") if part.raw is not None else None,
                "mimeType": part.media_type,
                "name": part.filename,
            }
        )
        encoded = {"kind": "file", "file": file}
    if part.metadata:
        encoded["metadata"] = dict(part.metadata)
    return encoded


def _decode_parts(obj: Any) -> tuple[Part, ...]:
    return tuple(_decode_part(part) for part in (obj or []))


def _decode_message(obj: Any) -> Message:
    message = require_dict(obj, "message")
    role = message.get("role")
    return Message(
        message_id=message.get("messageId") or "",
        role=Role.USER if role == "user" else Role.AGENT if role == "agent" else Role.UNKNOWN,
        parts=_decode_parts(message.get("parts")),
        context_id=optional_str(message.get("contextId")),
        task_id=optional_str(message.get("taskId")),
        metadata=metadata_of(message),
        extensions=tuple(message.get("extensions") or ()),
    )


def _decode_status(obj: Any) -> tuple[TaskState, Message | None]:
    status = require_dict(obj or {}, "task status")
    message = status.get("message")
    return _decode_state(status.get("state")), _decode_message(message) if message is not None else None


def _decode_task(task: dict[str, Any]) -> Task:
    state, status_message = _decode_status(task.get("status"))
    return Task(
        id=require_id(task.get("id"), "task"),
        context_id=optional_str(task.get("contextId")),
        state=state,
        status_message=status_message,
        artifacts=tuple(_decode_artifact(artifact) for artifact in task.get("artifacts") or ()),
        history=tuple(_decode_message(message) for message in task.get("history") or ()),
        metadata=metadata_of(task),
    )


def _decode_artifact(obj: Any) -> Artifact:
    artifact = require_dict(obj, "artifact")
    return Artifact(
        artifact_id=require_id(artifact.get("artifactId"), "artifact"),
        parts=_decode_parts(artifact.get("parts")),
        name=optional_str(artifact.get("name")),
        metadata=metadata_of(artifact),
    )


def _decode_status_update(update: dict[str, Any]) -> StatusUpdate:
    state, message = _decode_status(update.get("status"))
    return StatusUpdate(
        task_id=require_id(update.get("taskId"), "status update"),
        context_id=optional_str(update.get("contextId")),
        state=state,
        message=message,
        final=bool(update.get("final")),
        metadata=metadata_of(update),
    )


def _decode_artifact_update(update: dict[str, Any]) -> ArtifactUpdate:
    artifact = _decode_artifact(update.get("artifact"))
    return ArtifactUpdate(
        task_id=require_id(update.get("taskId"), "artifact update"),
        context_id=optional_str(update.get("contextId")),
        artifact_id=artifact.artifact_id,
        parts=artifact.parts,
        append=bool(update.get("append")),
        last_chunk=bool(update.get("lastChunk")),
        name=artifact.name,
        metadata=artifact.metadata,
    )


CODEC = CodecV03()
