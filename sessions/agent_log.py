"""A compact record of what the agent did in a turn, for the session's timeline (sessions/timeline.py):
its task's start, each run of reply text (from its first chunk to its last), each tool call and result
(the tool's name, never its arguments or output), a question or approval, and the task's end. Bounded;
kept only while the turn's runner records (sessions/runner.py), stored as the turn ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from kourier.a2a.events import (
    ApprovalRequest,
    Question,
    TaskEnded,
    TaskStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    UnusablePause,
)

MAX_EVENTS = 60

_recording: ContextVar[list[dict[str, Any]] | None] = ContextVar("agent_events", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    token = _recording.set(events)
    try:
        yield events
    finally:
        _recording.reset(token)


def recorded() -> list[dict[str, Any]]:
    return list(_recording.get() or [])


def note(event: object, *, now: float | None = None) -> None:
    """Notes one of the agent's events; consecutive text chunks make one mark that grows."""
    events = _recording.get()
    if events is None:
        return
    at = round(now if now is not None else time.time(), 3)
    if isinstance(event, TextDelta):
        if events and events[-1]["kind"] == "text":
            events[-1]["end"] = at
            return
        entry: dict[str, Any] = {"kind": "text", "at": at, "end": at}
    elif isinstance(event, ToolCall):
        entry = {"kind": "tool call", "at": at, "name": event.name}
    elif isinstance(event, ToolResult):
        entry = {"kind": "tool result", "at": at, "name": event.name or "", "ok": event.ok}
    elif isinstance(event, Question):
        entry = {"kind": "question", "at": at}
    elif isinstance(event, ApprovalRequest):
        entry = {"kind": "approval", "at": at}
    elif isinstance(event, UnusablePause):
        entry = {"kind": "pause", "at": at}
    elif isinstance(event, TaskStarted):
        entry = {"kind": "task started", "at": at}
    elif isinstance(event, TaskEnded):
        entry = {"kind": "task ended", "at": at, "state": str(event.state)}
    else:
        return
    if len(events) < MAX_EVENTS:
        events.append(entry)
