"""Presses on an approval prompt kept for a retry, because Slack could not tell for now whether the
presser is an approver (a timeout, a server error, a rate limit on usergroups.users.list).

The press is a row (``KeptPress``) and each try a Celery message (``RETRY_PRESS``) that carries the
row's id and the try's number. A try is taken by a conditional update of that number, so a message
sent twice (by the sweep, or given back by the broker) runs once. The row says when its next try
should have started (or, once taken, ended); beat's sweep sends a try that is overdue again. So the
retry survives a worker's SIGTERM (the broker gets its held messages back at once), a SIGKILL (the
broker would hide the message for its visibility timeout, an hour) and a Redis that lost its data.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from kourier.queue import enqueue_after_commit

from .models import KeptPress
from .task_names import RETRY_PRESS

# A kept press is tried again after 1, 2, 4, ... seconds, at most 30 apart, about four minutes in all;
# the last try tells the person.
RETRIES = 10
# Past its time by this much, a try that never started was lost with its worker.
LOST_AFTER = timedelta(seconds=10)
# A try reads a few Slack answers of at most 1.5 s each; one still running after this died with its worker.
TRY_TAKES_AT_MOST = timedelta(seconds=60)


def backoff(attempt: int) -> int:
    """Seconds from try ``attempt`` to the next."""
    return min(30, 2**attempt)


@dataclass(frozen=True)
class Kept:
    id: int
    press: dict[str, Any]
    connection_id: int
    bot_token: str
    attempt: int

    @property
    def last(self) -> bool:
        return self.attempt >= RETRIES


def keep(
    press: dict[str, Any], *, connection_id: int, interaction_id: int, now: datetime | None = None
) -> int:
    """Keeps a press and sends its first try; returns the kept press's id."""
    now = now or timezone.now()
    with transaction.atomic():
        kept = KeptPress.objects.create(
            interaction_id=interaction_id,
            connection_id=connection_id,
            press=press,
            due_at=now + LOST_AFTER,
        )
        enqueue_after_commit(RETRY_PRESS, kept.pk, 0)
    return kept.pk


def claim(kept_id: int, attempt: int, *, now: datetime | None = None) -> Kept | None:
    """Takes try ``attempt`` of a kept press; None when it was taken already or the press is gone."""
    now = now or timezone.now()
    taken = KeptPress.objects.filter(pk=kept_id, attempt=attempt).update(
        attempt=attempt + 1, due_at=now + TRY_TAKES_AT_MOST
    )
    kept = KeptPress.objects.select_related("connection").filter(pk=kept_id).first() if taken else None
    if kept is None:
        return None
    return Kept(kept.pk, kept.press, kept.connection_id, kept.connection.bot_token(), attempt)


def put_off(kept_id: int, attempt: int, *, now: datetime | None = None) -> int:
    """After try ``attempt`` found Slack still unable to answer: the next try's time, in seconds."""
    now = now or timezone.now()
    delay = backoff(attempt)
    KeptPress.objects.filter(pk=kept_id, attempt=attempt + 1).update(
        due_at=now + timedelta(seconds=delay) + LOST_AFTER
    )
    return delay


def forget(kept_id: int) -> None:
    """The press was decided or refused (a decision deletes it in its own transaction)."""
    KeptPress.objects.filter(pk=kept_id).delete()


def send_overdue(*, now: datetime | None = None) -> int:
    """Sends again every try that is overdue (its worker died holding it); returns how many."""
    now = now or timezone.now()
    sent = 0
    for kept_id, attempt, due_at in KeptPress.objects.filter(due_at__lt=now).values_list(
        "pk", "attempt", "due_at"
    ):
        # Conditional: a try taken or put off since the read is not overdue any more.
        with transaction.atomic():
            if KeptPress.objects.filter(pk=kept_id, attempt=attempt, due_at=due_at).update(
                due_at=now + LOST_AFTER
            ):
                enqueue_after_commit(RETRY_PRESS, kept_id, attempt)
                sent += 1
    return sent
