"""Slack's budgets, shared by every worker through Redis (the Django cache): the (workspace, method)
blocks a 429 sets, and the pacing of the methods a reply calls many times.

Slack limits calls per app, workspace and method (docs/slack-platform.md §4.7). When Slack answers 429
for a (workspace, method), "blocked until now + Retry-After" goes into Redis, so every worker's calls
of that method for that workspace wait the block out instead of drawing more 429s. The methods a
reply calls many times (``PACED_CALLS_PER_MINUTE``: ``chat.appendStream``, ``chat.update``) are also
paced before Slack refuses them: every worker counts a workspace's calls per 10 s window in Redis, and
a call past the window's share waits for the next window. Each process also keeps the blocks it was
told of, so that it still honours them when Redis cannot be reached (then the calls go on, logged,
and other workers learn of a block from their own 429).
How long a call may wait for them is the client's to decide (clients.py).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from kourier import shared_cache

logger = logging.getLogger(__name__)

BUDGET_KEY_PREFIX = "slack-blocked"
PACE_KEY_PREFIX = "slack-paced"
# The methods a reply calls many times, paced per workspace below their tier (docs/slack-platform.md §4.7:
# chat.appendStream Tier 4, chat.update Tier 3), so many live replies in one workspace share the budget
# instead of drawing 429s: a paced call waits for the next window, and meanwhile its reply coalesces.
PACED_CALLS_PER_MINUTE = {"chat.appendStream": 100, "chat.update": 50}
PACE_WINDOW_SECONDS = 10


# This process's own record of the blocks it was told of, for when Redis cannot be reached.
_local_blocks: dict[str, float] = {}


def forget_local_blocks() -> None:
    """Forgets this process's own record of blocks (for tests; a restart does the same)."""
    _local_blocks.clear()


def _later(first: float | None, second: float | None) -> float | None:
    return max(first or 0.0, second or 0.0) or None


class Budget:
    """The (workspace, method) blocks every worker sees, kept in Redis through the Django cache."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace

    def key(self, method: str) -> str:
        return f"{BUDGET_KEY_PREFIX}:{self.workspace}:{method}"

    @staticmethod
    def _expiry(retry_after: float) -> int:
        return math.ceil(retry_after) + 1

    def _unavailable(self, exc: Exception) -> None:
        # Without Redis the calls go on as if nothing were blocked: Slack's own 429s still hold them.
        logger.warning(
            "slack.budget_unavailable", extra={"workspace": self.workspace, "error": type(exc).__name__}
        )

    async def ablock(self, method: str, until: float, retry_after: float) -> None:
        _local_blocks[self.key(method)] = max(until, _local_blocks.get(self.key(method), 0.0))
        try:
            current = await shared_cache.aget(self.key(method))
            if current is None or current < until:
                await shared_cache.aset(self.key(method), until, self._expiry(retry_after))
        except Exception as exc:
            self._unavailable(exc)

    def blocked_until(self, method: str) -> float | None:
        local = _local_blocks.get(self.key(method))
        try:
            return _later(shared_cache.backend().get(self.key(method)), local)
        except Exception as exc:
            self._unavailable(exc)
            return local

    def block(self, method: str, until: float, retry_after: float) -> None:
        _local_blocks[self.key(method)] = max(until, _local_blocks.get(self.key(method), 0.0))
        try:
            current = shared_cache.backend().get(self.key(method))
            if current is None or current < until:
                shared_cache.backend().set(self.key(method), until, self._expiry(retry_after))
        except Exception as exc:
            self._unavailable(exc)


def paced_calls_per_window(method: str) -> int | None:
    """Calls of ``method`` one workspace may start in a pacing window. Any 60 s span meets at most
    seven windows, and a call started late in one window may reach Slack in the next (a busy loop
    lags): eight windows' worth stays within the tier's minute."""
    per_minute = PACED_CALLS_PER_MINUTE.get(method)
    if per_minute is None:
        return None
    return max(1, per_minute * PACE_WINDOW_SECONDS // (60 + 2 * PACE_WINDOW_SECONDS))


@dataclass(frozen=True)
class Window:
    """A paced method's current pacing window for one workspace: its counter, and the calls it allows."""

    key: str
    allowed: int
    ends_at: float


class Pace:
    """Counts a workspace's calls of a paced method per window in Redis, shared by every worker."""

    ttl = PACE_WINDOW_SECONDS * 2

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace

    def window(self, method: str, now: float) -> Window | None:
        """The window a call of ``method`` at ``now`` takes a place in; None: the method is not paced."""
        allowed = paced_calls_per_window(method)
        if allowed is None:
            return None
        window = int(now // PACE_WINDOW_SECONDS)
        return Window(
            f"{PACE_KEY_PREFIX}:{self.workspace}:{method}:{window}",
            allowed,
            (window + 1) * PACE_WINDOW_SECONDS,
        )

    def give_back(self, window: Window) -> None:
        """A call counted in the window does not go (it is blocked): its place is free again."""
        try:
            shared_cache.backend().decr(window.key)
        except Exception as exc:  # gone with its window, or Redis out of reach: a place is lost, no more
            logger.info("slack.pace_not_given_back", extra={"error": type(exc).__name__})


@dataclass(frozen=True)
class Clearance:
    """What stands before a call: a block until then, or the seconds to the next pacing window."""

    blocked_until: float | None = None
    pace_wait: float = 0.0


def clearance_for(budget: Budget, pace: Pace, method: str, now: float) -> Clearance:
    """A blocked call takes no place in its pacing window; a free one takes it. One executor hop for
    both lookups, and one round trip to Redis: a call checks them every time, and each hop and round
    trip costs CPU (docs/performance.md, b)."""
    window = pace.window(method, now)
    if window is None:
        until = budget.blocked_until(method)
        return Clearance(blocked_until=until) if until is not None and until > now else Clearance()
    try:
        shared_until, taken = shared_cache.get_and_count(budget.key(method), window.key, pace.ttl)
    except Exception as exc:
        # Without Redis the calls go on unpaced, as blocked as this process knows: Slack's 429s and
        # the blocks still hold them.
        budget._unavailable(exc)
        local = _local_blocks.get(budget.key(method))
        return Clearance(blocked_until=local) if local is not None and local > now else Clearance()
    until = _later(shared_until, _local_blocks.get(budget.key(method)))
    if until is not None and until > now:
        pace.give_back(window)
        return Clearance(blocked_until=until)
    return Clearance(pace_wait=0.0 if taken <= window.allowed else window.ends_at - now)
