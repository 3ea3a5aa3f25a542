"""The JSON shapes A2A 0.3 and 1.0 have in common, read and written once for both codecs.

Both versions spell a task, its status, an artifact, the two stream updates and a message with the
same members (``id``, ``contextId``, ``status``, ``artifactId``, ``parts``, ``append``, ...). What
differs is how a part, a role and a state are spelled, whether an object names its ``kind``, and how a
status update says it is the last one. ``SharedShapes`` takes those differences from the version
module and does the rest, so ``codec_v03`` and ``codec_v10`` hold only what is specific to them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kourier.a2a.codec import compact, metadata_of, optional_str, require_dict, require_id
from kourier.a2a.errors import InvalidAgentResponse
from kourier.a2a.wire import (
    Artifact,
    ArtifactUpdate,
    Message,
    Part,
    Role,
    StatusUpdate,
    Task,
    TaskState,
)


@dataclass(frozen=True)
class SharedShapes:
    """Encodes messages and decodes tasks, artifacts, messages and updates for one protocol version."""

    decode_part: Callable[[Any], Part]
    # The members that say what the part holds; the shared ``metadata`` member is added here.
    encode_part_content: Callable[[Part], dict[str, Any]]
    decode_role: Callable[[Any], Role]
    encode_role: Callable[[Role], str]
    decode_state: Callable[[Any], TaskState]
    # Whether a status update is the last of its stream: 0.3 says so, 1.0 leaves it to the state.
    is_final: Callable[[Mapping[str, Any], TaskState], bool]
    # 0.3 tags a message with ``"kind": "message"``; 1.0 has no such member (None is left out).
    message_kind: str | None = None

    def encode_message(self, message: Message) -> dict[str, Any]:
        return compact(
            {
                "kind": self.message_kind,
                "messageId": message.message_id,
                "role": self.encode_role(message.role),
                "parts": [self.encode_part(part) for part in message.parts],
                "contextId": message.context_id,
                "taskId": message.task_id,
                "metadata": dict(message.metadata),
                "extensions": list(message.extensions),
            }
        )

    def encode_part(self, part: Part) -> dict[str, Any]:
        encoded = self.encode_part_content(part)
        if part.metadata:
            encoded["metadata"] = dict(part.metadata)
        return encoded

    def decode_parts(self, obj: Any) -> tuple[Part, ...]:
        return tuple(self.decode_part(part) for part in (obj or []))

    def decode_message(self, obj: Any) -> Message:
        message = require_dict(obj, "message")
        return Message(
            # kagent 1.0 sends a few messages without an id (the opening task's history): they are
            # never looked up by id, so an empty id is kept rather than refused.
            message_id=message.get("messageId") or "",
            role=self.decode_role(message.get("role")),
            parts=self.decode_parts(message.get("parts")),
            context_id=optional_str(message.get("contextId")),
            task_id=optional_str(message.get("taskId")),
            metadata=metadata_of(message),
            extensions=tuple(message.get("extensions") or ()),
        )

    def decode_status(self, obj: Any) -> tuple[TaskState, Message | None]:
        status = require_dict(obj or {}, "task status")
        message = status.get("message")
        state = self.decode_state(status.get("state"))
        return state, self.decode_message(message) if message is not None else None

    def decode_task(self, obj: Any) -> Task:
        task = require_dict(obj, "task")
        state, status_message = self.decode_status(task.get("status"))
        return Task(
            id=require_id(task.get("id"), "task"),
            context_id=optional_str(task.get("contextId")),
            state=state,
            status_message=status_message,
            artifacts=tuple(self.decode_artifact(artifact) for artifact in task.get("artifacts") or ()),
            history=tuple(self.decode_message(message) for message in task.get("history") or ()),
            metadata=metadata_of(task),
        )

    def decode_artifact(self, obj: Any) -> Artifact:
        artifact = require_dict(obj, "artifact")
        return Artifact(
            artifact_id=require_id(artifact.get("artifactId"), "artifact"),
            parts=self.decode_parts(artifact.get("parts")),
            name=optional_str(artifact.get("name")),
            metadata=metadata_of(artifact),
        )

    def decode_status_update(self, obj: Any) -> StatusUpdate:
        update = require_dict(obj, "status update")
        state, message = self.decode_status(update.get("status"))
        return StatusUpdate(
            task_id=require_id(update.get("taskId"), "status update"),
            context_id=optional_str(update.get("contextId")),
            state=state,
            message=message,
            final=self.is_final(update, state),
            metadata=metadata_of(update),
        )

    def decode_artifact_update(self, obj: Any) -> ArtifactUpdate:
        update = require_dict(obj, "artifact update")
        artifact = self.decode_artifact(update.get("artifact"))
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


def decode_file_bytes(value: Any) -> bytes:
    """The base64 content of a file part (0.3 ``file.bytes``, 1.0 ``raw``)."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError) as error:
        raise InvalidAgentResponse("file part with invalid base64") from error


def encode_file_bytes(raw: bytes | None) -> str | None:
    return base64.b64encode(raw).decode("ascii") if raw is not None else None
