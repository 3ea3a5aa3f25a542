"""Slack's rate limits: a budget of calls per sliding window, per workspace and method.

Tiers from docs/slack-platform.md §4.7 ("per API method per workspace/team per app"); chat.postMessage is
"about 1/s per channel", modelled as a burst of a few posts per few seconds per channel.
Methods without a budget here (auth.test, assistant.threads.setStatus: "Special") are not limited.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass

from .clock import Clock

TIER_2 = 20
TIER_3 = 50
TIER_4 = 100


@dataclass(frozen=True)
class Budget:
    calls: int
    window: float = 60.0
    per_channel: bool = False


POST_MESSAGE_BUDGET = Budget(calls=5, window=5.0, per_channel=True)  # ~1/s per channel, bursts of 5

DEFAULT_BUDGETS: dict[str, Budget] = {
    "chat.startStream": Budget(TIER_2),
    "chat.stopStream": Budget(TIER_2),
    "reactions.remove": Budget(TIER_2),
    "usergroups.users.list": Budget(TIER_2),
    "chat.update": Budget(TIER_3),
    "agents.sessions.setStatus": Budget(TIER_3),
    "chat.delete": Budget(TIER_3),
    "reactions.add": Budget(TIER_3),
    "conversations.replies": Budget(TIER_3),
    "conversations.history": Budget(TIER_3),
    "chat.appendStream": Budget(TIER_4),
    "chat.postEphemeral": Budget(TIER_4),
    "files.getUploadURLExternal": Budget(TIER_4),
    "files.completeUploadExternal": Budget(TIER_4),
    "conversations.members": Budget(TIER_4),
    "users.info": Budget(TIER_4),
    "views.open": Budget(TIER_4),
    "views.publish": Budget(TIER_4, per_channel=True),  # per person: the user_id it publishes for
    "chat.postMessage": POST_MESSAGE_BUDGET,
}


class RateLimiter:
    """Admits or refuses calls. ``multiplier`` scales every budget; ``enabled=False`` admits everything."""

    def __init__(self, clock: Clock, *, enabled: bool = True, multiplier: float = 1.0) -> None:
        self.enabled = enabled
        self.multiplier = multiplier
        self._clock = clock
        self._budgets = dict(DEFAULT_BUDGETS)
        self._calls: dict[tuple[str, str, str | None], deque[float]] = {}
        self._lock = threading.Lock()

    def budget(self, method: str) -> Budget | None:
        return self._budgets.get(method)

    def set_budget(self, method: str, calls: int, window: float = 60.0, *, per_channel: bool = False) -> None:
        self._budgets[method] = Budget(calls=calls, window=window, per_channel=per_channel)

    def reset(self) -> None:
        """Forget every call made so far (budgets stay as configured)."""
        with self._lock:
            self._calls.clear()

    def admit(self, team_id: str, method: str, channel: str | None = None) -> int | None:
        """Count the call and return None, or return the Retry-After seconds when it is over budget."""
        budget = self._budgets.get(method)
        if not self.enabled or budget is None:
            return None
        allowed = max(1, math.floor(budget.calls * self.multiplier))
        key = (team_id, method, channel if budget.per_channel else None)
        now = self._clock.now()
        with self._lock:
            recent = self._calls.setdefault(key, deque())
            while recent and recent[0] <= now - budget.window:
                recent.popleft()
            if len(recent) >= allowed:
                # The earliest moment a call leaves the window, rounded up as Slack's integer header is.
                return max(1, math.ceil(recent[0] + budget.window - now))
            recent.append(now)
            return None
