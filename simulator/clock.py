"""Time as the fake sees it: the real clock by default, or a hand-wound one.

Everything that depends on time in the fake (message ts values, stream expiry, rate-limit windows, the
assistant status timeout) reads one injectable clock, so a test can jump past a five-minute stream
lifetime or a one-minute rate window without waiting for it.
Request signatures are the exception: the app under test checks them against its own wall clock.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when the test moves it."""

    def __init__(self, start: float | None = None) -> None:
        self._now = time.time() if start is None else start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not run backwards")
        with self._lock:
            self._now += seconds
