"""Dialects: how one family of agents speaks A2A (design.md).

Each dialect is a small pure module (``a2a``, ``kagent``); ``dialect_for`` hands out its interface:
a per-turn ``reader()`` that turns wire events into normalized events, the ``extensions`` the client
must opt into for it (``A2AClient(extensions=...)``), and builders for the messages that carry
answers and decisions back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kourier.a2a.dialects import a2a, kagent
from kourier.a2a.dialects.reader import TurnReader
from kourier.a2a.events import ApprovalRequest, Decision, Question
from kourier.a2a.wire import Message


class AnswerBuilder(Protocol):
    def __call__(
        self, question: Question, answers: Sequence[Sequence[str]], *, message_id: str
    ) -> Message: ...


class DecisionBuilder(Protocol):
    def __call__(
        self, request: ApprovalRequest, decisions: Mapping[str, Decision], *, message_id: str
    ) -> Message: ...


@dataclass(frozen=True)
class Dialect:
    name: str
    extensions: tuple[str, ...]
    reader: Callable[[], TurnReader]
    answer_message: AnswerBuilder
    decision_message: DecisionBuilder
    denial_reason: str  # the fixed reason a person's denial carries to the model
    timeout_denial_reason: str  # the one a denial carries when nobody decided in time
    policy_denial_reason: str = ""  # the one a Binding's rule gives when nobody asked (unattended: deny)


DIALECTS: dict[str, Dialect] = {
    module.NAME: Dialect(
        name=module.NAME,
        extensions=module.EXTENSIONS,
        reader=module.reader,
        answer_message=module.answer_message,
        decision_message=module.decision_message,
        denial_reason=getattr(module, "DENIAL_REASON", ""),
        timeout_denial_reason=getattr(module, "TIMEOUT_DENIAL_REASON", ""),
        policy_denial_reason=getattr(module, "POLICY_DENIAL_REASON", ""),
    )
    for module in (a2a, kagent)
}


def dialect_for(name: str) -> Dialect:
    """The dialect a Binding names ("a2a" or "kagent-v1")."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r}; known: {sorted(DIALECTS)}") from None


__all__ = ["DIALECTS", "Dialect", "TurnReader", "dialect_for"]
