"""The rewrites a prompt is owed once its Interaction changed (decided, answered, its answer waiting
to be delivered or delivered at last): kept as a row until Slack has taken one.

The row (``PromptClosing``) is written in the transaction that changed the Interaction, and each try
is a Celery message (``CLOSE_PROMPT``) that carries the Interaction's id and the try's number. A try
is taken by a conditional update of that number, so a message sent twice (by the sweep, or given back
by the broker) rewrites once. The row says when its next try should have started (or, once taken,
ended); beat's sweep sends a try that is overdue again. So the rewrite survives a worker's SIGKILL
(the broker would hide the message for its visibility timeout, an hour) and a Redis that lost its
data. A rewrite asked for while one runs makes the running one's end stale: the row stays, and the
new try shows what is true by then.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from kourier.queue import enqueue_after_commit

from .models import PromptClosing
from .task_names import CLOSE_PROMPT

# A rewrite Slack refuses is tried again after 1, 2, 4, ... seconds, at most 60 apart: about twenty
# minutes in all, then it is given up and logged.
RETRIES = 25
# Past its time by this much, a try that never started was lost with its worker or its broker.
LOST_AFTER = timedelta(seconds=10)
# A try is one chat.update (Slack's client retries it within its own timeouts); one still running
# after this died with its worker.
TRY_TAKES_AT_MOST = timedelta(seconds=60)


class Outcome(enum.StrEnum):
    CLOSED = "closed"  # the prompt shows how its Interaction stands
    STALE = "stale"  # the try was taken already (or the row is gone): nothing done
    RETRY = "retry"  # Slack failed: the next try is due after ``backoff``
    GAVE_UP = "gave-up"


def backoff(attempt: int) -> int:
    """Seconds from try ``attempt`` to the next."""
    return min(60, 2**attempt)


def intend(interaction_id: int, *, now: datetime | None = None) -> None:
    """Owes the Interaction's prompt a rewrite; call it in the transaction that changed the Interaction.
    A try already under way is made stale: the new one shows the state this transaction commits."""
    now = now or timezone.now()
    with transaction.atomic():
        closing, created = PromptClosing.objects.select_for_update().get_or_create(
            interaction_id=interaction_id, defaults={"due_at": now + LOST_AFTER}
        )
        if not created:
            closing.attempt += 1
            closing.due_at = now + LOST_AFTER
            closing.save(update_fields=["attempt", "due_at"])
        enqueue_after_commit(CLOSE_PROMPT, interaction_id, closing.attempt)


def claim(interaction_id: int, attempt: int, *, now: datetime | None = None) -> bool:
    """Takes try ``attempt`` of the owed rewrite; False when it was taken already or none is owed."""
    now = now or timezone.now()
    return (
        PromptClosing.objects.filter(interaction_id=interaction_id, attempt=attempt).update(
            attempt=attempt + 1, due_at=now + TRY_TAKES_AT_MOST
        )
        == 1
    )


def put_off(interaction_id: int, attempt: int, *, now: datetime | None = None) -> Outcome:
    """After try ``attempt`` found Slack failing: RETRY (the next try's time kept in the row), or
    GAVE_UP after the last try (the row forgotten)."""
    now = now or timezone.now()
    if attempt + 1 >= RETRIES:
        finished(interaction_id, attempt)
        return Outcome.GAVE_UP
    PromptClosing.objects.filter(interaction_id=interaction_id, attempt=attempt + 1).update(
        due_at=now + timedelta(seconds=backoff(attempt)) + LOST_AFTER
    )
    return Outcome.RETRY


def finished(interaction_id: int, attempt: int) -> None:
    """Try ``attempt`` is over; conditional: a rewrite asked for meanwhile keeps the row for its try."""
    PromptClosing.objects.filter(interaction_id=interaction_id, attempt=attempt + 1).delete()


def send_overdue(*, now: datetime | None = None) -> int:
    """Sends again every try that is overdue (its message was lost, or its worker died holding it);
    returns how many."""
    now = now or timezone.now()
    sent = 0
    for interaction_id, attempt, due_at in PromptClosing.objects.filter(due_at__lt=now).values_list(
        "interaction_id", "attempt", "due_at"
    ):
        # Conditional: a try taken or put off since the read is not overdue any more.
        with transaction.atomic():
            if PromptClosing.objects.filter(
                interaction_id=interaction_id, attempt=attempt, due_at=due_at
            ).update(due_at=now + LOST_AFTER):
                enqueue_after_commit(CLOSE_PROMPT, interaction_id, attempt)
                sent += 1
    return sent
