"""A compact record of the Slack calls a piece of work made: each call's method, outcome, start,
duration and retries (a 429 waited out, a server error tried again), bounded, never its arguments.

A turn records its calls (sessions/runner.py) so that the session's timeline in the admin shows where
its time went (sessions/timeline.py). Outside ``recording()`` nothing is kept.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

MAX_CALLS = 60  # per recording: a turn's reactions, stream updates, notices; the rest only counted


@dataclass
class Call:
    method: str
    started: float  # seconds since the epoch
    outcome: str = "ok"
    retries: int = 0


@dataclass
class Recording:
    calls: list[dict[str, Any]]
    dropped: int = 0


_recording: ContextVar[Recording | None] = ContextVar("slack_call_recording", default=None)
_current: ContextVar[Call | None] = ContextVar("slack_call", default=None)


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    record = Recording([])
    token = _recording.set(record)
    try:
        yield record
    finally:
        _recording.reset(token)


@contextlib.contextmanager
def call(method: str) -> Iterator[Call | None]:
    """One Slack call, noted when it ends if a recording is on; None (and nothing kept) otherwise."""
    record = _recording.get()
    if record is None:
        yield None
        return
    began, clock = time.time(), time.monotonic()
    current = Call(method, began)
    token = _current.set(current)
    try:
        yield current
    finally:
        _current.reset(token)
        if len(record.calls) < MAX_CALLS:
            record.calls.append(
                {
                    "method": method,
                    "outcome": current.outcome,
                    "at": round(began, 3),
                    "ms": round((time.monotonic() - clock) * 1000),
                    "retries": current.retries,
                }
            )
        else:
            record.dropped += 1


def recorded() -> list[dict[str, Any]]:
    """The calls of the recording on now (empty without one)."""
    record = _recording.get()
    return list(record.calls) if record is not None else []


def retried() -> None:
    """The current call is being tried again (after a 429's wait, or a server error)."""
    current = _current.get()
    if current is not None:
        current.retries += 1
