"""Stopping a running turn (issue 33, point 1): a person's press of Stop on the Working… card.

The press is settled by the database alone: one conditional UPDATE marks a running turn of that
channel as stopped by the presser, so of two presses one wins, and a press after the turn ended (or a
forged one, naming a turn of another channel or Connection) changes nothing and writes no audit row.
The runner of the turn reads the mark while it follows the agent (sessions/conversation.py), cancels
the agent's task (CancelTask) and ends the turn as Stopped, saying who stopped it (``stopped_line``).
"""

from __future__ import annotations

import enum
import logging
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit.services import record
from bindings.manifest import StopBy
from kourier import shared_cache

from .identity import is_person
from .models import Turn

logger = logging.getLogger(__name__)

# The Stop button's action (kourier/slack/blocks.py renders it; the door routes it here).
STOP_ACTION = "kourier_stop"
# The word to the runner that a turn was stopped: a key of the shared cache, set once the stop is
# committed, so a running turn looks at Redis each second, not the database (its hand-overs to the
# database are counted: docs/performance.md). The row stays the truth; the runner reads it too, rarely.
STOP_SIGNAL_SECONDS = 24 * 3600

# Which control stopped a turn, as audited: the Stop button, or Slack's own stop on a stream.
STOP_BUTTON = "stop-button"
SLACK_STREAM_STOP = "slack-stream-stop"
SLACK_SESSION_STOP = "slack-agent-session-stop"  # the stop control of Slack's agent session


class StopResult(enum.Enum):
    STOPPING = "stopping"  # the mark is set: the runner cancels the task and ends the turn
    OVER = "over"  # the turn ended, or someone stopped it first: nothing changes
    UNKNOWN = "unknown"  # no running turn of this Connection and channel has that id (a forged press)
    NOT_THE_REQUESTER = "not-the-requester"  # stopBy: requester, and someone else pressed


# What the presser alone is told (docs/slack-platform.md, "Stop"); the thread is told ``stopped_line``.
NOTHING_TO_STOP = "This turn has already ended, so there is nothing to stop."
NOT_A_STOP = "This Stop button does not belong to a turn of this channel."
ONLY_MEMBERS_STOP = "Only members of this channel can stop the agent."
ONLY_THE_REQUESTER_STOPS = "Only the person who asked can stop this turn."
MEMBERSHIP_UNKNOWN = (
    "Slack did not let me check who is in this channel just now. Press Stop again in a moment."
)

REFUSALS = {
    StopResult.OVER: NOTHING_TO_STOP,
    StopResult.UNKNOWN: NOT_A_STOP,
    StopResult.NOT_THE_REQUESTER: ONLY_THE_REQUESTER_STOPS,
}


def stopped_line(user_id: str) -> str:
    """The one line the thread is told when a turn was stopped."""
    return f"Stopped by <@{user_id}>."


def turn_id_of(value: str) -> int:
    """The Stop button's value is its turn's id; 0 (no turn) for anything else."""
    return int(value) if value.isascii() and value.isdigit() and len(value) < 19 else 0


def request_stop(
    turn_id: int,
    *,
    connection_id: int,
    channel_id: str,
    user_id: str,
    control: str = STOP_BUTTON,
    now: datetime | None = None,
) -> StopResult:
    """Marks the running turn as stopped by ``user_id`` and audits it, or says why nothing changed."""
    now = now or timezone.now()
    turns = Turn.objects.filter(pk=turn_id, connection_id=connection_id, channel_id=channel_id)
    if _only_the_requester(turns, user_id):
        return StopResult.NOT_THE_REQUESTER
    with transaction.atomic():
        won = turns.filter(state=Turn.State.RUNNING, stop_requested_at=None).update(
            stopped_by=user_id, stop_requested_at=now
        )
        if not won:
            return StopResult.OVER if turns.exists() else StopResult.UNKNOWN
        turn = turns.select_related("session__binding").get()
        record(
            "turn.stopped",
            binding_name=turn.session.binding.name if turn.session.binding else "",
            actor_id=user_id,
            subject=f"turn:{turn.pk}",
            details={"channel": channel_id, "task_id": turn.task_id, "control": control},
            requester=turn.user_id,
        )
        key = stop_signal_key(turn_id, turn.started_at)
        transaction.on_commit(lambda: shared_cache.backend().set(key, user_id, STOP_SIGNAL_SECONDS))
    logger.info("turn.stop_requested", extra={"turn_id": turn_id})
    return StopResult.STOPPING


def _only_the_requester(turns: QuerySet[Turn], user_id: str) -> bool:
    """The Binding stops only on its requester's press (``stopBy: requester``) and this is someone
    else's; a trigger's turn names nobody, so any member may stop it."""
    found = turns.values_list("session__binding__stop_by", "user_id").first()
    if found is None:
        return False
    stop_by, requester = found
    return stop_by == StopBy.REQUESTER and is_person(requester) and requester != user_id


def running_turn_in(connection_id: int, channel_id: str, thread_ts: str) -> int | None:
    """The turn that runs in a thread, which Slack's agent session stop names by its thread alone."""
    return (
        Turn.objects.filter(
            connection_id=connection_id,
            channel_id=channel_id,
            session__thread_ts=thread_ts,
            state=Turn.State.RUNNING,
        )
        .values_list("pk", flat=True)
        .first()
    )


def stop_signal_key(turn_id: int, started_at: datetime | None) -> str:
    # With its start: an id a database used again (a test's SQLite) never finds an old word.
    return f"turn-stopped:{turn_id}:{started_at.timestamp() if started_at else ''}"


async def signalled_stop(turn_id: int, started_at: datetime | None) -> str | None:
    """Who stopped the turn, as the shared cache says (``STOP_SIGNAL_SECONDS``); None: nobody yet."""
    user_id = await shared_cache.aget(stop_signal_key(turn_id, started_at))
    return user_id if isinstance(user_id, str) else None


def stopped_by(turn_id: int) -> str | None:
    """Who pressed Stop on the turn, if anyone has (the runner's look while it follows the agent)."""
    return (
        Turn.objects.filter(pk=turn_id)
        .exclude(stop_requested_at=None)
        .values_list("stopped_by", flat=True)
        .first()
    )
