"""What the scripted agent saw and holds, readable from the test thread.

Written on the server's event loop, read by tests on the main thread: every list lives behind one
`threading.Condition`, and the `wait_*` helpers block on it instead of sleeping.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from a2a.helpers.proto_helpers import get_message_text
from a2a.server.agent_execution import RequestContext
from a2a.types import Task, TaskState
from google.protobuf.json_format import MessageToDict

EXTENSION_HEADERS = ("A2A-Extensions", "X-A2A-Extensions")  # 1.0 name, and the 0.3 one

T = TypeVar("T")


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as it reached the agent (JSON-RPC calls and agent card fetches alike)."""

    seq: int
    http_method: str
    path: str
    headers: httpx.Headers
    body: bytes
    json: Any  # the parsed body, or None when it was not JSON
    rpc_method: str | None
    rpc_id: Any
    params: Any

    @property
    def a2a_version(self) -> str | None:
        return self.headers.get("A2A-Version")

    @property
    def extensions(self) -> list[str]:
        """Extension URIs the client activated, from either header spelling, comma lists split."""
        return split_extension_headers(self.headers)

    @property
    def authorization(self) -> str | None:
        return self.headers.get("Authorization")

    @property
    def message(self) -> dict[str, Any] | None:
        """`params.message` of a send call, as the client wrote it."""
        if isinstance(self.params, dict) and isinstance(self.params.get("message"), dict):
            return self.params["message"]
        return None


@dataclass(frozen=True)
class ReceivedMessage:
    """A message handed to the agent's executor: what `on_message` functions decide on.

    `parts` are in A2A 1.0 JSON form whatever protocol the client spoke (a 0.3 `{"kind": "data",
    "data": {...}}` arrives as `{"data": {...}}`; numbers come back as floats, protobuf Struct).
    `task_id` is the task the client continues, None for a message that starts a new task;
    `server_task_id` is the task the agent runs either way.
    """

    text: str
    parts: list[dict[str, Any]]
    message_id: str
    context_id: str
    task_id: str | None
    server_task_id: str
    metadata: dict[str, Any]
    extensions: list[str]  # the message's own `extensions` field
    requested_extensions: frozenset[str]  # activated by the request's A2A-Extensions header
    headers: httpx.Headers
    raw: dict[str, Any]

    @property
    def is_continuation(self) -> bool:
        return self.task_id is not None

    @property
    def data(self) -> list[Any]:
        """The payloads of the message's data parts."""
        return [part["data"] for part in self.parts if "data" in part]

    @classmethod
    def from_request(cls, context: RequestContext) -> ReceivedMessage:
        message = context.message
        if message is None:  # the SDK always builds executions from a message
            raise ValueError("request context without a message")
        headers = context.call_context.state.get("headers", {})
        return cls(
            text=get_message_text(message),
            parts=[MessageToDict(part) for part in message.parts],
            message_id=message.message_id,
            context_id=context.context_id or "",
            task_id=context.task_id if context.current_task is not None else None,
            server_task_id=context.task_id or "",
            metadata=MessageToDict(message.metadata),
            extensions=list(message.extensions),
            requested_extensions=frozenset(context.requested_extensions),
            headers=httpx.Headers(headers),
            raw=MessageToDict(message),
        )


@dataclass(frozen=True)
class TaskView:
    """A task as the agent's task store holds it right now."""

    id: str
    context_id: str
    state: str  # "submitted", "working", "input-required", "completed", "failed", "canceled", ...
    task: dict[str, Any] = field(repr=False)  # the whole task in A2A 1.0 JSON form

    @classmethod
    def from_proto(cls, task: Task) -> TaskView:
        return cls(task.id, task.context_id, state_name(task.status.state), MessageToDict(task))


def state_name(state: int) -> str:
    """TASK_STATE_INPUT_REQUIRED -> "input-required" (the 0.3 spelling, readable in asserts)."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")  # type: ignore[arg-type]


def split_extension_headers(headers: httpx.Headers) -> list[str]:
    uris: list[str] = []
    for name in EXTENSION_HEADERS:
        for value in headers.get_list(name):
            uris.extend(uri.strip() for uri in value.split(",") if uri.strip())
    return uris


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


class Recorder:
    """Thread-safe log of requests, received messages, tasks and script errors."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._received: list[ReceivedMessage] = []
        self._tasks: dict[str, TaskView] = {}  # insertion order = creation order
        self._errors: list[BaseException] = []

    # --- written by the server ---

    def next_request_seq(self) -> int:
        with self._condition:
            return len(self._requests) + 1

    def add_request(self, request: RecordedRequest) -> None:
        self._append(self._requests, request)

    def add_received(self, received: ReceivedMessage) -> None:
        self._append(self._received, received)

    def add_error(self, error: BaseException) -> None:
        self._append(self._errors, error)

    def update_task(self, view: TaskView) -> None:
        with self._condition:
            self._tasks[view.id] = view
            self._condition.notify_all()

    def forget_task(self, task_id: str) -> None:
        with self._condition:
            self._tasks.pop(task_id, None)
            self._condition.notify_all()

    def _append(self, items: list[T], item: T) -> None:
        with self._condition:
            items.append(item)
            self._condition.notify_all()

    # --- read by tests ---

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._condition:
            return list(self._requests)

    @property
    def received(self) -> list[ReceivedMessage]:
        with self._condition:
            return list(self._received)

    @property
    def tasks(self) -> list[TaskView]:
        with self._condition:
            return list(self._tasks.values())

    @property
    def errors(self) -> list[BaseException]:
        with self._condition:
            return list(self._errors)

    def take_errors(self) -> list[BaseException]:
        with self._condition:
            errors, self._errors = self._errors, []
            return errors

    def task(self, task_id: str) -> TaskView | None:
        with self._condition:
            return self._tasks.get(task_id)

    def wait_until(self, read: Callable[[], T | None], timeout: float, waiting_for: str) -> T:
        """Block until `read()` (called under the lock) returns something other than None."""
        found: list[T] = []

        def ready() -> bool:
            value = read()
            if value is None:
                return False
            found.append(value)
            return True

        with self._condition:
            if not self._condition.wait_for(ready, timeout):
                raise TimeoutError(f"scripted agent: timed out after {timeout}s waiting for {waiting_for}")
        return found[-1]

    def wait_for_requests(self, count: int, method: str | None, timeout: float) -> list[RecordedRequest]:
        def matching() -> list[RecordedRequest] | None:
            found = _filter_requests(self._requests, method)
            return found if len(found) >= count else None

        label = f"{count} request(s)" + (f" of {method}" if method else "")
        return self.wait_until(matching, timeout, label)

    def wait_for_received(self, count: int, timeout: float) -> list[ReceivedMessage]:
        def enough() -> list[ReceivedMessage] | None:
            return list(self._received) if len(self._received) >= count else None

        return self.wait_until(enough, timeout, f"{count} received message(s)")

    def wait_for_task_state(self, task_id: str, states: Iterable[str], timeout: float) -> TaskView:
        wanted = set(states)

        def in_state() -> TaskView | None:
            view = self._tasks.get(task_id)
            return view if view is not None and view.state in wanted else None

        return self.wait_until(in_state, timeout, f"task {task_id} in state {sorted(wanted)}")


def _filter_requests(requests: Iterable[RecordedRequest], method: str | None) -> list[RecordedRequest]:
    return [request for request in requests if method is None or request.rpc_method == method]
