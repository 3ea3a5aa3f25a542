"""The acknowledgment reaction: on a turn's message while the turn waits or runs, off once it ends.

One path puts reactions on (``acknowledge_waiting_turns``: each turn is claimed once by a conditional
update, then reacted to) and one takes a reaction off (``take_off``: Slack, then the row). The runner
calls them as turns arrive and end; beat's sweep calls ``take_off`` for reactions an ended turn left.

Both wait at most ``SLACK_REACTION_WAIT_SECONDS`` for their slot in the workspace's budget
(kourier/slack/budgets.py): a reaction is a courtesy, and a burst of mentions spends reactions.add
(Tier 3) and reactions.remove (Tier 2) long before the replies' budgets. An add with no slot that
soon is skipped (the claim let go, so a later turn of the session may add it) and the turn runs
without it; a removal with none is left to the sweep, which tries again on its next run by the same
rule. Neither is sent to draw a 429.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from kourier import metrics, tracing
from kourier.db import in_database_thread
from kourier.slack.clients import (
    SlackBudgetDeferred,
    async_web_client,
    connection_workspace,
    error_name,
    may_pass,
    patience,
)
from kourier.slack.reactions import add_reaction, remove_reaction

from .models import OPEN_TURN_STATES, Turn
from .turns import turn_is_over

logger = logging.getLogger(__name__)

# How far back the sweep looks for reactions left on ended turns, and how many it takes a run.
STALE_HORIZON = timedelta(days=1)
STALE_BATCH = 50


@dataclass(frozen=True)
class Acknowledgment:
    turn_id: int
    connection_id: int
    channel_id: str
    message_ts: str
    emoji: str
    bot_token: str
    accepted_at: datetime  # when the message was taken as a turn
    traceparent: str = ""  # the turn's (its row's): the reaction is a call of the turn's trace


# What an acknowledgment reads of a turn, its Binding and its Connection (``_acknowledgment``), and
# nothing else: the ORM builds every column it selects into the statement, and the other ~80 columns
# of the three made each read cost ~1.3 ms of CPU, five times what it costs to run
# (docs/performance.md, issue 17 point 6).
_READ = (
    "channel_id",
    "message_ts",
    "created_at",
    "acknowledged",
    "state",
    "traceparent",
    "connection__name",
    "connection__bot_token_env",
    "session__binding__acknowledgment_enabled",
    "session__binding__acknowledgment_emoji",
)


def _acknowledgment(turn: Turn) -> Acknowledgment | None:
    binding = turn.session.binding
    if binding is None or not binding.acknowledgment_enabled:
        return None
    return Acknowledgment(
        turn_id=turn.pk,
        connection_id=turn.connection_id,
        channel_id=turn.channel_id,
        message_ts=turn.message_ts,
        emoji=binding.acknowledgment_emoji,
        bot_token=turn.connection.bot_token(),
        accepted_at=turn.created_at,
        traceparent=turn.traceparent,
    )


# --- the rows ----------------------------------------------------------------------------------------


def claim(session_id: int) -> list[Acknowledgment]:
    """Claims the right to add the reaction of each of the session's turns that waits or runs without
    one: once per turn (a conditional update), in message order."""
    waiting = (
        Turn.objects.filter(session_id=session_id, acknowledged=False, state__in=OPEN_TURN_STATES)
        .exclude(kind=Turn.Kind.ANSWER)  # a pressed answer has no message to react to
        .select_related("session__binding", "connection")
        .only(*_READ)
        .order_by("message_ts")
    )
    claimed = []
    for turn in waiting:
        ack = _acknowledgment(turn)
        if ack is None:
            return []
        won = (
            Turn.objects.filter(pk=turn.pk, acknowledged=False, state__in=OPEN_TURN_STATES).update(
                acknowledged=True
            )
            == 1
        )
        if won:
            claimed.append(ack)
    return claimed


def let_go(turn_id: int) -> None:
    """The reaction a claim was for was not added (its budget had no slot soon): the turn has none to
    remove, and a later look may add it while the turn waits or runs."""
    Turn.objects.filter(pk=turn_id, acknowledged=True).update(acknowledged=False)


def of_turn(turn_id: int) -> Acknowledgment | None:
    """The reaction an ended turn still has on its message, if any."""
    turn = (
        Turn.objects.filter(pk=turn_id, acknowledged=True)
        .exclude(state__in=OPEN_TURN_STATES)
        .select_related("session__binding", "connection")
        .only(*_READ)
        .first()
    )
    return _acknowledgment(turn) if turn is not None else None


def mark_removed(turn_id: int) -> None:
    """The reaction of an ended turn is off its message: nothing is left for the sweep.

    From then on ``acknowledged`` is false again; a turn that waits or runs is never cleared, since its
    reaction is to stay (and is not claimed again: ``claim`` would add it twice).
    """
    Turn.objects.filter(pk=turn_id).exclude(state__in=OPEN_TURN_STATES).update(acknowledged=False)


def left_on_ended_turns(*, ended_before: datetime) -> list[Acknowledgment]:
    """Ended turns whose reaction is not known to be off their message: the runner died between ending
    the turn and removing it, or Slack failed the removal. Oldest first."""
    turns = (
        Turn.objects.filter(
            acknowledged=True, ended_at__lt=ended_before, ended_at__gte=ended_before - STALE_HORIZON
        )
        .exclude(state__in=OPEN_TURN_STATES)
        .select_related("session__binding", "connection")
        .only(*_READ)
        .order_by("ended_at")[:STALE_BATCH]
    )
    return [ack for turn in turns if (ack := _acknowledgment(turn)) is not None]


# --- Slack -------------------------------------------------------------------------------------------


def _slack(ack: Acknowledgment):
    return async_web_client(ack.bot_token, workspace=connection_workspace(ack.connection_id))


async def acknowledge_waiting_turns(session_id: int) -> None:
    """Adds the reaction to every turn of the session that waits or runs without one."""
    for ack in await in_database_thread(claim)(session_id):
        try:
            # The reaction's Slack call is a span of the turn's trace, under the event that stored it.
            with tracing.continued(ack.traceparent), patience(settings.SLACK_REACTION_WAIT_SECONDS):
                await add_reaction(_slack(ack), ack.channel_id, ack.message_ts, ack.emoji)
        except SlackBudgetDeferred:
            logger.info("turn.acknowledgment_skipped", extra={"turn_id": ack.turn_id})
            await in_database_thread(let_go)(ack.turn_id)
            continue
        except Exception as exc:  # a Slack error, a timeout, a dropped connection
            # A reaction is a courtesy: the turn runs without it (one whose answer was lost may be on;
            # the turn's end removes it).
            logger.warning(
                "turn.acknowledgment_failed", extra={"turn_id": ack.turn_id, "error": error_name(exc)}
            )
            continue
        metrics.turn_acknowledged(ack.accepted_at)
        # The turn may have ended while the reaction was on its way; its runner then found nothing
        # to remove.
        if await in_database_thread(turn_is_over)(ack.turn_id):
            await take_off(ack)


async def take_off(ack: Acknowledgment) -> bool:
    """Takes an ended turn's reaction off its message; True when nothing is left to remove.

    A failure is logged, never raised: the session goes on to its next turn, and beat's sweep tries
    again after a fault that may pass (a 5xx, a 429, a timeout). A refusal that will not pass (the
    message is gone) leaves nothing to remove.
    """
    try:
        with patience(settings.SLACK_REACTION_WAIT_SECONDS):
            await remove_reaction(_slack(ack), ack.channel_id, ack.message_ts, ack.emoji)
    except SlackBudgetDeferred:
        logger.info("turn.acknowledgment_removal_deferred", extra={"turn_id": ack.turn_id})
        return False
    except Exception as exc:
        logger.warning(
            "turn.acknowledgment_not_removed", extra={"turn_id": ack.turn_id, "error": error_name(exc)}
        )
        if may_pass(exc):
            return False
    await in_database_thread(mark_removed)(ack.turn_id)
    return True
