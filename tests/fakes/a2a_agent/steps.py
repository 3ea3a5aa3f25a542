"""The vocabulary of a script: what the scripted agent does for one incoming message.

A script is a plain list of steps, played in order by the agent's executor. Steps only say *what*
happens ("a text chunk", "a tool call", "pause for input"); the text style of the agent or script
decides *how* that looks on the wire (see rendering.py), so one script can be replayed in every
dialect the product has to understand.

Rules a script must follow (checked by `validate`):
- `input_required`, `complete`/`fail`/`cancel`/`reject` and `drop_connection(forget_task=True)` end
  the task's turn, so they may only be the last step;
- a script without one of them completes the task after its last step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from tests.fakes.a2a_agent.gates import Gate

if TYPE_CHECKING:
    from tests.fakes.a2a_agent.records import ReceivedMessage

TextStyle: TypeAlias = Literal["artifact", "kagent-1.0", "kagent-0.10", "kagent-go", "status"]
TEXT_STYLES: tuple[TextStyle, ...] = ("artifact", "kagent-1.0", "kagent-0.10", "kagent-go", "status")

ToolMarker: TypeAlias = Literal["kagent.dev/a2a/part-type", "kagent_type", "adk_type"]
TOOL_MARKERS: tuple[ToolMarker, ...] = ("kagent.dev/a2a/part-type", "kagent_type", "adk_type")

FinalState: TypeAlias = Literal["completed", "failed", "canceled", "rejected"]


# --- model output ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """One streamed chunk of the model's answer. Consecutive chunks form one model turn."""

    chunk: str


@dataclass(frozen=True)
class Thought:
    """A chunk of model "thinking": a text part marked `{"kagent_thought": true}`."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model asks for a tool; rides with the model turn it belongs to."""

    call_id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    marker: ToolMarker | None = None  # None: the text style's usual marker


@dataclass(frozen=True)
class ToolResult:
    """A tool's result. Consecutive results are sent together, as ADK does for parallel calls."""

    call_id: str
    name: str
    response: Mapping[str, Any]
    marker: ToolMarker | None = None


# --- how the turn ends ----------------------------------------------------------------------------


@dataclass(frozen=True)
class InputRequired:
    """The task pauses in input-required; a later message with the same taskId continues it.

    `only_if_requested`: send `metadata` and `extensions` only when the request activated every one
    of `extensions` (A2A-Extensions header), otherwise just the text - what kagent 1.0 does.
    """

    text: str | None
    metadata: Mapping[str, Any] | None = None
    extensions: tuple[str, ...] = ()
    data_parts: tuple[
        Mapping[str, Any], ...
    ] = ()  # extra parts in A2A 1.0 JSON form: {"data": ..., "metadata": ...}
    only_if_requested: bool = False


@dataclass(frozen=True)
class Finish:
    """The task ends in a terminal state, optionally with a status message."""

    state: FinalState
    text: str | None = None


# --- pacing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sleep:
    """A slow gap (asyncio.sleep on the server). Prefer `WaitFor` in tests that need a stall."""

    seconds: float


@dataclass(frozen=True)
class WaitFor:
    """The script stops here until the test opens the gate (or sets the threading.Event)."""

    gate: Gate | threading.Event


# --- faults on the wire ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DropConnection:
    """Cut every open HTTP response of this task (SSE streams included) after what was sent so far.

    The task keeps running server-side and stays reachable (GetTask, SubscribeToTask,
    tasks/resubscribe), unless `forget_task`: then the agent "crashes" - the rest of the script is
    abandoned and the task is gone (GetTask answers TaskNotFound, -32001).
    """

    forget_task: bool = False


@dataclass(frozen=True)
class JsonRpcError:
    """A JSON-RPC error object. In a script: the open responses of this task end with it (an SSE
    `event: error` frame, or the JSON body of a blocking call) while the task goes on server-side.
    With `ScriptedAgent.fail_next_call`: the next call is answered with it and never reaches the SDK.
    """

    code: int
    message: str
    data: Any = None


@dataclass(frozen=True)
class Garbage:
    """Bytes that are not what the client expects. In a script: one malformed SSE event
    (`data: <payload>`) inserted into the task's open streams. With `fail_next_call`: the body of
    the next response (an SSE stream with that event, or a JSON body, depending on the method).
    """

    payload: str = '{"jsonrpc": "2.0", "result": {'


@dataclass(frozen=True)
class FileOut:
    """An artifact of its own holding one file part: the bytes (``raw``) or a ``url``."""

    filename: str
    media_type: str
    raw: bytes | None = None
    url: str | None = None


@dataclass(frozen=True)
class HttpStatus:
    """A bare HTTP error (e.g. a proxy's 502). Only for `ScriptedAgent.fail_next_call`."""

    status: int
    body: str = ""


Step: TypeAlias = (
    Text
    | Thought
    | ToolCall
    | ToolResult
    | InputRequired
    | Finish
    | Sleep
    | WaitFor
    | DropConnection
    | JsonRpcError
    | Garbage
    | FileOut
)
WireFault: TypeAlias = JsonRpcError | Garbage | HttpStatus

STEP_TYPES: tuple[type, ...] = (
    Text,
    Thought,
    ToolCall,
    ToolResult,
    InputRequired,
    Finish,
    Sleep,
    WaitFor,
    DropConnection,
    JsonRpcError,
    Garbage,
    FileOut,
)
TURN_CONTENT = (Text, Thought, ToolCall)


@dataclass(frozen=True)
class Script:
    """Steps for one message, optionally in a text style other than the agent's default."""

    steps: tuple[Step, ...]
    text_style: TextStyle | None = None


ScriptSource: TypeAlias = Callable[["ReceivedMessage"], "Script | Sequence[Step]"]


# --- constructors ---------------------------------------------------------------------------------


def text(chunk: str) -> Text:
    return Text(chunk)


def thought(text: str) -> Thought:
    return Thought(text)


def tool_call(
    call_id: str, name: str, args: Mapping[str, Any] | None = None, marker: ToolMarker | None = None
) -> ToolCall:
    return ToolCall(call_id, name, dict(args or {}), marker)


def tool_result(
    call_id: str, name: str, response: Mapping[str, Any], marker: ToolMarker | None = None
) -> ToolResult:
    return ToolResult(call_id, name, dict(response), marker)


def input_required(
    text: str | None,
    metadata: Mapping[str, Any] | None = None,
    extensions: Iterable[str] | None = None,
    *,
    data_parts: Iterable[Mapping[str, Any]] = (),
    only_if_requested: bool = False,
) -> InputRequired:
    return InputRequired(
        text=text,
        metadata=dict(metadata) if metadata is not None else None,
        extensions=tuple(extensions or ()),
        data_parts=tuple(data_parts),
        only_if_requested=only_if_requested,
    )


def complete() -> Finish:
    return Finish("completed")


def fail(text: str) -> Finish:
    return Finish("failed", text)


def cancel() -> Finish:
    return Finish("canceled")


def reject(text: str) -> Finish:
    return Finish("rejected", text)


def sleep(seconds: float) -> Sleep:
    return Sleep(seconds)


def wait_for(gate: Gate | threading.Event) -> WaitFor:
    return WaitFor(gate)


def drop_connection(*, forget_task: bool = False) -> DropConnection:
    return DropConnection(forget_task)


def jsonrpc_error(code: int, message: str, data: Any = None) -> JsonRpcError:
    return JsonRpcError(code, message, data)


def garbage(payload: str = Garbage.payload) -> Garbage:
    return Garbage(payload)


def file_out(filename: str, media_type: str, raw: bytes | None = None, *, url: str | None = None) -> FileOut:
    return FileOut(filename, media_type, raw, url)


def http_status(status: int, body: str = "") -> HttpStatus:
    return HttpStatus(status, body)


# --- scripts --------------------------------------------------------------------------------------


def validate(steps: Sequence[Step]) -> tuple[Step, ...]:
    """Reject scripts that cannot be played, at the moment the test writes them."""
    steps = tuple(steps)
    for position, step in enumerate(steps):
        if not isinstance(step, STEP_TYPES):
            raise TypeError(f"step {position} is not a script step: {step!r}")
        ends_turn = isinstance(step, InputRequired | Finish) or (
            isinstance(step, DropConnection) and step.forget_task
        )
        if ends_turn and position != len(steps) - 1:
            raise ValueError(
                f"step {position} ({type(step).__name__}) ends the task and must be the last step"
            )
    return steps


def as_script(value: Script | Sequence[Step], text_style: TextStyle | None = None) -> Script:
    script = value if isinstance(value, Script) else Script(tuple(value), text_style)
    if script.text_style is not None and script.text_style not in TEXT_STYLES:
        raise ValueError(f"unknown text style {script.text_style!r}; choose one of {TEXT_STYLES}")
    return Script(validate(script.steps), script.text_style)


def in_order(*scripts: Script | Sequence[Step]) -> ScriptSource:
    """An `on_message` function that answers the 1st message with the 1st script, and so on.

    A message beyond the last script is a test failure (the product sent more than expected): the
    agent fails that task and the fixture reports the error at teardown.
    """
    prepared = [as_script(script) for script in scripts]
    lock = threading.Lock()
    served = 0

    def next_script(received: ReceivedMessage) -> Script:
        nonlocal served
        with lock:
            if served >= len(prepared):
                raise LookupError(
                    f"in_order: message {served + 1} ({received.text!r}) arrived but only {len(prepared)} "
                    "scripts were given"
                )
            served += 1
            return prepared[served - 1]

    return next_script
