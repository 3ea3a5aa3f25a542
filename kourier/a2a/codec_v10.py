"""A2A 1.0 JSON-RPC: method names, params and the JSON of messages, tasks and stream events.

1.0 JSON is the canonical JSON of the protobuf schema in ``a2a.types.a2a_pb2``: one-of members name
the kind (``{"statusUpdate": ...}``, part ``{"text"}`` / ``{"data"}`` / ``{"url"|"raw"}``), enums are
``TASK_STATE_*`` / ``ROLE_*``, and there is no ``final`` flag. Every request carries ``A2A-Version: 1.0``
(a 1.0 server reads a request without it as 0.3 and answers -32009).

Incoming objects are validated against the SDK's protobuf schema, then read from the raw JSON: going
through protobuf ``Struct`` would turn every number into a float, and tool arguments must reach people
exactly as the agent sent them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from a2a.extensions.common import HTTP_EXTENSION_HEADER
from a2a.types import a2a_pb2
from a2a.utils.constants import PROTOCOL_VERSION_1_0, VERSION_HEADER
from google.protobuf import json_format
from google.protobuf.message import Message as ProtobufMessage

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

VERSION = PROTOCOL_VERSION_1_0

_ROLE_TO_WIRE = {Role.USER: "ROLE_USER", Role.AGENT: "ROLE_AGENT"}
_ROLE_FROM_WIRE = {"ROLE_USER": Role.USER, "ROLE_AGENT": Role.AGENT}


class CodecV10:
    version = VERSION
    send_streaming_method = "SendStreamingMessage"
    get_task_method = "GetTask"
    cancel_task_method = "CancelTask"
    subscribe_method = "SubscribeToTask"
    list_tasks_method: str | None = "ListTasks"

    def headers(self, extensions: Sequence[str]) -> dict[str, str]:
        headers = {VERSION_HEADER: VERSION}
        if extensions:
            headers[HTTP_EXTENSION_HEADER] = ",".join(extensions)
        return headers

    def send_params(self, message: Message) -> dict[str, Any]:
        return {"message": self.encode_message(message)}

    def list_tasks_params(self, context_id: str | None, page_token: str | None) -> dict[str, Any]:
        return compact({"contextId": context_id, "pageToken": page_token})

    def encode_message(self, message: Message) -> dict[str, Any]:
        return compact(
            {
                "messageId": message.message_id,
                "role": _ROLE_TO_WIRE.get(message.role, "ROLE_UNSPECIFIED"),
                "parts": [_encode_part(part) for part in message.parts],
                "contextId": message.context_id,
                "taskId": message.task_id,
                "metadata": dict(message.metadata),
                "extensions": list(message.extensions),
            }
        )

    def decode_stream_event(self, result: Any) -> StreamEvent:
        _validate(result, a2a_pb2.StreamResponse(), "stream event")
        if "statusUpdate" in result:
            return _decode_status_update(result["statusUpdate"])
        if "artifactUpdate" in result:
            return _decode_artifact_update(result["artifactUpdate"])
        if "task" in result:
            return _decode_task(result["task"])
        if "message" in result:
            return _decode_message(result["message"])
        raise InvalidAgentResponse("stream event of unknown kind")

    def decode_task(self, result: Any) -> Task:
        _validate(result, a2a_pb2.Task(), "task")
        return _decode_task(result)

    def decode_list_tasks(self, result: Any) -> tuple[list[Task], str | None]:
        _validate(result, a2a_pb2.ListTasksResponse(), "task list")
        tasks = [_decode_task(task) for task in result.get("tasks", [])]
        return tasks, optional_str(result.get("nextPageToken"))


def _validate(obj: Any, schema: ProtobufMessage, what: str) -> None:
    """Check ``obj`` against the A2A 1.0 schema; members the schema does not know are tolerated."""
    if not isinstance(obj, dict):
        raise InvalidAgentResponse(f"{what} is not a JSON object")
    try:
        json_format.ParseDict(obj, schema, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError) as error:
        # ParseError text may quote field values; name only the kind of object.
        raise InvalidAgentResponse(f"{what} does not match the A2A 1.0 schema") from error


def decode_state(value: Any) -> TaskState:
    if isinstance(value, int):  # protobuf JSON may carry an enum as its number
        value = a2a_pb2.TaskState.Name(value) if value in a2a_pb2.TaskState.values() else ""
    if not isinstance(value, str):
        return TaskState.UNKNOWN
    name = value.removeprefix("TASK_STATE_").lower().replace("_", "-")
    try:
        return TaskState(name)
    except ValueError:
        return TaskState.UNKNOWN  # TASK_STATE_UNSPECIFIED or a state from a newer version


def _decode_role(value: Any) -> Role:
    if isinstance(value, int):
        value = a2a_pb2.Role.Name(value) if value in a2a_pb2.Role.values() else ""
    return _ROLE_FROM_WIRE.get(value, Role.UNKNOWN)


def _decode_part(obj: Any) -> Part:
    part = require_dict(obj, "part")
    metadata = metadata_of(part)
    if "text" in part:
        return TextPart(text=part["text"], metadata=metadata)
    if "data" in part:
        return DataPart(data=part["data"], metadata=metadata)
    raw = None
    if "raw" in part:
        try:
            raw = base64.b64decode(part["raw"], validate=True)
        except (binascii.Error, TypeError, ValueError) as error:
            raise InvalidAgentResponse("file part with invalid base64") from error
    if raw is not None or "url" in part:
        return FilePart(
            url=optional_str(part.get("url")),
            raw=raw,
            media_type=optional_str(part.get("mediaType")),
            filename=optional_str(part.get("filename")),
            metadata=metadata,
        )
    raise InvalidAgentResponse("part of unknown kind")


def _encode_part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        encoded: dict[str, Any] = {"text": part.text}
    elif isinstance(part, DataPart):
        encoded = {"data": part.data}
    else:
        encoded = compact(
            {
                "url": part.url,
                "raw": base64.b64encode(part.raw).decode("ascii") if part.raw is not None else None,
                "mediaType": part.media_type,
                "filename": part.filename,
            }
        )
    if part.metadata:
        encoded["metadata"] = dict(part.metadata)
    return encoded


def _decode_parts(obj: Any) -> tuple[Part, ...]:
    return tuple(_decode_part(part) for part in (obj or []))


def _decode_message(obj: Any) -> Message:
    message = require_dict(obj, "message")
    return Message(
        # kagent 1.0 sends a few messages without an id (the opening task's history): they are
        # never looked up by id, so an empty id is kept rather than refused.
        message_id=message.get("messageId") or "",
        role=_decode_role(message.get("role")),
        parts=_decode_parts(message.get("parts")),
        context_id=optional_str(message.get("contextId")),
        task_id=optional_str(message.get("taskId")),
        metadata=metadata_of(message),
        extensions=tuple(message.get("extensions") or ()),
    )


def _decode_status(obj: Any) -> tuple[TaskState, Message | None]:
    status = require_dict(obj or {}, "task status")
    message = status.get("message")
    return decode_state(status.get("state")), _decode_message(message) if message is not None else None


def _decode_task(obj: Any) -> Task:
    task = require_dict(obj, "task")
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


def _decode_status_update(obj: Any) -> StatusUpdate:
    update = require_dict(obj, "status update")
    state, message = _decode_status(update.get("status"))
    return StatusUpdate(
        task_id=require_id(update.get("taskId"), "status update"),
        context_id=optional_str(update.get("contextId")),
        state=state,
        message=message,
        final=state.ends_stream,  # 1.0 dropped the flag: the stream closes after such a state
        metadata=metadata_of(update),
    )


def _decode_artifact_update(obj: Any) -> ArtifactUpdate:
    update = require_dict(obj, "artifact update")
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


CODEC = CodecV10()
