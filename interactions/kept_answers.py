"""A person's answer or decision is kept until the agent takes it.

When an answer turn's message could not reach the agent (every connection refused, so it surely never
arrived), the runner hands it here instead of failing it: the turn goes back to the queue and a row
(``KeptAnswer``) says when to send it again, with a growing pause. The replies behind it wait, as they
wait for an open question: the agent's task is still paused. A reply in the thread sends it again at
once. The prompt says it is waiting to be delivered (``waiting_line``) until it is, and then shows the
answer or decision as usual.

Past the Interaction's deadline it is given up as a timeout is: the turn ended as unreachable, the
Interaction timed out with its prompt owed the timed-out ending, so the timeout sweep cancels the
paused task (again on each sweep while the agent cannot be reached, for an approval) and tells the
thread once with the fixed timeout notice.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from audit.services import record
from kourier.queue import enqueue_after_commit
from sessions.models import Turn
from sessions.pauses import UndeliveredAnswer
from sessions.task_names import DRIVE_SESSION

from . import closings
from .models import Interaction, KeptAnswer

logger = logging.getLogger(__name__)

UNDELIVERED = "interaction.undelivered"


def backoff(tries: int) -> timedelta:
    """The pause after the ``tries``-th failed try: 2, 4, 8, ... seconds, at most a minute (each try
    itself retries for about ten seconds, kourier/a2a/follow.py)."""
    return timedelta(seconds=min(60, 2**tries))


def waiting_line(deadline: datetime) -> str:
    """What the prompt says under the answer or decision while it waits to be delivered."""
    stamp = int(deadline.timestamp())
    return (
        "Waiting to be delivered: the agent cannot be reached right now, so I keep sending it until "
        f"<!date^{stamp}^{{date_short_pretty}} at {{time}}|{deadline:%Y-%m-%d %H:%M} UTC>."
    )


def is_waiting(interaction_id: int) -> bool:
    return KeptAnswer.objects.filter(interaction_id=interaction_id).exists()


def waiting(interaction: Interaction) -> str:
    """What an answer or decision the agent has not taken yet adds to its prompt's line: nothing once
    it is taken (or never kept)."""
    if not is_waiting(interaction.pk):
        return ""
    return " " + waiting_line(interaction.deadline)


def keep(turn_id: int, *, now: datetime | None = None) -> UndeliveredAnswer:
    """The answer turn ``turn_id`` could not reach the agent: kept for another try, or given up as a
    timeout past the Interaction's deadline."""
    now = now or timezone.now()
    with transaction.atomic():
        interaction = (
            Interaction.objects.select_for_update()
            .filter(answer_turn_id=turn_id, state=Interaction.State.ANSWERED)
            .first()
        )
        if interaction is None:
            return UndeliveredAnswer.NOT_AN_ANSWER
        if interaction.deadline <= now:
            _expire(interaction, now)
            return UndeliveredAnswer.EXPIRED
        kept, created = KeptAnswer.objects.select_for_update().get_or_create(
            interaction=interaction,
            defaults={"session_id": interaction.session_id, "tried_at": now, "due_at": now + backoff(1)},
        )
        if not created:
            kept.tries += 1
            kept.tried_at, kept.due_at = now, now + backoff(kept.tries)
            kept.save(update_fields=["tries", "tried_at", "due_at"])
        # Back in the queue, not ended: the same turn (its message id) goes again.
        Turn.objects.filter(pk=turn_id, state=Turn.State.RUNNING).update(state=Turn.State.QUEUED)
        if created:
            closings.intend(interaction.pk, now=now)  # the prompt says it waits to be delivered
    logger.info("interaction.answer_kept", extra={"interaction_id": interaction.pk, "tries": kept.tries})
    return UndeliveredAnswer.KEPT


def settle(turn_id: int) -> None:
    """The answer turn ``turn_id`` ended otherwise (the agent took it, or refused it): no longer kept,
    and the prompt, which said it waited, shows it as usual."""
    with transaction.atomic():
        interaction_id = (
            Interaction.objects.filter(answer_turn_id=turn_id).values_list("pk", flat=True).first()
        )
        if (
            interaction_id is not None
            and KeptAnswer.objects.filter(interaction_id=interaction_id).delete()[0]
        ):
            closings.intend(interaction_id)
            logger.info("interaction.answer_delivered", extra={"interaction_id": interaction_id})


def holding_back(session_id: int, *, now: datetime | None = None) -> QuerySet[KeptAnswer]:
    """The kept answer that holds the session's turns back, if any: its next try is later and no message
    came into the thread since its last one. A query, for the runner's look to use as a condition."""
    now = now or timezone.now()
    reply_since = Turn.objects.filter(
        session_id=OuterRef("session_id"),
        kind=Turn.Kind.MESSAGE,
        state=Turn.State.QUEUED,
        created_at__gt=OuterRef("tried_at"),
    )
    return KeptAnswer.objects.filter(session_id=session_id, due_at__gt=now).exclude(Exists(reply_since))


def not_due(now: datetime) -> QuerySet[KeptAnswer]:
    """The kept answers whose next try is later: recovery leaves their sessions to ``send_due``."""
    return KeptAnswer.objects.filter(due_at__gt=now)


def send_due(*, now: datetime | None = None) -> tuple[int, int]:
    """Drives the sessions whose kept answer is due (how many), and gives up those past their
    Interaction's deadline (how many). A due answer's session is driven at every run until a try
    keeps it again (a lost drive costs one run): the session's lease lets one runner take it."""
    now = now or timezone.now()
    driven = expired = 0
    due_or_past_deadline = KeptAnswer.objects.filter(Q(due_at__lte=now) | Q(interaction__deadline__lte=now))
    for interaction_id, session_id, deadline in due_or_past_deadline.values_list(
        "interaction_id", "session_id", "interaction__deadline"
    ):
        with transaction.atomic():
            if deadline > now:
                enqueue_after_commit(DRIVE_SESSION, session_id)
                driven += 1
                continue
            interaction = Interaction.objects.select_for_update().get(pk=interaction_id)
            if _expire(interaction, now, only_queued=True):
                expired += 1
    return driven, expired


def _expire(interaction: Interaction, now: datetime, *, only_queued: bool = False) -> bool:
    """Gives the answer up at the deadline, as a timeout (in the caller's transaction). With
    ``only_queued``, not while a try runs: its runner gives it up when the try fails."""
    turn_id = interaction.answer_turn_id
    assert turn_id is not None, "an answered Interaction has its answer turn"
    if only_queued and Turn.objects.filter(pk=turn_id, state=Turn.State.RUNNING).exists():
        return False
    KeptAnswer.objects.filter(interaction=interaction).delete()
    Turn.objects.filter(pk=turn_id, state=Turn.State.QUEUED).update(
        state=Turn.State.DONE, outcome=Turn.Outcome.UNREACHABLE, ended_at=now
    )
    # The timeout sweep takes it from here (closed_at cleared: its prompt gets the timed-out ending).
    # The timeout's audit is this row, not a timed_out one: a person did decide.
    Interaction.objects.filter(pk=interaction.pk, state=Interaction.State.ANSWERED).update(
        state=Interaction.State.TIMED_OUT, closed_at=None, timeout_audited_at=now
    )
    binding = interaction.session.binding
    record(
        UNDELIVERED,
        binding_name=binding.name if binding else "",
        subject=f"interaction {interaction.pk}",
        details={"kind": interaction.kind, "answered_by": interaction.answered_by},
    )
    enqueue_after_commit(DRIVE_SESSION, interaction.session_id)
    logger.info("interaction.answer_undelivered", extra={"interaction_id": interaction.pk})
    return True
