"""What is going on now, as the database says: the counts /metrics reports at scrape time
(kourier/metrics.py says why they are read, not kept), and a Binding's threads for the operator's
live page (bindings/admin.py, which is handed ``binding_live_state`` at start-up: kourier/apps.py).

Read-only queries over the apps (sessions, interactions, alerts): project glue, above them. The live
page's last Slack failure is the Slack adapter's record of its Connection (kourier/slack/failures.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, F, Q
from django.db.models.functions import TruncMinute
from django.utils import timezone

from alerts.models import Alert
from bindings.models import Binding
from interactions.models import Interaction
from kourier import live_chart
from kourier.metrics import LiveState
from kourier.slack.clients import connection_workspace
from kourier.slack.failures import SlackFailure, last_failure
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
class AlertFailure:
    alert_id: int
    error: str
    at: datetime | None
    given_up: bool  # a permanent failure; else it is retried after its backoff


# The most recent of the last hour's replies the chart reads: a bound on the rows, whatever the traffic.
REPLIES_READ = 3000


@dataclass(frozen=True)
class BindingLiveState:
    sessions_open: int  # threads still within their TTL
    sessions_running: int  # held by a runner's live lease
    turns_queued: int
    turns_running: int
    pending_count: int
    pending: list[Interaction]  # open, soonest deadline first, at most PENDING_SHOWN
    last_failure: LastFailure | None
    last_slack_failure: SlackFailure | None = None  # of the Binding's Connection
    last_alert_failure: AlertFailure | None = None
    turns_chart: live_chart.TurnsChart | None = None
    reply_chart: live_chart.ReplyChart | None = None


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
    alert_failed = (
        Alert.objects.filter(binding_id=binding_id, last_delivery_failed_at__isnull=False)
        .order_by("-last_delivery_failed_at", "-pk")
        .values("pk", "last_delivery_error", "last_delivery_failed_at", "delivery_failed")
        .first()
    )
    connection_id = Binding.objects.filter(pk=binding_id).values_list("connection_id", flat=True).first()
    return BindingLiveState(
        sessions_open=sessions["open"],
        sessions_running=sessions["running"],
        turns_queued=turns["queued"],
        turns_running=turns["running"],
        pending_count=pending.count(),
        pending=list(pending[:PENDING_SHOWN]),
        last_failure=LastFailure(failed["pk"], failed["outcome"], failed["ended_at"]) if failed else None,
        last_slack_failure=last_failure(connection_workspace(connection_id)) if connection_id else None,
        last_alert_failure=AlertFailure(
            alert_failed["pk"],
            alert_failed["last_delivery_error"],
            alert_failed["last_delivery_failed_at"],
            alert_failed["delivery_failed"],
        )
        if alert_failed
        else None,
        turns_chart=live_chart.turns_chart(_turns_per_minute(binding_id, now), now),
        reply_chart=live_chart.reply_chart(_first_replies(binding_id, now), now),
    )


def _turns_per_minute(binding_id: int, now: datetime) -> list[tuple[datetime, str, int]]:
    """The last hour's ended turns, counted in the database by minute and outcome (at most 60 rows
    an outcome)."""
    rows = (
        Turn.objects.filter(session__binding_id=binding_id, ended_at__gte=live_chart.hour_start(now))
        .annotate(minute=TruncMinute("ended_at"))
        .values("minute", "outcome")
        .annotate(count=Count("pk"))
        .order_by()
    )
    return [(row["minute"], row["outcome"], row["count"]) for row in rows]


def _first_replies(binding_id: int, now: datetime) -> list[tuple[datetime, float]]:
    """The last hour's turns with a reply: when each was taken, and the seconds to its first reply
    (its ts is Slack's time of the post)."""
    rows = (
        Turn.objects.filter(session__binding_id=binding_id, created_at__gte=live_chart.hour_start(now))
        .exclude(reply_ts="")
        .order_by("-created_at")
        .values_list("created_at", "reply_ts")[:REPLIES_READ]
    )
    replies = []
    for created_at, reply_ts in rows:
        try:
            replies.append((created_at, float(reply_ts) - created_at.timestamp()))
        except ValueError:
            continue
    return replies
