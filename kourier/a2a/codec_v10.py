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

from collections.abc import Mapping, Sequence
from typing import Any

from a2a.extensions.common import HTTP_EXTENSION_HEADER
from a2a.types import a2a_pb2
from a2a.utils.constants import PROTOCOL_VERSION_1_0, VERSION_HEADER
from google.protobuf import json_format
from google.protobuf.message import Message as ProtobufMessage

from kourier.a2a.codec import compact, metadata_of, optional_str, require_dict
from kourier.a2a.codec_shared import SharedShapes, decode_file_bytes, encode_file_bytes
from kourier.a2a.errors import InvalidAgentResponse
from kourier.a2a.wire import (
    DataPart,
    FilePart,
    Message,
    Part,
    Role,
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
        return _SHAPES.encode_message(message)

    def decode_stream_event(self, result: Any) -> StreamEvent:
        _validate(result, a2a_pb2.StreamResponse(), "stream event")
        if "statusUpdate" in result:
            return _SHAPES.decode_status_update(result["statusUpdate"])
        if "artifactUpdate" in result:
            return _SHAPES.decode_artifact_update(result["artifactUpdate"])
        if "task" in result:
            return _SHAPES.decode_task(result["task"])
        if "message" in result:
            return _SHAPES.decode_message(result["message"])
        raise InvalidAgentResponse("stream event of unknown kind")

    def decode_task(self, result: Any) -> Task:
        _validate(result, a2a_pb2.Task(), "task")
        return _SHAPES.decode_task(result)

    def decode_list_tasks(self, result: Any) -> tuple[list[Task], str | None]:
        _validate(result, a2a_pb2.ListTasksResponse(), "task list")
        tasks = [_SHAPES.decode_task(task) for task in result.get("tasks", [])]
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


def _encode_role(role: Role) -> str:
    return _ROLE_TO_WIRE.get(role, "ROLE_UNSPECIFIED")


def _decode_part(obj: Any) -> Part:
    part = require_dict(obj, "part")
    metadata = metadata_of(part)
    if "text" in part:
        return TextPart(text=part["text"], metadata=metadata)
    if "data" in part:
        return DataPart(data=part["data"], metadata=metadata)
    raw = decode_file_bytes(part["raw"]) if "raw" in part else None
    if raw is not None or "url" in part:
        return FilePart(
            url=optional_str(part.get("url")),
            raw=raw,
            media_type=optional_str(part.get("mediaType")),
            filename=optional_str(part.get("filename")),
            metadata=metadata,
        )
    raise InvalidAgentResponse("part of unknown kind")


def _encode_part_content(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    if isinstance(part, DataPart):
        return {"data": part.data}
    return compact(
        {
            "url": part.url,
            "raw": encode_file_bytes(part.raw),
            "mediaType": part.media_type,
            "filename": part.filename,
        }
    )


def _is_final(update: Mapping[str, Any], state: TaskState) -> bool:
    return state.ends_stream  # 1.0 dropped the flag: the stream closes after such a state


# Tasks, artifacts, messages and updates have the same members in 0.3 and 1.0; codec_shared reads
# and writes them once, with the parts, roles and states spelled the 1.0 way above.
_SHAPES = SharedShapes(
    decode_part=_decode_part,
    encode_part_content=_encode_part_content,
    decode_role=_decode_role,
    encode_role=_encode_role,
    decode_state=decode_state,
    is_final=_is_final,
)

CODEC = CodecV10()
