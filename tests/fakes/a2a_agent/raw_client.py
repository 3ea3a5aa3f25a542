"""Plain JSON-RPC and SSE over httpx: how the fake's tests look at the wire without any A2A client.

Deliberately dumb - no retries, no dialects, no SDK types - so a test sees exactly the bytes the
agent sent (and the product's own client, written elsewhere, is not used to test its own fake).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from httpx_sse import EventSource, ServerSentEvent

Protocol = Literal["1.0", "0.3"]

METHODS: dict[str, dict[Protocol, str]] = {
    "send": {"1.0": "SendMessage", "0.3": "message/send"},
    "stream": {"1.0": "SendStreamingMessage", "0.3": "message/stream"},
    "get": {"1.0": "GetTask", "0.3": "tasks/get"},
    "cancel": {"1.0": "CancelTask", "0.3": "tasks/cancel"},
    "subscribe": {"1.0": "SubscribeToTask", "0.3": "tasks/resubscribe"},
}


@dataclass
class StreamResult:
    """What one streaming call produced: the SSE frames, and how the stream ended."""

    status_code: int
    content_type: str
    frames: list[ServerSentEvent] = field(default_factory=list)
    body: dict[str, Any] | None = None  # a non-SSE (JSON) answer, e.g. an error before the stream
    broken: Exception | None = None  # the transport error when the connection was cut

    @property
    def envelopes(self) -> list[dict[str, Any]]:
        """Each frame's JSON-RPC envelope (raises on a frame that is not JSON)."""
        return [json.loads(frame.data) for frame in self.frames]

    @property
    def results(self) -> list[dict[str, Any]]:
        return [envelope["result"] for envelope in self.envelopes if "result" in envelope]

    @property
    def errors(self) -> list[dict[str, Any]]:
        envelopes = [self.body] if self.body is not None else self.envelopes
        return [envelope["error"] for envelope in envelopes if "error" in envelope]


class RawA2A:
    """Raw calls against one agent URL in one protocol (1.0 adds `A2A-Version: 1.0` by default)."""

    def __init__(
        self,
        url: str,
        protocol: Protocol,
        *,
        headers: Mapping[str, str] | None = None,
        send_version: bool = True,
        timeout: float = 5.0,
    ) -> None:
        default_headers = {"A2A-Version": "1.0"} if protocol == "1.0" and send_version else {}
        self.protocol = protocol
        self.rpc_url = url.rstrip("/") + "/"
        self.http = httpx.Client(headers={**default_headers, **(headers or {})}, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RawA2A:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- JSON-RPC ---

    def envelope(self, method: str, params: Any) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": str(uuid.uuid4()),
            "method": METHODS.get(method, {}).get(self.protocol, method),
            "params": params,
        }

    def call(
        self, method: str, params: Any = None, *, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """One non-streaming call; `method` is a JSON-RPC name or a short name ("send", "get", ...)."""
        response = self.http.post(self.rpc_url, json=self.envelope(method, params or {}), headers=headers)
        return response.json()

    def stream(self, method: str, params: Any, *, headers: Mapping[str, str] | None = None) -> StreamResult:
        """A streaming call read to its end (or until the connection breaks)."""
        with self.open_stream(method, params, headers=headers) as (result, frames):
            for _ in frames:
                pass
        return result

    @contextmanager
    def open_stream(
        self, method: str, params: Any, *, headers: Mapping[str, str] | None = None
    ) -> Iterator[tuple[StreamResult, Iterator[ServerSentEvent]]]:
        """A streaming call read frame by frame; frames are also collected in the result."""
        request = self.http.build_request(
            "POST", self.rpc_url, json=self.envelope(method, params), headers=headers
        )
        response = self.http.send(request, stream=True)
        result = StreamResult(response.status_code, response.headers.get("content-type", ""))
        try:
            if not result.content_type.startswith("text/event-stream"):
                result.body = json.loads(response.read())
                yield result, iter(())
            else:
                yield result, self._frames(response, result)
        finally:
            response.close()

    @staticmethod
    def _frames(response: httpx.Response, result: StreamResult) -> Iterator[ServerSentEvent]:
        try:
            for frame in EventSource(response).iter_sse():
                result.frames.append(frame)
                yield frame
        except httpx.TransportError as error:
            result.broken = error

    # --- messages ---

    def message(
        self,
        text: str | None = "hello",
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        message_id: str | None = None,
        data: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        extensions: list[str] | None = None,
    ) -> dict[str, Any]:
        """A user message in this protocol's JSON shape."""
        parts: list[dict[str, Any]] = []
        if self.protocol == "1.0":
            message: dict[str, Any] = {"messageId": message_id or str(uuid.uuid4()), "role": "ROLE_USER"}
            if data is not None:
                parts.append({"data": dict(data)})
            if text is not None:
                parts.append({"text": text})
        else:
            message = {"kind": "message", "messageId": message_id or str(uuid.uuid4()), "role": "user"}
            if data is not None:
                parts.append({"kind": "data", "data": dict(data)})
            if text is not None:
                parts.append({"kind": "text", "text": text})
        message["parts"] = parts
        for key, value in (
            ("taskId", task_id),
            ("contextId", context_id),
            ("metadata", metadata),
            ("extensions", extensions),
        ):
            if value is not None:
                message[key] = value
        return {"message": message}

    def send(self, text: str | None = "hello", **message_fields: Any) -> dict[str, Any]:
        return self.call("send", self.message(text, **message_fields))

    def send_streaming(self, text: str | None = "hello", **message_fields: Any) -> StreamResult:
        return self.stream("stream", self.message(text, **message_fields))

    def get_task(self, task_id: str, **params: Any) -> dict[str, Any]:
        return self.call("get", {"id": task_id, **params})

    def cancel_task(self, task_id: str) -> dict[str, Any]:
        return self.call("cancel", {"id": task_id})


def result_of(frame: ServerSentEvent) -> dict[str, Any]:
    """The JSON-RPC `result` carried by one SSE frame."""
    return json.loads(frame.data)["result"]


def task_of(response: dict[str, Any]) -> dict[str, Any]:
    """The task in a send/get answer, in either protocol (1.0 wraps it in `task`)."""
    result = response["result"]
    return result.get("task", result)


def state_of(event_or_task: dict[str, Any]) -> str:
    """The state of a task, status update or task snapshot, normalised to the 0.3 spelling."""
    body = event_or_task.get("task") or event_or_task.get("statusUpdate") or event_or_task
    raw = body["status"]["state"]
    return raw.removeprefix("TASK_STATE_").lower().replace("_", "-")


def task_id_of(event: dict[str, Any]) -> str:
    """The task id of any stream result (1.0 or 0.3)."""
    for key in ("task", "statusUpdate", "artifactUpdate"):
        if key in event:
            return event[key].get("id") or event[key]["taskId"]
    return event.get("taskId") or event["id"]
