"""What is going on now, as the database says: the counts /metrics reports at scrape time
(kourier/metrics.py says why they are read, not kept)."""

from __future__ import annotations

from django.db.models import Count, F

from bindings.models import Binding
from interactions.models import Interaction
from kourier.metrics import LiveState
from sessions.models import Turn
from sessions.outbox import count_owed_notices


def read_live_state() -> LiveState:
    """A few COUNTs on indexed columns (turn state, interaction state, intended notices).

    Every Binding has its series, 0 when idle: a gauge that is missing reads as "no data" to an alert
    or a dashboard, not as nothing going on."""
    names = list(Binding.objects.values_list("name", flat=True))
    turns = (
        Turn.objects.filter(state__in=[Turn.State.QUEUED, Turn.State.RUNNING])
        .values("state", binding=F("session__binding__name"))
        .annotate(count=Count("pk"))
    )
    queued = dict.fromkeys(names, 0)
    running = dict.fromkeys(names, 0)
    for row in turns:
        into = queued if row["state"] == Turn.State.QUEUED else running
        into[row["binding"] or ""] = row["count"]
    pending = (
        Interaction.objects.filter(state=Interaction.State.OPEN)
        .values("kind", binding=F("session__binding__name"))
        .annotate(count=Count("pk"))
    )
    interactions_pending = {(name, kind): 0 for name in names for kind in Interaction.Kind.values}
    for row in pending:
        interactions_pending[(row["binding"] or "", row["kind"])] = row["count"]
    return LiveState(
        turns_queued=queued,
        turns_running=running,
        interactions_pending=interactions_pending,
        notices_owed=count_owed_notices(),
    )
