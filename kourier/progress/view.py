"""What a live reply is told to show: its ``View`` (a line, step cards, the text) and the ``Write``s
that carry it to Slack, with the choices that shape them (the progress mode, the thread's kind)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kourier.a2a.wire import TaskState


class ProgressMode(enum.StrEnum):
    """chat.progress; values as in the Binding manifest."""

    STEPS = "steps"
    STEPS_AND_ACTIVITY = "steps-and-activity"
    ACTIVITY = "activity"


DEFAULT_PROGRESS_MODE = ProgressMode.STEPS_AND_ACTIVITY  # what a Binding that sets no progress gets


class ThreadKind(enum.StrEnum):
    CHAT = "chat"  # started by a person's message: the reply streams to that person
    ALERT = "alert"  # started by a trigger: one message, posted and then updated


class CardStatus(enum.StrEnum):
    """Slack's task_update statuses (``pending`` is never used: a card begins under way)."""

    IN_PROGRESS = "in_progress"
    COMPLETE = "complete"
    ERROR = "error"


class Ending(enum.StrEnum):
    """How a reply ends, for the cards still open (a turn's own outcome is ``Turn.Outcome``)."""

    COMPLETED = "completed"  # the task completed
    WAITING = "waiting"  # the agent asks a question or for a tool approval
    FAILED = "failed"  # failed, canceled or rejected, or the request failed before the task ended

    @classmethod
    def for_state(cls, state: TaskState | str) -> Ending:
        """The outcome of a ``TaskEnded`` state (a pause is WAITING; anything not completed FAILED)."""
        state = TaskState(state)
        if state is TaskState.COMPLETED:
            return cls.COMPLETED
        if state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
            return cls.WAITING
        return cls.FAILED


class WriteKind(enum.StrEnum):
    START = "start"
    UPDATE = "update"
    STOP = "stop"


@dataclass(frozen=True)
class Card:
    """One step card. ``id`` is stable: ``call-<call_id>``, ``working-<n>`` or ``activity``."""

    id: str
    title: str
    status: CardStatus
    output: str | None = None


@dataclass(frozen=True)
class View:
    """What the reply shows, top to bottom: ``line`` (small print), ``cards``, ``text``.

    ``line`` is either the line shown instead of cards (``Calling …``, ``Working…``, the activity line)
    or, above an alert thread's cards, how many earlier steps are not shown. ``fallback`` is the
    message's plain text for notifications: the text, else the last card's title, else the line.
    """

    line: str | None
    cards: tuple[Card, ...]
    text: str
    fallback: str


@dataclass(frozen=True)
class Write:
    """One write to make. ``changed``: the cards new or different since the previous write (every card
    on a first write); ``first``: no message exists yet; ``timed``: made by ``tick`` (the clock)."""

    kind: WriteKind
    view: View
    changed: tuple[Card, ...] = ()
    text_changed: bool = False
    first: bool = False
    timed: bool = False
