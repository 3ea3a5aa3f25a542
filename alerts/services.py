"""What the alerts app does with what a trigger delivers, and how an alert thread's posts are made.

``take_alerts`` (the door calls it) records each alert's occurrence once and decides: a new alert
opens an ``Alert`` and owes its alert message; a new occurrence of an open alert owes a note (fired
again); a resolve closes the alert and owes the closing note. Nothing is posted there: the posts are
recorded and ``deliver`` (a Celery task, after commit) makes them, through the outbox, then starts the
alert thread on the confirmed message.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from bindings.models import Binding
from kourier.queue import enqueue_after_commit
from kourier.slack.alerts import (
    message_link,
    post_alert_note_once,
    post_alert_once,
    workspace_url,
)
from kourier.slack.clients import async_web_client, connection_workspace
from sessions.services import start_alert_thread

from . import messages
from .models import Alert, AlertOccurrence, AlertPost
from .outbox import AlertOutbox
from .payloads import AlertNotice, AlertStatus
from .queue import DELIVER_ALERT

logger = logging.getLogger(__name__)

# A delivery racing another for the same alert loses at a unique constraint and looks again.
_ATTEMPTS = 3


@dataclass(frozen=True)
class Taken:
    """What one delivery did, by alert: counts only (the door answers with them)."""

    opened: int = 0
    repeated: int = 0
    resolved: int = 0
    unchanged: int = 0


def take_alerts(
    binding: Binding,
    trigger: str,
    channel_id: str,
    notices: Sequence[AlertNotice],
    *,
    idempotency_key: str = "",
    now: datetime | None = None,
) -> Taken:
    """Takes a delivery's alerts, each in its own transaction; safe to call again with the same body."""
    now = now or timezone.now()
    counts = {"opened": 0, "repeated": 0, "resolved": 0, "unchanged": 0}
    delivery = uuid.uuid4().hex
    for notice in notices:
        occurrence = notice.occurrence or (
            f"idempotency:{idempotency_key}" if idempotency_key else f"delivery:{delivery}"
        )
        outcome = "unchanged"
        for attempt in range(_ATTEMPTS):
            try:
                outcome = _take(binding, trigger, channel_id, notice, occurrence, now)
                break
            except IntegrityError:
                if attempt == _ATTEMPTS - 1:
                    raise
        counts[outcome] += 1
    return Taken(**counts)


@transaction.atomic
def _take(
    binding: Binding, trigger: str, channel_id: str, notice: AlertNotice, occurrence: str, now: datetime
) -> str:
    key = {"binding": binding, "trigger": trigger, "fingerprint": notice.fingerprint}
    open_alert = Alert.objects.select_for_update().filter(**key, state=Alert.State.FIRING).first()
    if notice.status is AlertStatus.RESOLVED:
        if open_alert is None:
            return "unchanged"
        if notice.occurrence and not open_alert.occurrences.filter(key=notice.occurrence).exists():
            return "unchanged"  # the resolve of an earlier occurrence, arriving late
        resolved_at = notice.ends_at or now
        Alert.objects.filter(pk=open_alert.pk).update(state=Alert.State.RESOLVED, resolved_at=resolved_at)
        _owe(open_alert, "resolved", messages.resolved_note(resolved_at, open_alert.fires))
        logger.info("alert.resolved", extra={"alert_id": open_alert.pk, "binding": binding.name})
        return "resolved"
    if AlertOccurrence.objects.filter(**key, key=occurrence).exists():
        return "unchanged"
    if open_alert is not None:
        AlertOccurrence.objects.create(**key, key=occurrence, alert=open_alert)
        Alert.objects.filter(pk=open_alert.pk).update(fires=F("fires") + 1)
        fires = open_alert.fires + 1
        _owe(open_alert, f"fire-{fires}", messages.fired_again_note(fires, open_alert.first_fired_at))
        logger.info("alert.repeated", extra={"alert_id": open_alert.pk, "binding": binding.name})
        return "repeated"
    previous = Alert.objects.filter(**key, state=Alert.State.RESOLVED).order_by("-pk").first()
    alert = Alert.objects.create(
        **key,
        title=notice.title[:200],
        channel_id=channel_id,
        previous=previous,
        first_fired_at=notice.starts_at or now,
        message_text=messages.alert_message(notice),
        turn_text=messages.first_turn_text(notice),
    )
    AlertOccurrence.objects.create(**key, key=occurrence, alert=alert)
    AlertPost.objects.create(alert=alert, key=_message_key(alert), kind=AlertPost.Kind.MESSAGE, text="")
    enqueue_after_commit(DELIVER_ALERT, alert.pk)
    logger.info("alert.opened", extra={"alert_id": alert.pk, "binding": binding.name})
    return "opened"


def _message_key(alert: Alert) -> str:
    return f"alert-{alert.pk}"


def _owe(alert: Alert, name: str, text: str) -> None:
    AlertPost.objects.create(alert=alert, key=f"alert-{alert.pk}:{name}", kind=AlertPost.Kind.NOTE, text=text)
    enqueue_after_commit(DELIVER_ALERT, alert.pk)


# --- Posting -----------------------------------------------------------------------------------------


def _claim(alert_id: int, now: datetime) -> bool:
    until = now + timedelta(seconds=settings.SESSION_LEASE_SECONDS)
    claimed = (
        Alert.objects.filter(pk=alert_id)
        .filter(Q(posting_until=None) | Q(posting_until__lt=now))
        .update(posting_until=until)
    )
    return bool(claimed)


def owes_posts(alert_id: int) -> bool:
    return (
        AlertPost.objects.filter(alert_id=alert_id, state=AlertPost.State.INTENDED).exists()
        or Alert.objects.filter(pk=alert_id, session=None).exclude(root_ts="").exists()
    )


def deliver(alert_id: int) -> bool:
    """Makes the alert's owed posts, in order, and starts its thread on the posted message.

    One worker at a time (a claim that expires like a session's lease, so a killed worker's alert is
    taken up by beat's ``deliver-alerts``). False: another worker holds it; it looks again before
    it lets go, so nothing owed is left behind.
    """
    while _claim(alert_id, timezone.now()):
        try:
            _deliver(alert_id)
        finally:
            Alert.objects.filter(pk=alert_id).update(posting_until=None)
        if not owes_posts(alert_id):
            return True
    return False


def _deliver(alert_id: int) -> None:
    alert = Alert.objects.select_related("binding__connection", "previous").get(pk=alert_id)
    binding = alert.binding
    connection = binding.connection
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    outbox = AlertOutbox(alert.pk)
    if not alert.root_ts:
        text = alert.message_text
        previous = alert.previous
        if previous is not None and previous.root_ts:
            url = async_to_sync(workspace_url)(client)
            link = message_link(url, previous.channel_id, previous.root_ts)
            text = f"{text}\n<{link}|Previous thread>" if link else text
        alert.root_ts = async_to_sync(post_alert_once)(
            client, outbox, alert.channel_id, text, key=_message_key(alert)
        )
        Alert.objects.filter(pk=alert.pk).update(root_ts=alert.root_ts)
    if alert.session_id is None:
        turn = start_alert_thread(
            binding, alert.turn_text, channel_id=alert.channel_id, root_ts=alert.root_ts
        )
        Alert.objects.filter(pk=alert.pk).update(session=turn.session_id)
        logger.info("alert.thread_started", extra={"alert_id": alert.pk, "session_id": turn.session_id})
    owed = AlertPost.objects.filter(alert=alert, kind=AlertPost.Kind.NOTE, state=AlertPost.State.INTENDED)
    for post in owed.order_by("pk"):
        async_to_sync(post_alert_note_once)(
            client, outbox, alert.channel_id, alert.root_ts, post.text, key=post.key
        )


def alerts_owing_posts(now: datetime) -> list[int]:
    """Alerts with posts owed and nobody posting them (a worker died, or its task was lost)."""
    unclaimed = Q(posting_until=None) | Q(posting_until__lt=now)
    owing = Q(posts__state=AlertPost.State.INTENDED) | (Q(session=None) & ~Q(root_ts=""))
    return list(Alert.objects.filter(unclaimed).filter(owing).values_list("pk", flat=True).distinct())
