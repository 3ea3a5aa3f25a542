"""The rewrites a prompt is owed once its Interaction changed (decided, answered, its answer waiting
to be delivered or delivered at last): kept as a row until Slack has taken one.

The row (``PromptClosing``) is written in the transaction that changed the Interaction, and tried
through the interactions app's one retry machine (retries.py): each try a Celery message
(``CLOSE_PROMPT``) taken once by its number, put off while Slack fails, given up after the last, and
sent again by beat's sweep when its message was lost (a Redis that lost its data) or its worker died
holding it. A rewrite asked for while one runs makes the running one's end stale: the row stays, and
the new try shows what is true by then.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from . import home_refresh
from .models import PromptClosing
from .retries import Retries
from .task_names import CLOSE_PROMPT

# Tried again after 1, 2, 4, ... seconds, at most 60 apart: 25 tries, about twenty minutes in all,
# then given up and logged. A try is one chat.update (Slack's client retries it within its own
# timeouts); one still running after a minute died with its worker.
RETRIES = Retries(
    rows=PromptClosing,
    key="interaction_id",
    task_name=CLOSE_PROMPT,
    tries=25,
    longest_wait=60,
    try_takes_at_most=timedelta(seconds=60),
)


def intend(interaction_id: int, *, now: datetime | None = None) -> None:
    """Owes the Interaction's prompt a rewrite; call it in the transaction that changed the Interaction.
    A try already under way is made stale: the new one shows the state this transaction commits."""
    now = now or timezone.now()
    with transaction.atomic():
        closing, created = PromptClosing.objects.select_for_update().get_or_create(
            interaction_id=interaction_id, defaults={"due_at": RETRIES.first_due(now)}
        )
        if not created:
            closing.attempt += 1
            closing.due_at = RETRIES.first_due(now)
            closing.save(update_fields=["attempt", "due_at"])
        RETRIES.send(interaction_id, closing.attempt)
        home_refresh.approvals_changed(interaction_id)
