"""The interface of a protocol-version codec: JSON-RPC method names, params and result shapes.

``codec_v10`` (A2A 1.0) and ``codec_v03`` (A2A 0.3) implement it; the client picks one from the
agent card and never looks at version differences itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kourier.a2a.errors import InvalidAgentResponse
from kourier.a2a.wire import Message, StreamEvent, Task


class Codec(Protocol):
    version: str
    send_streaming_method: str
    get_task_method: str
    cancel_task_method: str
    subscribe_method: str
    list_tasks_method: str | None  # None: the version has no ListTasks

    def headers(self, extensions: Sequence[str]) -> dict[str, str]: ...

    def send_params(self, message: Message) -> dict[str, Any]: ...

    def list_tasks_params(self, context_id: str | None, page_token: str | None) -> dict[str, Any]: ...

    def encode_message(self, message: Message) -> dict[str, Any]: ...

    def decode_stream_event(self, result: Any) -> StreamEvent: ...

    def decode_task(self, result: Any) -> Task: ...

    def decode_list_tasks(self, result: Any) -> tuple[list[Task], str | None]: ...


def task_params(task_id: str, history_length: int | None = None) -> dict[str, Any]:
    """Params of get/cancel/subscribe: the same in both versions."""
    params: dict[str, Any] = {"id": task_id}
    if history_length is not None:
        params["historyLength"] = history_length
    return params


# Small readers shared by both codecs. They run after the SDK's schema validated the object, so a
# failure here means a shape the schema allows but we cannot use (e.g. an empty id).


def require_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidAgentResponse(f"{what} is not a JSON object")
    return value


def require_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidAgentResponse(f"{what} has no id")
    return value


def optional_str(value: Any) -> str | None:
    """A string field, with the empty string protobuf JSON uses for "unset" read as None."""
    return value if isinstance(value, str) and value else None


def metadata_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def compact(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop unset members so the JSON we send holds only what we mean."""
    return {key: value for key, value in obj.items() if value not in (None, {}, [], ())}
