"""Normalized agent events: the only thing the rest of Kourier sees of an agent.

A dialect reader (``kourier.a2a.dialects``) turns the A2A events of one turn into these. They hold
no protocol detail except the ids a pause needs so the dialect can build the answer later; the pause
events (``Question``, ``ApprovalRequest``) round-trip through ``to_dict`` / ``from_dict`` so an
interaction row can store them.

Order within a turn: ``TaskStarted`` first (once the agent names its task), then text, tool calls and
results as they happen, then at most one pause event (``Question``, ``ApprovalRequest`` or
``UnusablePause``), then ``TaskEnded`` last.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from kourier.a2a.wire import TaskState


class AnswerFormat(enum.StrEnum):
    """How a pause must be answered: which message shape the dialect builds."""

    TEXT = "text"  # a plain user text message to the paused task (any A2A agent)
    HITL_V1 = "hitl/v1"  # kagent 1.0: the https://kagent.dev/extensions/hitl/v1 message extension
    ADK_CONFIRMATION = "adk-confirmation"  # kagent 0.10: a decision_type DataPart


@dataclass(frozen=True)
class TaskStarted:
    """The agent named the task (and context) this turn runs in; the runner records them."""

    task_id: str
    context_id: str | None


@dataclass(frozen=True)
class TextDelta:
    """Reply text. ``replace=False``: append ``text``; ``replace=True``: the reply's whole text is now ``text``.

    A replace happens when the agent restates text already streamed in a different form (a final
    version of a streamed chunk sequence that differs from the chunks); a restatement that changes
    nothing produces no event at all.
    """

    text: str
    replace: bool = False


@dataclass(frozen=True)
class ToolCall:
    """The agent called a tool. ``agent`` names the sub-agent it belongs to; None for the agent itself."""

    call_id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    agent: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """A tool call's result arrived. ``ok`` is False when the result reports a failure.

    ``name`` is the tool's name as the result states it: a turn resumed after an approval sees the
    results of calls made in the turn before.
    """

    call_id: str
    ok: bool
    name: str | None = None


@dataclass(frozen=True)
class AskedQuestion:
    """One question. Empty ``choices`` means free text; ``multiple`` allows several choices."""

    text: str
    choices: tuple[str, ...] = ()
    multiple: bool = False


@dataclass(frozen=True)
class Question:
    """The agent paused to ask people something; answer with the dialect's ``answer_message``.

    ``agent`` names the sub-agent that asks (None: the agent itself). ``answer_id`` is the id the
    agent wants echoed with the answers (kagent hitl/v1), ``task_id`` / ``context_id`` the paused task.
    """

    questions: tuple[AskedQuestion, ...]
    task_id: str
    context_id: str | None
    answer_format: AnswerFormat
    agent: str | None = None
    answer_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Question:
        return cls(
            questions=tuple(
                AskedQuestion(text=q["text"], choices=tuple(q["choices"]), multiple=q["multiple"])
                for q in data["questions"]
            ),
            task_id=data["task_id"],
            context_id=data["context_id"],
            answer_format=AnswerFormat(data["answer_format"]),
            agent=data["agent"],
            answer_id=data["answer_id"],
        )


@dataclass(frozen=True)
class ToolToApprove:
    """One tool call waiting for a decision.

    ``approval_id`` is what the decision must name (opaque; may differ from the call id); ``call_id``
    matches the ``ToolCall`` of the same call, for cards and audit.
    """

    approval_id: str
    call_id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ApprovalRequest:
    """The agent paused until people approve or deny each of ``tools``; answer with ``decision_message``."""

    tools: tuple[ToolToApprove, ...]
    task_id: str
    context_id: str | None
    answer_format: AnswerFormat
    agent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        return cls(
            tools=tuple(
                ToolToApprove(
                    approval_id=t["approval_id"], call_id=t["call_id"], name=t["name"], args=t["args"]
                )
                for t in data["tools"]
            ),
            task_id=data["task_id"],
            context_id=data["context_id"],
            answer_format=AnswerFormat(data["answer_format"]),
            agent=data["agent"],
        )


@dataclass(frozen=True)
class Decision:
    """People's verdict on one ``ToolToApprove``. ``reason`` goes to the model with a denial."""

    approved: bool
    reason: str | None = None


@dataclass(frozen=True)
class UnusablePause:
    """The agent paused in a way this dialect cannot put to people: cancel the task and tell the thread.

    ``reason`` is a fixed token (no agent text), e.g. ``"structured-input"`` or ``"auth-required"``.
    """

    reason: str
    task_id: str
    context_id: str | None


@dataclass(frozen=True)
class TaskEnded:
    """The turn is over: the task finished or paused.

    ``state`` is one of completed, failed, canceled, rejected, input-required (every pause, including
    auth-required, reads as input-required). ``message`` is the agent's final status text, if any: for
    a failed, canceled or rejected task the agent's explanation, which is not part of the reply; for a
    completed task it was already emitted as reply text; for a pause it is the pause's own text.
    """

    state: TaskState
    message: str | None = None


@dataclass(frozen=True)
class FileReturned:
    """A file the agent returned (a file part of an artifact or of its message): its bytes (``raw``),
    or a ``url`` to fetch them from. ``key`` names it within the task (its name and a digest of its
    content), the same however often, and wherever, the task shows it."""

    key: str
    filename: str
    media_type: str
    raw: bytes | None = None
    url: str | None = None


AgentEvent = (
    TaskStarted
    | TextDelta
    | ToolCall
    | ToolResult
    | Question
    | ApprovalRequest
    | UnusablePause
    | TaskEnded
    | FileReturned
)
