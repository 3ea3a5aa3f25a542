"""Slack's budgets: one per (workspace, method), or (workspace, method, channel) for posts, shared by
every process through Redis, checked before each call.

Slack limits calls per app, workspace and method in windows of a minute (docs/slack-platform.md §4.7;
its tiers are ``DEFAULT_LIMITS``, changed per method with ``SLACK_CALL_LIMITS``), and posts to about
one a second per channel. A call reserves the next free slot of its budget and waits until then: the
slots are handed out in order (first asked, first served) and any window holds at most the budget's
calls, so calls wait their turn instead of drawing 429s. A 429 that still comes (another app on the
token, a tier Slack changed) blocks the budget until its Retry-After is over: no slot is handed out
before then (``block``).

The arithmetic is pure (``next_slot``) and the same in the one Redis step each call makes
(``RESERVE_SCRIPT``, one round trip). A caller that cannot wait long (a reply choosing its mode)
asks with a short ``max_wait``: a slot later than that is not reserved, and the caller hears when the
budget could serve it. Without Redis a process keeps its own ledger (``LocalLedger``) with the same
arithmetic, so it still paces its own calls (logged; Slack's 429s hold the rest). Slots are times of
the callers' clocks (epoch seconds): the hosts of one deployment keep theirs in step (NTP).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.checks import Error, register

from kourier import shared_cache

logger = logging.getLogger(__name__)

BUDGET_KEY_PREFIX = "slack-budget"
TIER_2, TIER_3, TIER_4 = 20, 50, 100


@dataclass(frozen=True)
class Limit:
    """At most ``calls`` in any ``window`` seconds, per workspace (or per channel of it)."""

    calls: int
    window: float = 60.0
    per_channel: bool = False

    @property
    def margin(self) -> float:
        """Kept between a slot and the window it leaves: a call reaches Slack a little after its slot
        (a busy loop, the network), so a window's first call may be counted late. A second a minute."""
        return self.window / 60


# Slack's published tiers (api.slack.com/apis/rate-limits and each method's page). Methods not
# here (auth.test, assistant.threads.setStatus: special tiers) have no budget of their own; a 429 on
# them still blocks them.
DEFAULT_LIMITS: Mapping[str, Limit] = {
    "chat.startStream": Limit(TIER_2),
    "chat.stopStream": Limit(TIER_2),
    "reactions.remove": Limit(TIER_2),
    "usergroups.users.list": Limit(TIER_2),
    "chat.update": Limit(TIER_3),
    "agents.sessions.setStatus": Limit(TIER_3),
    "chat.delete": Limit(TIER_3),
    "reactions.add": Limit(TIER_3),
    "conversations.replies": Limit(TIER_3),
    "conversations.history": Limit(TIER_3),
    "chat.appendStream": Limit(TIER_4),
    "chat.postEphemeral": Limit(TIER_4),
    "files.getUploadURLExternal": Limit(TIER_4),
    "files.completeUploadExternal": Limit(TIER_4),
    "conversations.members": Limit(TIER_4),
    "users.info": Limit(TIER_4),
    "views.open": Limit(TIER_4),
    # "one message per second per channel; short bursts >1 allowed, with no guarantee": one a second,
    # no burst (a sliding window with bursts puts two bursts back to back at its edge).
    "chat.postMessage": Limit(1, 1.0, per_channel=True),
}


def parse_limits(text: str) -> dict[str, Limit]:
    """``SLACK_CALL_LIMITS``: ``method=calls/seconds`` items, comma-separated, ``/channel`` after the
    seconds for a budget per channel (``chat.update=40/60,chat.postMessage=1/1/channel``). ValueError
    with what is wrong for anything else."""
    limits: dict[str, Limit] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        method, _, rate = item.partition("=")
        fields = rate.strip().split("/")
        if not method.strip() or len(fields) not in (2, 3) or fields[2:] not in ([], ["channel"]):
            raise ValueError(f"{item!r} is not method=calls/seconds or method=calls/seconds/channel")
        try:
            calls, window = int(fields[0]), float(fields[1])
        except ValueError:
            raise ValueError(f"{item!r}: calls must be a whole number and seconds a number") from None
        if calls < 1 or not window > 0:
            raise ValueError(f"{item!r}: at least one call in more than 0 seconds")
        limits[method.strip()] = Limit(calls, window, per_channel=len(fields) == 3)
    return limits


# Not a Slack method: the replies a workspace posts and then updates (reply_plans.py), a third of
# chat.update's budget, since such a reply makes about three updates (its cards, its text, its end).
UPDATED_REPLIES = "kourier.updatedReplies"
UPDATES_PER_REPLY = 3


def configured_limits() -> Mapping[str, Limit]:
    """Slack's tiers with the settings' changes (checked at start-up), and the updated replies' budget."""
    return _limits_of(getattr(settings, "SLACK_CALL_LIMITS", ""))


@functools.lru_cache(maxsize=8)
def _limits_of(text: str) -> Mapping[str, Limit]:
    limits = {**DEFAULT_LIMITS, **parse_limits(text)} if text else dict(DEFAULT_LIMITS)
    update = limits["chat.update"]
    limits.setdefault(UPDATED_REPLIES, Limit(max(1, update.calls // UPDATES_PER_REPLY), update.window))
    return limits


@register()
def check_slack_call_limits(app_configs, **kwargs):
    errors = []
    try:
        parse_limits(settings.SLACK_CALL_LIMITS)
    except ValueError as exc:
        errors.append(
            Error(
                f"SLACK_CALL_LIMITS is not valid: {exc}.",
                hint="Give method=calls/seconds items, comma-separated, with /channel for a budget per "
                "channel (chat.update=40/60,chat.postMessage=1/1/channel); unset it for Slack's tiers.",
                id="kourier.E022",
            )
        )
    for name in (
        "SLACK_STREAM_WAIT_SECONDS",
        "SLACK_UPDATE_WAIT_SECONDS",
        "SLACK_REACTION_WAIT_SECONDS",
    ):
        if getattr(settings, name) < 0:
            errors.append(
                Error(
                    f"{name} must not be negative, got {getattr(settings, name)}.",
                    hint="Unset it to use the default (see .env.example).",
                    id="kourier.E022",
                )
            )
    return errors


def budgets_enabled() -> bool:
    """False (``SLACK_CALL_BUDGETS=false``): calls wait only for a 429's Retry-After, and replies always
    stream: the naive bridge the budgets are measured against (docs/performance.md)."""
    return bool(getattr(settings, "SLACK_CALL_BUDGETS", True))


# --- the arithmetic ------------------------------------------------------------------------------


def next_slot(taken: Sequence[float], now: float, limit: Limit | None, blocked_until: float = 0.0) -> float:
    """When the next call may go: not before ``now``, a block's end, or the last slot taken (in
    order), and not before the slot ``calls`` back has left its window. ``taken``: the slots taken
    whose window is not over, in order."""
    slot = max(now, blocked_until, taken[-1] if taken else now)
    if limit is not None and len(taken) >= limit.calls:
        slot = max(slot, taken[-limit.calls] + limit.window + limit.margin)
    return slot


@dataclass(frozen=True)
class Reservation:
    """``at``: when the call may go (reserved), or when the budget could serve it (not reserved: it
    was later than the caller could wait)."""

    reserved: bool
    at: float

    def wait(self, now: float) -> float:
        wait = self.at - now
        return wait if wait > 0.001 else 0.0  # under a millisecond: Redis's rounding of the slot


class LocalLedger:
    """One process's budgets in memory, with ``next_slot``'s arithmetic: the tests' reference, and
    what a process paces its own calls by while Redis is out of reach."""

    def __init__(self) -> None:
        self._taken: dict[str, deque[float]] = {}
        self._blocked: dict[str, float] = {}
        self._lock = threading.Lock()

    def reserve(
        self, key: str, now: float, limit: Limit | None, *, max_wait: float, take: bool = True
    ) -> Reservation:
        with self._lock:
            taken = self._taken.setdefault(key, deque())
            keep = (limit.window + limit.margin) if limit else 0.0
            while taken and taken[0] <= now - keep:
                taken.popleft()
            slot = next_slot(
                list(taken)[-limit.calls :] if limit else list(taken)[-1:],
                now,
                limit,
                self._blocked.get(key, 0.0),
            )
            if slot - now > max_wait or not take:
                return Reservation(False, slot)
            if limit is not None:
                taken.append(slot)
            return Reservation(True, slot)

    def block(self, key: str, until: float) -> None:
        with self._lock:
            self._blocked[key] = max(until, self._blocked.get(key, 0.0))

    def clear(self) -> None:
        with self._lock:
            self._taken.clear()
            self._blocked.clear()


# The same arithmetic as next_slot, in one step Redis runs atomically. KEYS: the slots taken (a
# sorted set, the slot as score) and the block's end. ARGV: now, calls (0: no budget), window,
# margin, max_wait, take (1 or 0), a unique member. Returns {reserved, slot as a string}.
RESERVE_SCRIPT = """
local now = tonumber(ARGV[1])
local calls = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local max_wait = tonumber(ARGV[5])
local slot = now
local blocked = tonumber(redis.call('GET', KEYS[2]) or '0')
if blocked > slot then slot = blocked end
if calls > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window - margin)
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if last[2] and tonumber(last[2]) > slot then slot = tonumber(last[2]) end
  local back = redis.call('ZRANGE', KEYS[1], -calls, -calls, 'WITHSCORES')
  if redis.call('ZCARD', KEYS[1]) >= calls and back[2] then
    local free = tonumber(back[2]) + window + margin
    if free > slot then slot = free end
  end
end
if slot - now > max_wait or ARGV[6] ~= '1' then
  return {0, string.format('%.6f', slot)}
end
if calls == 0 then
  return {1, string.format('%.6f', slot)}
end
redis.call('ZADD', KEYS[1], slot, ARGV[7])
redis.call('PEXPIRE', KEYS[1], math.ceil((slot - now + window + margin) * 1000) + 1000)
return {1, string.format('%.6f', slot)}
"""


# This process's ledger, for when Redis cannot be reached, and the blocks it was told of.
_local = LocalLedger()


def forget_local_budgets() -> None:
    """Forgets this process's own ledger (for tests; a restart does the same)."""
    _local.clear()


class Budget:
    """One workspace's budgets, shared by every process through Redis (module docstring)."""

    def __init__(self, workspace: str, limits: Mapping[str, Limit] | None = None) -> None:
        self.workspace = workspace
        self._limits = limits

    def limit(self, method: str) -> Limit | None:
        return (self._limits if self._limits is not None else configured_limits()).get(method)

    def key(self, method: str, channel: str | None = None) -> str:
        limit = self.limit(method)
        scope = f":{channel}" if limit is not None and limit.per_channel and channel else ""
        return f"{BUDGET_KEY_PREFIX}:{self.workspace}:{method}{scope}"

    def _unavailable(self, exc: Exception) -> None:
        logger.warning(
            "slack.budget_unavailable", extra={"workspace": self.workspace, "error": type(exc).__name__}
        )

    def reserve(
        self, method: str, now: float, *, channel: str | None = None, max_wait: float, take: bool = True
    ) -> Reservation:
        """The slot a call of ``method`` may go at, reserved when it is within ``max_wait`` (and
        ``take``); one round trip to Redis. Without budgets (``budgets_enabled``), only 429 blocks."""
        limit = self.limit(method) if budgets_enabled() else None
        key = self.key(method, channel)
        try:
            reserved, slot = shared_cache.run_script(
                RESERVE_SCRIPT,
                [key, key + ":blocked"],
                [
                    repr(now),
                    limit.calls if limit else 0,
                    repr(limit.window if limit else 0.0),
                    repr(limit.margin if limit else 0.0),
                    repr(max_wait),
                    1 if take else 0,
                    uuid.uuid4().hex,
                ],
            )
        except Exception as exc:
            self._unavailable(exc)
            return _local.reserve(key, now, limit, max_wait=max_wait, take=take)
        return Reservation(bool(int(reserved)), float(slot))

    def block(self, method: str, until: float, retry_after: float, *, channel: str | None = None) -> None:
        """A 429: no slot of the budget is handed out before ``until`` (Retry-After from now)."""
        key = self.key(method, channel)
        _local.block(key, until)
        try:
            shared_cache.run_script(
                BLOCK_SCRIPT, [key + ":blocked"], [repr(until), math.ceil(retry_after) + 1]
            )
        except Exception as exc:
            self._unavailable(exc)

    async def areserve(
        self, method: str, now: float, *, channel: str | None = None, max_wait: float, take: bool = True
    ) -> Reservation:
        # No span of its own (shared_cache.arun): the wait it gives is the Slack call span's attribute.
        return await shared_cache.arun(
            lambda: self.reserve(method, now, channel=channel, max_wait=max_wait, take=take)
        )

    async def ablock(
        self, method: str, until: float, retry_after: float, *, channel: str | None = None
    ) -> None:
        await shared_cache.arun(lambda: self.block(method, until, retry_after, channel=channel))


# The block's end only moves later. KEYS: the block. ARGV: until, seconds to keep it.
BLOCK_SCRIPT = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > current then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', tonumber(ARGV[2]))
end
return 1
"""
