"""The kinds of pause people settle (a question, a tool approval), as the one press path
(presses.py) and the one take-and-queue path (services.py) see them.

A kind says which prompt buttons its presses come from, how a press's values read as what its
answer turn carries (and the audit's shape of it), what the presser is told when a press is not
taken (the spec's fixed wordings), whether the Binding's approver groups are checked, and its prompt
as it waits and once it ended. A pause is put to the thread one way whatever its kind (asking.py). A
third kind of pause is one more ``PauseKind`` (its module, like questions.py and approvals.py) and its
entry in ``registry.KINDS``: nothing else is copied.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .approval_prompts import Unshowable
from .models import Interaction

# A prompt as it is posted: its blocks and its fallback text (what notifications show).
ShownPrompt = tuple[list[dict[str, Any]], str]


class Refusal(enum.StrEnum):
    """Why a press is not taken; each kind words it for the person alone (``PauseKind.refusals``)."""

    UNKNOWN = "unknown"  # no open prompt of this kind has this id, in this message
    CLOSED = "closed"  # it timed out or was cancelled
    TAKEN = "taken"  # someone answered or decided first
    MISMATCH = "mismatch"  # the values do not fit the prompt (a stale or forged press)
    INCOMPLETE = "incomplete"  # the person can fix it: the message says what is missing
    NOT_A_MEMBER = "not-a-member"
    MEMBERSHIP_UNKNOWN = "membership-unknown"
    NOT_AN_APPROVER = "not-an-approver"
    GROUPS_UNREADABLE = "groups-unreadable"
    GROUPS_UNAVAILABLE = "groups-unavailable"
    # Beyond the spec, a Binding's rules (issue 21): opt-in.
    NOT_A_TOOL_APPROVER = "not-a-tool-approver"  # not in the groups a tool rule of its own names
    SEPARATE_APPROVER = "separate-approver"  # four eyes: the person who asked approves


@dataclass(frozen=True)
class Refused:
    refusal: Refusal
    message: str  # for the person alone


@dataclass(frozen=True)
class Taken:
    """The press won: its answer turn is queued."""

    interaction_id: int
    turn_id: int


@dataclass(frozen=True)
class Reading:
    """A press read against its pause: what the answer turn carries, and the audit's shape of it."""

    answers: list[Any]
    audit: dict[str, Any]


@dataclass(frozen=True)
class Unfit:
    """A press that cannot be taken as it is: ``MISMATCH`` (``reason``, a fixed token for the log) or
    ``INCOMPLETE`` (``message`` tells the person what to fix)."""

    refusal: Refusal
    reason: str = ""
    message: str | None = None


@dataclass(frozen=True)
class PauseKind:
    kind: Interaction.Kind
    actions: tuple[str, ...]  # the action ids of its prompt's buttons
    taken: str  # the audit action and log event of a taken press
    turn_key: str  # its answer turn's key: f"{turn_key}-{interaction id}"
    refusals: Mapping[Refusal, str]
    read: Callable[[Interaction, str, Mapping[str, Any]], Reading | Unfit]  # (its pause, action id, values)
    # The prompt as it waits for people, or why it cannot be shown exactly (it is then refused).
    open_prompt: Callable[[Interaction], ShownPrompt | Unshowable]
    # The prompt once its Interaction ended: who answered, or timed out.
    ended_prompt: Callable[[Interaction], ShownPrompt]
    # What the thread is told when the prompt cannot be put to it: the pause is refused, its task cancelled.
    unusable_notice: str
    approvers: bool = False  # the Binding's approver groups are checked on every press
    # What the kind adds to a take's own transaction, once the Interaction is won: (its id, now).
    taken_in_transaction: Callable[[int, datetime], None] | None = None
    # What a complete press must also pass before it may win (the Interaction, its reading, the presser).
    vet: Callable[[Interaction, Reading, str], Refused | None] | None = None
    # What the kind adds to a take's transaction once it is audited: (the Interaction, its reading,
    # the presser, the decision's audit row id).
    recorded: Callable[[Interaction, Reading, str, int], None] | None = None
    # The rules the audit says a take was decided under ("binding", or the tool rules that matched).
    policy: Callable[[Interaction], str] | None = None

    def refused(self, refusal: Refusal, message: str | None = None) -> Refused:
        return Refused(refusal, message if message is not None else self.refusals[refusal])

    def answer_turn_key(self, interaction_id: int) -> str:
        return f"{self.turn_key}-{interaction_id}"
