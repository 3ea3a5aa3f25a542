"""How a reply is shown under Slack's budgets (its plan), chosen when it first shows something and
kept for its life: replies degrade instead of queueing (docs/manifests.md, "How a reply is shown
under Slack's budgets").

=============  ===========================================================================  =======================
plan           when                                                                         calls
=============  ===========================================================================  =======================
``STREAM``     a chat thread's live reply whose ``chat.startStream`` slot is free within     startStream, appends,
               ``SLACK_STREAM_WAIT_SECONDS`` (the start is the reservation: no race)         stopStream
``UPDATES``    an alert thread's live reply, or a chat thread's whose stream start was not   postMessage, then
               free, when the workspace's budget of updated replies (a third of              chat.update
               chat.update's) has a place within ``SLACK_UPDATE_WAIT_SECONDS``
``FINAL``      otherwise, and a reply whose first write to show is its last                  one postMessage
=============  ===========================================================================  =======================

What a reply shows follows its plan: a stream shows cards as task chunks and its text as it comes;
a posted and updated reply shows its line and cards as blocks and its text, rewritten whole; a final
post shows only the last view (its cards ended, its text). Writes before the last (appends, updates,
the first post) wait at most a moment for their slot: without one they are kept and merged into the
next (writer.py), so the more replies share a budget, the longer each coalesces. An updated reply
makes at most two updates before its last in any minute (``updates_before_the_last``): its admission
counted three, so its last update finds a slot at once. The last write waits
its turn for as long as ``FINAL_WRITE_WAIT_SECONDS``. A reply never changes plan once it has shown
something, so nothing it showed is shown twice.

The plan is recorded in Redis under the reply's key, so a runner that takes the reply over after a
restart keeps a posted reply's plan (updated, or final); one that showed nothing may choose again.
With ``SLACK_CALL_BUDGETS=false`` every chat reply streams and every alert reply is updated (the
naive bridge).
"""

from __future__ import annotations

import enum
import logging

from django.conf import settings

from kourier import shared_cache

from .budgets import UPDATED_REPLIES, UPDATES_PER_REPLY, budgets_enabled, configured_limits

logger = logging.getLogger(__name__)

PLAN_KEY_PREFIX = "slack-reply-plan"
PLAN_KEPT_SECONDS = 24 * 3600
# The last write of a reply waits its turn this long at most (a final post in a channel a burst of
# replies shares: one a second): past it the write fails as any refused write does.
FINAL_WRITE_WAIT_SECONDS = 600.0
# A write before the last waits at most this for its slot; else it is merged into the next.
INTERMEDIATE_WRITE_WAIT_SECONDS = 1.0


class ReplyPlan(enum.StrEnum):
    STREAM = "stream"
    UPDATES = "updates"
    FINAL = "final"


def stream_wait() -> float:
    return float(settings.SLACK_STREAM_WAIT_SECONDS)


def plans_enabled(client: object) -> bool:
    """Whether replies choose their plan by the budgets: the product's clients, with budgets on."""
    return budgets_enabled() and hasattr(client, "admit")


async def message_plan(client: object) -> ReplyPlan:
    """A reply that will not stream: posted and updated when the workspace has room for one more
    such reply soon, else posted once, final."""
    admit = getattr(client, "admit", None)
    if admit is None or not budgets_enabled():
        return ReplyPlan.UPDATES
    if await admit(UPDATED_REPLIES, within=float(settings.SLACK_UPDATE_WAIT_SECONDS)):
        return ReplyPlan.UPDATES
    return ReplyPlan.FINAL


def updates_before_the_last() -> tuple[int, float]:
    """An updated reply makes at most this many updates before its last in any such span (seconds):
    its admission counted ``UPDATES_PER_REPLY`` of the workspace's chat.update budget, and its last
    update must find its slot as soon as the answer is whole."""
    update = configured_limits()["chat.update"]
    return UPDATES_PER_REPLY - 1, update.window + update.margin


def _key(reply_key: str) -> str:
    return f"{PLAN_KEY_PREFIX}:{reply_key}"


async def recorded_plan(reply_key: str) -> ReplyPlan | None:
    try:
        value = await shared_cache.aget(_key(reply_key))
    except Exception as exc:  # without Redis the reply chooses again: it has shown nothing yet
        logger.warning("slack.reply_plan_unavailable", extra={"error": type(exc).__name__})
        return None
    return ReplyPlan(value) if value in ReplyPlan._value2member_map_ else None


async def record_plan(reply_key: str, plan: ReplyPlan) -> None:
    try:
        await shared_cache.aset(_key(reply_key), plan.value, PLAN_KEPT_SECONDS)
    except Exception as exc:
        logger.warning("slack.reply_plan_unavailable", extra={"error": type(exc).__name__})
