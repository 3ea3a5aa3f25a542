"""The words a live reply shows: the spec's fixed strings, durations, step counts, the lines shown
instead of cards, and how a card still under way reads once the turn has ended."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kourier.redaction import shorten

from .view import Card, CardStatus, Ending

# The spec's fixed strings.
WORKING = "Working…"
WROTE_THE_ANSWER = "Wrote the answer"
WROTE_AN_UPDATE = "Wrote an update"
FINISHED = "Finished"
WAITING_FOR_YOUR_ANSWER = "Waiting for your answer"
STOPPED = "Stopped"
WORKED = "Worked"
NO_RESULT = "No result was reported."
NO_OUTPUT = "(no output)"

CALL_DISPLAY_LIMIT = 200  # characters of name(arguments) in a title or line
TITLE_LIMIT = 256  # Slack task card title (UNVERIFIED); every title here stays under it

# A card's kind, which its id begins with: ``call-<call_id>``, ``working-<n>``, ``activity``.
CALL_CARD, WORKING_CARD, ACTIVITY_CARD = "call", "working", "activity"
# The titles the Working… and the activity card end with, by how the reply ends.
WORKING_ENDS = {
    Ending.COMPLETED: FINISHED,
    Ending.WAITING: WAITING_FOR_YOUR_ANSWER,
    Ending.FAILED: STOPPED,
}
ACTIVITY_ENDS = {
    Ending.COMPLETED: WORKED,
    Ending.WAITING: WAITING_FOR_YOUR_ANSWER,
    Ending.FAILED: STOPPED,
}


@dataclass
class StepCounts:
    """The steps the activity card and line count: every tool call, and those that failed."""

    steps: int = 0
    failed: int = 0


def format_duration(seconds: float) -> str:
    """``Took``'s duration: ``under 1 s``, ``26 s``, ``3 min 26 s``, ``3 min``, ``1 h 5 min``."""
    total = int(max(0.0, seconds))
    if total < 1:
        return "under 1 s"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def format_minutes(seconds: float) -> str | None:
    """The activity line's elapsed time in whole minutes (``2 min``, ``1 h 5 min``); None under a minute."""
    minutes = int(max(0.0, seconds)) // 60
    if minutes < 1:
        return None
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


def _step_count(n: int) -> str:
    return "1 step" if n == 1 else f"{n} steps"


def activity_title(counts: StepCounts) -> str:
    """``Working…``, ``Working… 12 steps``, ``Working… 12 steps, 3 failed``."""
    if not counts.steps:
        return WORKING
    failed = f", {counts.failed} failed" if counts.failed else ""
    return f"{WORKING} {_step_count(counts.steps)}{failed}"


def took(seconds: float, counts: StepCounts) -> str:
    """``Took 3 min 26 s, 16 steps (7 failed)``, ``Took 3 min 26 s, 16 steps``, ``Took 5 s``."""
    text = f"Took {format_duration(seconds)}"
    if counts.steps:
        text += f", {_step_count(counts.steps)}"
        if counts.failed:
            text += f" ({counts.failed} failed)"
    return text


def activity_line(seconds: float, counts: StepCounts) -> str:
    """``Working… (2 min, 12 steps, 3 failed)``; parts that are zero are left out."""
    parts = [p for p in (format_minutes(seconds),) if p]
    if counts.steps:
        parts.append(_step_count(counts.steps))
        if counts.failed:
            parts.append(f"{counts.failed} failed")
    return f"{WORKING} ({', '.join(parts)})" if parts else WORKING


def calling_line(display: str) -> str:
    return f"Calling {display}"


def ran_line(display: str) -> str:
    return f"Ran {display}"


def failed_line(display: str) -> str:
    return f"{display} failed"


def approval_title(name: str) -> str:
    return f"Approval requested: {shorten(name, CALL_DISPLAY_LIMIT)}"


def hidden_line(hidden: int) -> str:
    return "1 earlier step not shown" if hidden == 1 else f"{hidden} earlier steps not shown"


def ended_card(card: Card, outcome: Ending) -> Card:
    """A card a stream shows under way, closed as ``finish(outcome)`` closes it. For a stream a
    restarted process stops without the turn's events: all it knows is the card."""
    if card.status is not CardStatus.IN_PROGRESS:
        return card
    status = CardStatus.ERROR if outcome is Ending.FAILED else CardStatus.COMPLETE
    if card.id.startswith(WORKING_CARD + "-"):
        return replace(card, title=WORKING_ENDS[outcome], status=status)
    if card.id == ACTIVITY_CARD:
        return replace(card, title=ACTIVITY_ENDS[outcome], status=status)
    return replace(card, status=CardStatus.COMPLETE, output=NO_RESULT)  # a tool call with no result


def counts_as_text(text: str) -> bool:
    return bool(text.strip())
