"""The pauses of an agent's task that wait for people (a question, a tool approval), as the session
core sees them: through this interface alone.

The core (route, lease, run, reply, recover) does not know what a question or an approval is: the
interactions app, which sits above it, hands in its ``Pauses`` at start-up (interactions/apps.py),
as the runner hands the turn loop its coroutines. Until then, and in a process without the app, no
pause waits for people: ``NO_PAUSES``.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from kourier.a2a.events import ApprovalRequest, Question

from .models import Session, Turn

if TYPE_CHECKING:
    from django.db.models import Q, QuerySet

    from kourier.a2a.dialects import Dialect
    from kourier.a2a.wire import Message

# The pauses people can be asked to settle (the Binding's askUser and toolApprovals).
Pause = Question | ApprovalRequest


@dataclass(frozen=True)
class PausedTurn:
    """A turn whose task paused, as the runner hands it over: where its thread is, and how its task is
    cancelled (``cancel`` is False only when the agent could not be reached, to be tried again)."""

    turn_id: int
    channel_id: str
    thread_ts: str
    reply_key: str  # the turn's messageId: the prompt's and notices' keys in the outbox derive from it
    slack: Any  # the turn's Slack client
    cancel: Callable[[], Awaitable[bool]]
    task_id: str = ""  # the paused task ("" when the agent never named it)


@dataclass(frozen=True)
class AnswerTurn:
    """An answer turn, as the runner hands it over to build its message."""

    turn_id: int
    message_id: str
    team_id: str
    user_id: str  # who answered (empty for a timeout's denial)
    slack: Any  # the turn's Slack client (a typed answer names its author)


@dataclass(frozen=True)
class PauseEnd:
    """How the turn that paused ends once its pause was put to the thread (or could not be)."""

    outcome: Turn.Outcome
    notice: str | None = None


class UndeliveredAnswer(enum.Enum):
    """What became of an answer turn whose message surely never reached the agent (no connection made)."""

    KEPT = "kept"  # queued again for a later try: no notice, its prompt says it waits
    EXPIRED = "expired"  # past its pause's deadline: ended as unreachable, the timeout sweep tells the thread
    NOT_AN_ANSWER = "not-an-answer"  # the turn carries no person's answer: it fails as any turn


class Pauses(Protocol):
    async def put(self, turn: PausedTurn, pause: Pause) -> PauseEnd:
        """Puts the pause to the thread (its prompt posted once); or, when it cannot be, cancels the
        task through ``turn.cancel`` and says which notice the thread is told."""
        ...

    async def cancel_unasked(self, turn: PausedTurn, *, approval: bool) -> None:
        """A pause nobody is asked (askUser or toolApprovals off, a pause no one can answer): its task
        cancelled through ``turn.cancel``; while the agent cannot be reached, kept to be cancelled
        later, as the pauses that were asked are (``approval``: it asked to run tools)."""
        ...

    async def answer_message(self, turn: AnswerTurn, dialect: Dialect) -> Message:
        """What an answer turn (``Turn.Kind.ANSWER``, ``TYPED_ANSWER``) sends to the paused task."""
        ...

    def awaits_typed_reply(self, session_id: int) -> bool:
        """Whether the session's open pause takes a reply typed in the thread as its answer (its
        author, checked first as a press's presser is, then hands it to ``take_typed_reply``)."""
        ...

    def take_typed_reply(
        self, session: Session, *, message_ts: str, user_id: str, text: str, now: datetime
    ) -> int | None:
        """A reply typed in the thread, by someone who may answer, that answers its open pause: the
        answer turn's id, else None."""
        ...

    def holds(self, session_id: int, *, now: datetime) -> Q | None:
        """The condition (of any query) that the session's task waits for people, or for a person's
        answer kept until the agent can be reached and not yet due at ``now`` (its queued turns then
        wait too); None when nothing can. A condition, not a query: the runner's look for its next turn
        makes it part of its one statement, compiled once with stand-ins for ``session_id`` and ``now``
        (each may go into it only as it is)."""
        ...

    def held_sessions(self) -> QuerySet[Any]:
        """The ids of every session whose task waits for people, or whose kept answer's next try is not
        due (no runner is owed to them: the pauses' own sweep drives it when due)."""
        ...

    def keep_undelivered(self, turn_id: int) -> UndeliveredAnswer:
        """The answer turn ``turn_id`` could not reach the agent (it surely never arrived): kept for
        another try (the turn queued again), or given up past its pause's deadline."""
        ...

    def settle_answer(self, turn_id: int) -> None:
        """The answer turn ``turn_id`` ended (the agent took it, or it failed otherwise): no longer kept."""
        ...


class _NoPauses:
    async def put(self, turn: PausedTurn, pause: Pause) -> PauseEnd:
        raise LookupError("no pauses were handed in: nothing can put a pause to a thread")

    async def cancel_unasked(self, turn: PausedTurn, *, approval: bool) -> None:
        await turn.cancel()  # nothing keeps it: a process without the pauses tries once

    async def answer_message(self, turn: AnswerTurn, dialect: Dialect) -> Message:
        raise LookupError(f"answer turn {turn.turn_id} has no pause to answer")

    def awaits_typed_reply(self, session_id: int) -> bool:
        return False

    def take_typed_reply(
        self, session: Session, *, message_ts: str, user_id: str, text: str, now: datetime
    ) -> int | None:
        return None

    def holds(self, session_id: int, *, now: datetime) -> Q | None:
        return None

    def held_sessions(self) -> QuerySet[Any]:
        return Session.objects.none().values("pk")

    def keep_undelivered(self, turn_id: int) -> UndeliveredAnswer:
        return UndeliveredAnswer.NOT_AN_ANSWER

    def settle_answer(self, turn_id: int) -> None:
        return None


NO_PAUSES: Pauses = _NoPauses()
_pauses: Pauses = NO_PAUSES


def hand_in(pauses: Pauses) -> None:
    """Called once at start-up by the app that asks people (interactions/apps.py)."""
    global _pauses
    _pauses = pauses


def current() -> Pauses:
    return _pauses
