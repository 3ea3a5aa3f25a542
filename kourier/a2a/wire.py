"""The A2A objects the client sends and receives, independent of the protocol version.

A2A 0.3 and 1.0 carry the same things in different JSON (``kind`` discriminators and lowercase enums
vs. member-name discriminators and ``TASK_STATE_*`` / ``ROLE_*`` enums, ``final`` vs. a closing stream).
``codec_v03`` and ``codec_v10`` translate between that JSON and these dataclasses, so the dialect
readers and everything above them see one shape.

Metadata and data values are kept exactly as the agent sent them (plain JSON values): tool arguments
are shown to people and must not be rounded or re-typed on the way.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class TaskState(enum.StrEnum):
    """Task states of both protocol versions, spelled as in A2A 0.3."""

    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"
    UNKNOWN = "unknown"

    @property
    def is_terminal(self) -> bool:
        """The task is over; nothing more will happen to it."""
        return self in _TERMINAL_STATES

    @property
    def is_paused(self) -> bool:
        """The task waits for the client (an answer, credentials) before it goes on."""
        return self in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)

    @property
    def ends_stream(self) -> bool:
        """After this state the agent sends nothing more on the current stream."""
        return self.is_terminal or self.is_paused


_TERMINAL_STATES = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED})


class Role(enum.StrEnum):
    USER = "user"
    AGENT = "agent"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class TextPart:
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DataPart:
    data: Any
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FilePart:
    """A file by reference (``url``) or inline (``raw`` bytes)."""

    url: str | None = None
    raw: bytes | None = None
    media_type: str | None = None
    filename: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


Part = TextPart | DataPart | FilePart


@dataclass(frozen=True)
class Message:
    message_id: str
    role: Role
    parts: tuple[Part, ...]
    context_id: str | None = None
    task_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Accept the plain strings "user" / "agent" too; compare by identity everywhere else.
        object.__setattr__(self, "role", Role(self.role))
        object.__setattr__(self, "parts", tuple(self.parts))
        object.__setattr__(self, "extensions", tuple(self.extensions))


@dataclass(frozen=True)
class Artifact:
    artifact_id: str
    parts: tuple[Part, ...]
    name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    id: str
    context_id: str | None
    state: TaskState
    status_message: Message | None = None
    artifacts: tuple[Artifact, ...] = ()
    history: tuple[Message, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def has_message(self, message_id: str) -> bool:
        """Whether the task's history holds the message (how a request of unknown fate is looked up)."""
        return any(message.message_id == message_id for message in self.history)


@dataclass(frozen=True)
class StatusUpdate:
    """A task status change. ``final`` is A2A 0.3's flag; for 1.0 it is derived from the state."""

    task_id: str
    context_id: str | None
    state: TaskState
    message: Message | None = None
    final: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ArtifactUpdate:
    """A chunk of an artifact: ``append`` adds ``parts`` to the artifact, otherwise they replace it."""

    task_id: str
    context_id: str | None
    artifact_id: str
    parts: tuple[Part, ...]
    append: bool = False
    last_chunk: bool = False
    name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


StreamEvent = Task | Message | StatusUpdate | ArtifactUpdate


def ends_stream(event: StreamEvent) -> bool:
    """Whether the agent sends nothing after this event on the current stream.

    A2A 1.0 has no ``final`` flag (the server just closes the stream), and a server may keep a
    re-subscription to a paused task open, so the client stops at the first terminal or paused state.
    """
    if isinstance(event, Message):
        return True  # a direct reply without a task is the whole answer
    if isinstance(event, Task):
        return event.state.ends_stream
    if isinstance(event, StatusUpdate):
        return event.final or event.state.ends_stream
    return False


def text_of(parts: Sequence[Part]) -> str:
    """The text of some parts, concatenated: streamed chunks of one text arrive as consecutive parts."""
    return "".join(part.text for part in parts if isinstance(part, TextPart))


@dataclass(frozen=True)
class AgentCard:
    """What the client needs from ``/.well-known/agent-card.json``.

    ``protocol_version`` is ``"1.0"`` or ``"0.3"``; ``rpc_url`` is the JSON-RPC endpoint the card names
    (None when it names none); ``extensions`` are the URIs of the extensions the agent advertises.
    """

    name: str | None
    protocol_version: str
    rpc_url: str | None
    extensions: tuple[str, ...] = ()
    streaming: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict)
    input_modes: tuple[str, ...] = ()  # defaultInputModes: the media types the agent takes
