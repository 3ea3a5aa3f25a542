"""What is going on now, as the database says: the counts /metrics reports at scrape time
(kourier/metrics.py says why they are read, not kept), and a Binding's threads for the operator's
live page (bindings/admin.py, which is handed ``binding_live_state`` at start-up: kourier/apps.py).

Read-only queries over the apps (sessions, interactions): project glue, above them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Q
from django.utils import timezone

from bindings.models import Binding
from interactions.models import Interaction
from kourier.metrics import LiveState
from sessions.models import Session, Turn, held_by_a_runner
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


# -- a Binding's live page -------------------------------------------------------------------------

PENDING_SHOWN = 50  # the soonest deadlines; the count says how many there are in all


@dataclass(frozen=True)
class LastFailure:
    turn_id: int
    outcome: str
    at: datetime | None


@dataclass(frozen=True)
class BindingLiveState:
    sessions_open: int  # threads still within their TTL
    sessions_running: int  # held by a runner's live lease
    turns_queued: int
    turns_running: int
    pending_count: int
    pending: list[Interaction]  # open, soonest deadline first, at most PENDING_SHOWN
    last_failure: LastFailure | None


def binding_live_state(binding_id: int, *, now: datetime | None = None) -> BindingLiveState:
    now = now or timezone.now()
    sessions = Session.objects.filter(binding_id=binding_id).aggregate(
        open=Count("pk", filter=Q(expires_at__gt=now)),
        running=Count("pk", filter=held_by_a_runner(now)),
    )
    turns = Turn.objects.filter(session__binding_id=binding_id).aggregate(
        queued=Count("pk", filter=Q(state=Turn.State.QUEUED)),
        running=Count("pk", filter=Q(state=Turn.State.RUNNING)),
    )
    pending = Interaction.objects.filter(
        session__binding_id=binding_id, state=Interaction.State.OPEN
    ).order_by("deadline", "pk")
    failed = (
        Turn.objects.filter(session__binding_id=binding_id, state=Turn.State.FAILED)
        .order_by(F("ended_at").desc(nulls_last=True), "-pk")
        .values("pk", "outcome", "ended_at")
        .first()
    )
    return BindingLiveState(
        sessions_open=sessions["open"],
        sessions_running=sessions["running"],
        turns_queued=turns["queued"],
        turns_running=turns["running"],
        pending_count=pending.count(),
        pending=list(pending[:PENDING_SHOWN]),
        last_failure=LastFailure(failed["pk"], failed["outcome"], failed["ended_at"]) if failed else None,
    )
