"""What a Binding's threads are doing now, for the operator's live page (read-only queries)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Q
from django.utils import timezone

from interactions.models import Interaction
from sessions.models import Session, Turn, held_by_a_runner

PENDING_SHOWN = 50  # the soonest deadlines; the count says how many there are in all


@dataclass(frozen=True)
class LastFailure:
    turn_id: int
    outcome: str
    at: datetime | None


@dataclass(frozen=True)
class LiveState:
    sessions_open: int  # threads still within their TTL
    sessions_running: int  # held by a runner's live lease
    turns_queued: int
    turns_running: int
    pending_count: int
    pending: list[Interaction]  # open, soonest deadline first, at most PENDING_SHOWN
    last_failure: LastFailure | None


def live_state(binding_id: int, *, now: datetime | None = None) -> LiveState:
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
    return LiveState(
        sessions_open=sessions["open"],
        sessions_running=sessions["running"],
        turns_queued=turns["queued"],
        turns_running=turns["running"],
        pending_count=pending.count(),
        pending=list(pending[:PENDING_SHOWN]),
        last_failure=LastFailure(failed["pk"], failed["outcome"], failed["ended_at"]) if failed else None,
    )
