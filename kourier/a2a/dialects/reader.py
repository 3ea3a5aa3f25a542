"""The turn reader every dialect shares: A2A stream events of one turn in, normalized events out.

A dialect differs only in how it reads a pause (``PauseReader``). Text, tool calls and results are read
the same way for every agent:

- Text: agent text parts of status messages, artifacts and direct messages, assembled by
  ``kourier.a2a.text.ReplyText``. User messages (agents echo the request back) and model thoughts
  (``kagent_thought`` / ``adk_thought``) are never shown.
- Tool calls and results: data parts marked ``adk_type``, ``kagent_type`` or
  ``kagent.dev/a2a/part-type`` as ``function_call`` / ``function_response``, correlated by ``data.id``,
  each reported once. ``adk_request_confirmation`` calls are ADK's approval mechanism, not tools. A
  *placeholder* response written while a call waits for a person is not a result (see
  ``is_placeholder_response``), and a result reports a failure per ``reports_failure``.

The reader does no I/O: ``feed()`` one wire event, get the normalized events it means.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kourier.a2a.events import AgentEvent, FileReturned, TaskEnded, TaskStarted, ToolCall, ToolResult
from kourier.a2a.text import ReplyText
from kourier.a2a.usage import TokenCount, per_call_usage, task_total_usage
from kourier.a2a.wire import (
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

PART_TYPE_KEYS = ("adk_type", "kagent_type", "kagent.dev/a2a/part-type")
PARTIAL_KEYS = ("adk_partial", "kagent_adk_partial")
THOUGHT_KEYS = ("adk_thought", "kagent_thought")
FUNCTION_CALL = "function_call"
FUNCTION_RESPONSE = "function_response"
CONFIRMATION_CALL = "adk_request_confirmation"

# kagent's approval callback appends an optional "Reason: ..." to this fixed text
# (docs/kagent-dialect.md §2).
KAGENT_DENIAL_PREFIX = "Tool call was rejected by user."
# ADK's own gated tools answer with this error until a person decides (not a result yet).
ADK_CONFIRMATION_PENDING_PREFIX = "This tool call requires confirmation"


@dataclass(frozen=True)
class Pause:
    """A task that stopped to wait for the client: what a dialect's pause reader looks at."""

    state: TaskState  # input-required or auth-required
    message: Message | None
    task_id: str
    context_id: str | None


PauseReader = Callable[[Pause], AgentEvent]


def metadata_flag(metadata: Mapping[str, Any], keys: Sequence[str]) -> bool:
    return any(metadata.get(key) is True for key in keys)


def part_type(part: Part) -> str | None:
    """``function_call`` / ``function_response`` / ... for ADK-marked data parts, else None."""
    for key in PART_TYPE_KEYS:
        value = part.metadata.get(key)
        if isinstance(value, str):
            return value
    return None


def visible_text(parts: Sequence[Part]) -> str:
    """The text of some parts without model thoughts."""
    return "".join(
        part.text
        for part in parts
        if isinstance(part, TextPart) and not metadata_flag(part.metadata, THOUGHT_KEYS)
    )


def is_placeholder_response(response: Any) -> bool:
    """A response written while a call waits for a person, not the call's result.

    - kagent's approval callback: ``{"status": "confirmation_requested", "tool": ...}`` (kagent 1.0 streams it)
    - kagent 1.0 ``ask_user`` and remote sub-agent tools while paused: ``{"status": "pending", ...}``
    - ADK's own gated tools: ``{"error": "This tool call requires confirmation, please approve or reject."}``
    """
    if not isinstance(response, dict):
        return False
    if response.get("status") in ("confirmation_requested", "pending"):
        return True
    error = response.get("error")
    return isinstance(error, str) and error.startswith(ADK_CONFIRMATION_PENDING_PREFIX)


def reports_failure(response: Any) -> bool:
    """Whether a tool's response says the call failed.

    - ``{"error": ...}`` with a non-empty value: ADK's and kagent's tool-error convention (the tool raised,
      or ADK refused it, e.g. "This tool call is rejected.");
    - ``{"isError": true, ...}``: an MCP tool result;
    - ``{"result": "Tool call was rejected by user. ..."}``: kagent's denial of an approval.
    Anything else (including a tool that returns text describing a problem) is a successful call.
    """
    if not isinstance(response, dict):
        return False
    if response.get("error") or response.get("isError") is True:
        return True
    result = response.get("result")
    return isinstance(result, str) and result.startswith(KAGENT_DENIAL_PREFIX)


class TurnReader:
    """Reads the wire events of one turn. Feed it every event of the turn's stream, in order.

    A task snapshot (``Task``: the first event of a subscription, or ``get_task`` after a dropped
    stream or a restart) may be fed too: what the reader has already seen is updated in place, the
    rest is added. From a snapshot's history only the messages after its last user message are read
    (the current turn); artifacts carry no turn, so a fresh reader shows all of them.
    """

    def __init__(self, read_pause: PauseReader) -> None:
        self._read_pause = read_pause
        self._text = ReplyText()
        self._task: tuple[str, str | None] | None = None
        self._calls_seen: set[str] = set()
        self._results_seen: set[str] = set()
        self._ended = False
        self._call_usage: dict[str, TokenCount] = {}  # by message id: a message is one model call
        self._task_total: TokenCount | None = None
        self._files_seen: set[str] = set()

    @property
    def ended(self) -> bool:
        """The turn has ended (``TaskEnded`` was emitted); later events are ignored."""
        return self._ended

    @property
    def usage(self) -> TokenCount | None:
        """The model tokens the agent reported in this turn, None when it reported none. With
        ``usage_is_task_total`` the count is the task's total so far (earlier turns of it included)."""
        if self._task_total is not None:
            return self._task_total
        counts = list(self._call_usage.values())
        return sum(counts[1:], counts[0]) if counts else None

    @property
    def usage_is_task_total(self) -> bool:
        return self._task_total is not None

    @property
    def text(self) -> str:
        """The reply text so far (what the ``TextDelta`` events add up to)."""
        return self._text.text

    def feed(self, event: StreamEvent) -> list[AgentEvent]:
        if self._ended:
            return []
        out: list[AgentEvent] = []
        if isinstance(event, Task):
            self._note_total(event.metadata)
            self._read_task(event, out)
        elif isinstance(event, StatusUpdate):
            self._note_total(event.metadata)
            self._note_task(event.task_id, event.context_id, out)
            self._read_status(event.state, event.message, event.task_id, event.context_id, out)
        elif isinstance(event, ArtifactUpdate):
            self._note_task(event.task_id, event.context_id, out)
            self._read_artifact(event.artifact_id, event.parts, event.append, event.last_chunk, out)
        else:
            # A direct reply without a task: the whole answer.
            if event.task_id:
                self._note_task(event.task_id, event.context_id, out)
            self._read_message(event, out)
            self._end(TaskState.COMPLETED, None, out)
        return out

    def _note_total(self, metadata: Mapping[str, Any]) -> None:
        total = task_total_usage(metadata)
        if total is not None:
            self._task_total = total

    def _note_task(self, task_id: str, context_id: str | None, out: list[AgentEvent]) -> None:
        if self._task is None or self._task[0] != task_id or (context_id and self._task[1] != context_id):
            self._task = (task_id, context_id or (self._task[1] if self._task else None))
            out.append(TaskStarted(task_id=self._task[0], context_id=self._task[1]))

    def _read_task(self, task: Task, out: list[AgentEvent]) -> None:
        self._note_task(task.id, task.context_id, out)
        last_user = max(
            (i for i, message in enumerate(task.history) if message.role is Role.USER), default=-1
        )
        for message in task.history[last_user + 1 :]:
            self._read_message(message, out)
        for artifact in task.artifacts:
            self._read_artifact(artifact.artifact_id, artifact.parts, False, True, out)
        self._read_status(task.state, task.status_message, task.id, task.context_id, out)

    def _read_status(
        self,
        state: TaskState,
        message: Message | None,
        task_id: str,
        context_id: str | None,
        out: list[AgentEvent],
    ) -> None:
        from_agent = message is not None and message.role is not Role.USER
        if state.is_paused:
            # The pause's own text is its prompt, not reply text.
            out.append(self._read_pause(Pause(state, message if from_agent else None, task_id, context_id)))
            self._end(TaskState.INPUT_REQUIRED, message if from_agent else None, out)
        elif state.is_terminal:
            if message is not None and from_agent:
                self._read_message(message, out, with_text=state is TaskState.COMPLETED)
            self._end(state, message if from_agent else None, out)
        elif message is not None and from_agent:
            self._read_message(message, out)

    def _read_message(self, message: Message, out: list[AgentEvent], *, with_text: bool = True) -> None:
        if message.role is Role.USER:
            return
        text = visible_text(message.parts)
        if metadata_flag(message.metadata, PARTIAL_KEYS):
            # A delta. Its tool parts, if any, may be incomplete: the full message repeats them.
            if with_text:
                self._text.add_partial(message.message_id, text)
                self._flush_text(out)
            return
        if with_text:
            self._text.set_message(message.message_id, text)
            self._flush_text(out)
        usage = per_call_usage(message.metadata)
        if usage is not None:
            self._call_usage[message.message_id] = usage
        self._read_tool_parts(message.parts, out)
        self._read_file_parts(message.parts, out)

    def _read_artifact(
        self, artifact_id: str, parts: Sequence[Part], append: bool, last_chunk: bool, out: list[AgentEvent]
    ) -> None:
        self._text.artifact_chunk(artifact_id, visible_text(parts), append=append, last_chunk=last_chunk)
        self._flush_text(out)
        self._read_tool_parts(parts, out)
        self._read_file_parts(parts, out)

    def _read_file_parts(self, parts: Sequence[Part], out: list[AgentEvent]) -> None:
        """Each file once, keyed by its name and content: a task read again shows it again, and an
        agent may send one file in its status message and again in its artifact (kagent does)."""
        for part in parts:
            if not isinstance(part, FilePart) or (part.raw is None and not part.url):
                continue
            content = hashlib.sha256(part.raw if part.raw is not None else (part.url or "").encode())
            key = f"{part.filename or ''}:{content.hexdigest()[:32]}"
            if key in self._files_seen:
                continue
            self._files_seen.add(key)
            out.append(
                FileReturned(
                    key=key,
                    filename=part.filename or f"file-{len(self._files_seen)}",
                    media_type=part.media_type or "application/octet-stream",
                    raw=part.raw,
                    url=part.url,
                )
            )

    def _read_tool_parts(self, parts: Sequence[Part], out: list[AgentEvent]) -> None:
        for part in parts:
            kind = part_type(part)
            if kind not in (FUNCTION_CALL, FUNCTION_RESPONSE) or not isinstance(part, DataPart):
                continue
            data = part.data if isinstance(part.data, dict) else {}
            call_id, name = data.get("id"), data.get("name")
            if not isinstance(call_id, str) or not call_id or name == CONFIRMATION_CALL:
                continue  # no id: nothing to correlate a card with
            if kind == FUNCTION_CALL and call_id not in self._calls_seen:
                self._calls_seen.add(call_id)
                args = data.get("args")
                out.append(
                    ToolCall(
                        call_id=call_id, name=str(name or ""), args=args if isinstance(args, dict) else {}
                    )
                )
            elif kind == FUNCTION_RESPONSE and call_id not in self._results_seen:
                response = data.get("response")
                if is_placeholder_response(response):
                    continue
                self._results_seen.add(call_id)
                out.append(
                    ToolResult(
                        call_id=call_id,
                        ok=not reports_failure(response),
                        name=name if isinstance(name, str) else None,
                    )
                )

    def _flush_text(self, out: list[AgentEvent]) -> None:
        delta = self._text.delta()
        if delta is not None:
            out.append(delta)

    def _end(self, state: TaskState, message: Message | None, out: list[AgentEvent]) -> None:
        text = visible_text(message.parts) if message is not None else ""
        out.append(TaskEnded(state=state, message=text or None))
        self._ended = True
