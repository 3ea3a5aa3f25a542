"""What is going on now, as the database says: the counts /metrics reports at scrape time
(kourier/metrics.py says why they are read, not kept)."""

from __future__ import annotations

from django.db.models import Count, F

from interactions.models import Interaction
from kourier.metrics import LiveState
from sessions.models import Turn
from sessions.outbox import count_owed_notices


def read_live_state() -> LiveState:
    """A few COUNTs on indexed columns (turn state, interaction state, intended notices)."""
    turns = (
        Turn.objects.filter(state__in=[Turn.State.QUEUED, Turn.State.RUNNING])
        .values("state", binding=F("session__binding__name"))
        .annotate(count=Count("pk"))
    )
    queued: dict[str, int] = {}
    running: dict[str, int] = {}
    for row in turns:
        into = queued if row["state"] == Turn.State.QUEUED else running
        into[row["binding"] or ""] = row["count"]
    pending = (
        Interaction.objects.filter(state=Interaction.State.OPEN)
        .values("kind", binding=F("session__binding__name"))
        .annotate(count=Count("pk"))
    )
    return LiveState(
        turns_queued=queued,
        turns_running=running,
        interactions_pending={(row["binding"] or "", row["kind"]): row["count"] for row in pending},
        notices_owed=count_owed_notices(),
    )
