"""Presses on an approval prompt kept for a retry, because Slack could not tell for now whether the
presser is an approver (a timeout, a server error, a rate limit on usergroups.users.list).

The press is a row (``KeptPress``), tried again through the interactions app's one retry machine
(retries.py): each try a Celery message (``RETRY_PRESS``) taken once by its number, put off with a
growing pause while Slack still cannot answer, and sent again by beat's sweep when its worker died
holding it. So the retry survives a worker's SIGTERM, a SIGKILL and a Redis that lost its data. The
last try does not put the press off: it tells the person it could not be sent (presses.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from .models import KeptPress
from .retries import Retries
from .task_names import RETRY_PRESS

# Tried again after 1, 2, 4, ... seconds, at most 30 apart: eleven tries, about four minutes in all.
# A try reads a few Slack answers of at most 1.5 s each; one still running after a minute died.
RETRIES = Retries(
    rows=KeptPress,
    key="pk",
    task_name=RETRY_PRESS,
    tries=11,
    longest_wait=30,
    try_takes_at_most=timedelta(seconds=60),
)


@dataclass(frozen=True)
class PressTry:
    """One try of a kept press, taken: the press as the listener read it, and whose token reads Slack."""

    id: int
    press: dict[str, Any]
    connection_id: int
    bot_token: str
    attempt: int

    @property
    def last(self) -> bool:
        return RETRIES.is_last(self.attempt)


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
            due_at=RETRIES.first_due(now),
        )
        RETRIES.send(kept.pk, 0)
    return kept.pk


def claim(kept_id: int, attempt: int, *, now: datetime | None = None) -> PressTry | None:
    """Takes try ``attempt`` of a kept press; None when it was taken already or the press is gone."""
    if not RETRIES.claim(kept_id, attempt, now=now):
        return None
    kept = KeptPress.objects.select_related("connection").filter(pk=kept_id).first()
    if kept is None:
        return None
    return PressTry(kept.pk, kept.press, kept.connection_id, kept.connection.bot_token(), attempt)


def forget(kept_id: int) -> None:
    """The press was decided or refused (a decision deletes it in its own transaction)."""
    KeptPress.objects.filter(pk=kept_id).delete()
