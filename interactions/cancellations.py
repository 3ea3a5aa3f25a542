"""Paused tasks owed a cancellation: the agent's task still waits for input that will never come.

A pause that ends without its answer reaching the agent leaves the task paused, whatever its kind: a
prompt refused as unusable, a question past its deadline, an approval's timeout denial the agent did
not take, a pause nobody was asked (askUser or toolApprovals off, a pause no one can answer). Each is
cancelled through ``kourier.a2a.follow.cancel_paused_task``; until that is settled (cancelled, or
refused by the agent: nothing more to try) the Interaction's ``task_cancelled_at`` stays empty, and
beat's time-out-interactions tries again at every run while the agent cannot be reached. The same
retries for a question as for an approval: neither is left paused for good.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from sessions.models import Turn

from . import services
from .models import Interaction

logger = logging.getLogger(__name__)

# An answer turn that ended so was never taken by the agent: its task still waits, paused.
NOT_TAKEN = (Turn.Outcome.UNREACHABLE, Turn.Outcome.LOST, Turn.Outcome.CRASHED, Turn.Outcome.GARBLED)


def owed() -> list[Interaction]:
    """The Interactions whose paused task is still to be cancelled, oldest first: refused ones and
    pauses nobody was asked (either kind), timed-out questions once their timeout was told (the
    timeout's own run tries first), and timed-out approvals whose denial the agent did not take."""
    refused_or_unasked = Q(state=Interaction.State.CANCELLED)
    question_timed_out = Q(
        kind=Interaction.Kind.QUESTION, state=Interaction.State.TIMED_OUT, closed_at__isnull=False
    )
    denial_not_taken = Q(
        kind=Interaction.Kind.APPROVAL,
        state=Interaction.State.TIMED_OUT,
        answer_turn__state__in=[Turn.State.DONE, Turn.State.FAILED],
        answer_turn__outcome__in=NOT_TAKEN,
    )
    return list(
        Interaction.objects.filter(task_cancelled_at=None)
        .filter(refused_or_unasked | question_timed_out | denial_not_taken)
        .select_related("session__binding")
        .order_by("pk")
    )


def mark_cancelled(interaction_id: int, *, now: datetime | None = None) -> None:
    """The agent settled the cancellation: nothing more is tried."""
    Interaction.objects.filter(pk=interaction_id, task_cancelled_at=None).update(
        task_cancelled_at=now or timezone.now()
    )


def keep_unasked(
    turn_id: int, kind: Interaction.Kind, task_id: str, *, now: datetime | None = None
) -> Interaction:
    """A pause nobody was asked, whose task the agent could not be reached to cancel: kept as a closed
    Interaction (its pause is only the task's id: nothing the agent asked is stored) owed the
    cancellation. The turn's own Interaction when called again (a turn pauses once)."""
    now = now or timezone.now()
    turn = Turn.objects.select_related("session").get(pk=turn_id)
    interaction, _ = Interaction.objects.get_or_create(
        turn=turn,
        defaults={
            "session": turn.session,
            "kind": kind,
            "pause": {"task_id": task_id},
            "state": Interaction.State.CANCELLED,
            "deadline": now,
            "closed_at": now,
            "channel_id": turn.channel_id,
            "requested_by": services.requester_of(turn),
        },
    )
    logger.info("interaction.cancel_deferred", extra={"interaction_id": interaction.pk, "turn_id": turn_id})
    return interaction
