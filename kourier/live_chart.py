"""A Binding's last hour drawn for its live page, as plain SVG geometry a template writes out (no
JavaScript, nothing to build): turns ended per minute, stacked by outcome, and the time from a message
taken as a turn to the first reply the thread shows, per minute.

Pure: it takes what live_state.py read from the database and the time, and returns numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median

MINUTES = 60
WIDTH = 600  # the SVG's user units: 10 per minute
HEIGHT = 100
SLOT = WIDTH / MINUTES

# An outcome's colour says what the operator makes of it: answered, waiting on people, refused or
# failed, and the rest (expired, budget spent, cancelled: the product said why in the thread).
GOOD, ASKING, BAD, OTHER = "#2e7d32", "#1565c0", "#c62828", "#9e9e9e"
COLOURS = {
    "completed": GOOD,
    "asked": ASKING,
    "auth-required": ASKING,
    "failed": BAD,
    "rejected": BAD,
    "gone": BAD,
    "garbled": BAD,
    "unreachable": BAD,
    "lost": BAD,
    "crashed": BAD,
    "question-unusable": BAD,
}


def colour_of(outcome: str) -> str:
    return COLOURS.get(outcome, OTHER)


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str  # the tooltip: the minute, the outcome, how many


@dataclass(frozen=True)
class LegendEntry:
    outcome: str
    colour: str
    count: int


@dataclass(frozen=True)
class TurnsChart:
    bars: list[Bar]
    legend: list[LegendEntry]
    peak: int  # turns in the busiest minute: the top of the scale
    total: int


@dataclass(frozen=True)
class ReplyPoint:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class ReplyChart:
    points: list[ReplyPoint]
    polyline: str  # "x,y x,y ..." for <polyline points>
    peak_seconds: float  # the slowest minute's median: the top of the scale
    median_seconds: float | None  # over the hour
    replies: int


def _minute_index(at: datetime, start: datetime) -> int | None:
    index = int((at - start).total_seconds() // 60)
    return index if 0 <= index < MINUTES else None


def hour_start(now: datetime) -> datetime:
    """The first minute shown: the hour ending with the current minute."""
    return now.replace(second=0, microsecond=0) - timedelta(minutes=MINUTES - 1)


def turns_chart(counts: Iterable[tuple[datetime, str, int]], now: datetime) -> TurnsChart:
    """``counts``: (minute, outcome, turns) of the turns that ended in the last hour."""
    start = hour_start(now)
    per_minute: list[dict[str, int]] = [{} for _ in range(MINUTES)]
    totals: dict[str, int] = {}
    for minute, outcome, count in counts:
        index = _minute_index(minute, start)
        if index is None or count <= 0:
            continue
        outcome = outcome or "none"
        per_minute[index][outcome] = per_minute[index].get(outcome, 0) + count
        totals[outcome] = totals.get(outcome, 0) + count
    peak = max((sum(minute.values()) for minute in per_minute), default=0)
    bars = []
    for index, minute_counts in enumerate(per_minute):
        bottom = float(HEIGHT)
        label = f"{start + timedelta(minutes=index):%H:%M}"
        for outcome in sorted(minute_counts, key=_outcome_order):
            height = HEIGHT * minute_counts[outcome] / peak
            bottom -= height
            bars.append(
                Bar(
                    x=index * SLOT + 1,
                    y=round(bottom, 2),
                    width=SLOT - 2,
                    height=round(height, 2),
                    colour=colour_of(outcome),
                    title=f"{label} {outcome}: {minute_counts[outcome]}",
                )
            )
    legend = [LegendEntry(o, colour_of(o), totals[o]) for o in sorted(totals, key=_outcome_order)]
    return TurnsChart(bars=bars, legend=legend, peak=peak, total=sum(totals.values()))


def _outcome_order(outcome: str) -> tuple[int, str]:
    """Answered at the bottom of a stack, failures on top where the eye lands."""
    return ([GOOD, ASKING, OTHER, BAD].index(colour_of(outcome)), outcome)


def reply_chart(replies: Iterable[tuple[datetime, float]], now: datetime) -> ReplyChart:
    """``replies``: (when the turn was taken, seconds to its first reply) of the last hour's turns."""
    start = hour_start(now)
    per_minute: dict[int, list[float]] = {}
    every: list[float] = []
    for taken_at, seconds in replies:
        index = _minute_index(taken_at, start)
        if index is None or seconds < 0:
            continue
        per_minute.setdefault(index, []).append(seconds)
        every.append(seconds)
    medians = {index: median(values) for index, values in sorted(per_minute.items())}
    peak = max(medians.values(), default=0.0)
    points = [
        ReplyPoint(
            x=round(index * SLOT + SLOT / 2, 2),
            y=round(HEIGHT - (HEIGHT * value / peak if peak else 0), 2),
            title=f"{start + timedelta(minutes=index):%H:%M} median {value:.1f} s ({len(per_minute[index])} replies)",
        )
        for index, value in medians.items()
    ]
    return ReplyChart(
        points=points,
        polyline=" ".join(f"{point.x:g},{point.y:g}" for point in points),
        peak_seconds=round(peak, 1),
        median_seconds=round(median(every), 1) if every else None,
        replies=len(every),
    )
