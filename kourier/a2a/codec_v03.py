"""A2A 0.3 JSON-RPC (kagent 0.10 and other 0.3 agents): method names, params and JSON shapes.

0.3 objects carry a ``kind`` discriminator (``status-update``, ``artifact-update``, ``task``,
``message``; parts ``text`` / ``data`` / ``file``), states are lowercase (``input-required``) and the
last status update of a stream says ``final: true``.

Incoming objects are validated against the SDK's 0.3 models (``a2a.compat.v0_3.types``, generated from
the 0.3 JSON schema) and then read from the raw JSON, exactly like the 1.0 codec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pydantic
from a2a.compat.v0_3 import types as v03
from a2a.compat.v0_3.extension_headers import LEGACY_HTTP_EXTENSION_HEADER
from a2a.extensions.common import HTTP_EXTENSION_HEADER
from a2a.utils.constants import PROTOCOL_VERSION_0_3, VERSION_HEADER

from kourier.a2a.codec import compact, metadata_of, optional_str, require_dict
from kourier.a2a.codec_shared import SharedShapes, decode_file_bytes, encode_file_bytes
from kourier.a2a.errors import InvalidAgentResponse, NotSupportedByProtocol
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
        raise NotSupportedByProtocol("listing tasks is not part of A2A 0.3")

    def encode_message(self, message: Message) -> dict[str, Any]:
        return _SHAPES.encode_message(message)

    def decode_stream_event(self, result: Any) -> StreamEvent:
        kind = _validate(result, "stream event")
        if kind == "status-update":
            return _SHAPES.decode_status_update(result)
        if kind == "artifact-update":
            return _SHAPES.decode_artifact_update(result)
        if kind == "task":
            return _SHAPES.decode_task(result)
        return _SHAPES.decode_message(result)

    def decode_task(self, result: Any) -> Task:
        if _validate(result, "task") != "task":
            raise InvalidAgentResponse("expected a task")
        return _SHAPES.decode_task(result)

    def decode_list_tasks(self, result: Any) -> tuple[list[Task], str | None]:
        raise NotSupportedByProtocol("listing tasks is not part of A2A 0.3")


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


def _decode_role(value: Any) -> Role:
    return Role.USER if value == "user" else Role.AGENT if value == "agent" else Role.UNKNOWN


def _encode_role(role: Role) -> str:
    return "user" if role is Role.USER else "agent"


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
        return FilePart(
            url=optional_str(file.get("uri")),
            raw=decode_file_bytes(file["bytes"]) if "bytes" in file else None,
            media_type=optional_str(file.get("mimeType")),
            filename=optional_str(file.get("name")),
            metadata=metadata,
        )
    raise InvalidAgentResponse("part of unknown kind")


def _encode_part_content(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"kind": "text", "text": part.text}
    if isinstance(part, DataPart):
        return {"kind": "data", "data": part.data}
    file = compact(
        {
            "uri": part.url,
            "bytes": encode_file_bytes(part.raw),
            "mimeType": part.media_type,
            "name": part.filename,
        }
    )
    return {"kind": "file", "file": file}


def _is_final(update: Mapping[str, Any], state: TaskState) -> bool:
    return bool(update.get("final"))  # 0.3 marks the last status update of a stream


# Tasks, artifacts, messages and updates have the same members in 0.3 and 1.0; codec_shared reads
# and writes them once, with the parts, roles and states spelled the 0.3 way above.
_SHAPES = SharedShapes(
    decode_part=_decode_part,
    encode_part_content=_encode_part_content,
    decode_role=_decode_role,
    encode_role=_encode_role,
    decode_state=_decode_state,
    is_final=_is_final,
    message_kind="message",
)

CODEC = CodecV03()
