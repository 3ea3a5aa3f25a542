"""A session's timeline: every turn, agent event (reply text, tool call and result, question, approval,
the task's end), Slack write, question or approval, notice, press and audit row of one thread on one
time axis, drawn as SVG for the session's page in the admin.

Pure: it reads rows already loaded (turns with their recorded Slack calls, interactions, post intents,
feedback, audit rows) and returns marks, then a drawing; no I/O. Labels name kinds, methods, outcomes
and ids, never message text; a mark's ``text`` (the person's message, a notice's words) is drawn only
when the viewer may read message text (superusers; sessions/admin.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from xml.sax.saxutils import escape

LANES = ("Turns", "Agent", "Slack writes", "Questions", "Notices", "Presses", "Audit")
# The row under the lanes where the quiet stretches are drawn: nothing ran and nothing happened.
WAITS = "Waits"
# A quiet stretch is drawn when it is this share of the whole axis or more: where a slow answer's
# time went, at a glance, and not every pause between two writes.
WAIT_SHARE = 0.05
WIDTH, LABELS, LANE_HEIGHT, TOP, BOTTOM = 960, 110, 30, 24, 28
TEXT_SHOWN = 80  # characters of a message shown to those who may read it


@dataclass(frozen=True)
class Mark:
    lane: str
    start: datetime
    end: datetime | None  # None: a moment
    label: str  # what happened, without message text
    text: str = ""  # message text, for viewers who may read it
    trouble: bool = False  # a 429, a retry, a failure: drawn in red

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds() if self.end else 0.0


def marks_of(
    turns: Iterable[Any],
    interactions: Iterable[Any] = (),
    post_intents: Iterable[Any] = (),
    feedback: Iterable[Any] = (),
    audit_rows: Iterable[Any] = (),
) -> list[Mark]:
    """The marks of a session's rows, in time order (turns with their ``agent_events`` and
    ``slack_calls``, as sessions/agent_log.py and kourier/slack/call_log.py record them)."""
    marks: list[Mark] = []
    for turn in turns:
        started, ended = turn.started_at, turn.ended_at
        marks.append(Mark("Turns", turn.created_at, started, f"turn {turn.pk} queued", turn.text))
        if started is not None:
            outcome = turn.outcome or turn.state
            marks.append(
                Mark("Turns", started, ended, f"turn {turn.pk} ran: {outcome}", trouble=bool(turn.outcome)
                     and turn.outcome not in ("completed", "asked"))
            )  # fmt: skip
        for event in turn.agent_events or []:
            marks.append(_agent_mark(event))
        for call in turn.slack_calls or []:
            at = datetime.fromtimestamp(call["at"], tz=UTC)
            retries = f", {call['retries']} retries" if call.get("retries") else ""
            marks.append(
                Mark(
                    "Slack writes",
                    at,
                    at + timedelta(milliseconds=call["ms"]),
                    f"{call['method']}: {call['outcome']}{retries}",
                    trouble=call["outcome"] != "ok" or bool(call.get("retries")),
                )
            )
    for interaction in interactions:
        end = interaction.answered_at or interaction.closed_at
        marks.append(
            Mark(
                "Questions",
                interaction.created_at,
                end,
                f"{interaction.kind} {interaction.pk}: {interaction.state}",
            )
        )
    for intent in post_intents:
        marks.append(Mark("Notices", intent.created_at, None, f"{intent.kind}: {intent.state}", intent.text))
    for each in feedback:
        thumb = "thumbs up" if each.is_positive else "thumbs down"
        marks.append(Mark("Presses", each.updated_at, None, f"{thumb} by {each.user_id}"))
    for row in audit_rows:
        marks.append(Mark("Audit", row.at, None, row.action))
    return sorted(marks, key=lambda mark: mark.start)


def _agent_mark(event: dict[str, Any]) -> Mark:
    at = datetime.fromtimestamp(event["at"], tz=UTC)
    kind = event["kind"]
    if kind == "text":
        return Mark("Agent", at, datetime.fromtimestamp(event["end"], tz=UTC), "reply text")
    if kind in ("tool call", "tool result"):
        failed = kind == "tool result" and not event.get("ok", True)
        return Mark(
            "Agent",
            at,
            None,
            f"{kind}: {event.get('name') or '?'}" + (" (failed)" if failed else ""),
            trouble=failed,
        )
    if kind == "task ended":
        state = event.get("state", "")
        return Mark(
            "Agent", at, None, f"task ended: {state}", trouble=state in ("failed", "rejected", "canceled")
        )
    return Mark("Agent", at, None, kind)


def render_svg(marks: Sequence[Mark], *, with_text: bool) -> str:
    """The timeline as an inline SVG: one lane per kind, time left to right, spans as bars and moments
    as ticks, and under them the quiet stretches with their length; each mark's tooltip gives its time
    from the start, its duration and the wait before it."""
    if not marks:
        return '<p class="timeline-empty">Nothing happened in this thread yet.</p>'
    begin = marks[0].start
    finish = max((mark.end or mark.start) for mark in marks)
    total = max((finish - begin).total_seconds(), 0.001)
    plot = WIDTH - LABELS - 10
    rows = (*LANES, WAITS)
    height = TOP + LANE_HEIGHT * len(rows) + BOTTOM

    def x(at: datetime) -> float:
        return LABELS + plot * (at - begin).total_seconds() / total

    parts = [
        f'<svg class="session-timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="Timeline of the thread">'
    ]
    for index, lane in enumerate(rows):
        y = TOP + index * LANE_HEIGHT
        parts.append(f'<text x="4" y="{y + 18}" font-size="12">{lane}</text>')
        parts.append(
            f'<line x1="{LABELS}" y1="{y + LANE_HEIGHT}" x2="{WIDTH - 10}" y2="{y + LANE_HEIGHT}" stroke="#ddd"/>'
        )
    axis_y = TOP + LANE_HEIGHT * len(rows)
    for tick in range(6):
        seconds = total * tick / 5
        tick_x = LABELS + plot * tick / 5
        parts.append(f'<line x1="{tick_x:.1f}" y1="{TOP}" x2="{tick_x:.1f}" y2="{axis_y}" stroke="#eee"/>')
        parts.append(
            f'<text x="{tick_x:.1f}" y="{axis_y + 16}" font-size="11" text-anchor="middle">{_duration(seconds)}</text>'
        )
    previous: datetime | None = None
    for mark in marks:
        y = TOP + LANES.index(mark.lane) * LANE_HEIGHT
        colour = "#c62828" if mark.trouble else "#1565c0"
        wait = (
            f" ({_duration((mark.start - previous).total_seconds())} after the previous)" if previous else ""
        )
        previous = mark.start
        title = f"{mark.label} at +{_duration((mark.start - begin).total_seconds())}{wait}"
        if mark.end is not None:
            title += f", took {_duration(mark.seconds)}"
        if with_text and mark.text:
            shown = mark.text if len(mark.text) <= TEXT_SHOWN else mark.text[: TEXT_SHOWN - 1] + "…"
            title += f": “{shown}”"
        parts.append(f'<g class="mark" data-lane="{escape(mark.lane)}"><title>{escape(title)}</title>')
        if mark.end is not None:
            width = max(x(mark.end) - x(mark.start), 2.0)
            parts.append(
                f'<rect x="{x(mark.start):.1f}" y="{y + 7}" width="{width:.1f}" height="14" fill="{colour}" opacity="0.75"/>'
            )
            if width > 60:
                parts.append(
                    f'<text x="{x(mark.start) + 3:.1f}" y="{y + 18}" font-size="10" fill="#fff">{_duration(mark.seconds)}</text>'
                )
        else:
            parts.append(f'<circle cx="{x(mark.start):.1f}" cy="{y + 14}" r="4" fill="{colour}"/>')
        parts.append("</g>")
    waits_y = TOP + rows.index(WAITS) * LANE_HEIGHT
    for quiet_from, quiet_to in quiet_stretches(marks, min_seconds=total * WAIT_SHARE):
        seconds = (quiet_to - quiet_from).total_seconds()
        left, width = x(quiet_from), max(x(quiet_to) - x(quiet_from), 2.0)
        parts.append(
            f'<g class="wait"><title>{escape(f"nothing for {_duration(seconds)}")}</title>'
            f'<rect x="{left:.1f}" y="{waits_y + 7}" width="{width:.1f}" height="14" fill="#9e9e9e" opacity="0.5"/>'
            f'<text x="{left + width / 2:.1f}" y="{waits_y + 18}" font-size="10" text-anchor="middle">'
            f"{_duration(seconds)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def quiet_stretches(marks: Sequence[Mark], *, min_seconds: float) -> list[tuple[datetime, datetime]]:
    """The stretches of at least ``min_seconds`` in which no mark ran or happened (``marks`` in time
    order): between the end of everything before and the next mark's start."""
    stretches = []
    busy_until: datetime | None = None
    for mark in marks:
        if busy_until is not None and (mark.start - busy_until).total_seconds() >= min_seconds > 0:
            stretches.append((busy_until, mark.start))
        ends = mark.end or mark.start
        busy_until = ends if busy_until is None else max(busy_until, ends)
    return stretches


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"
