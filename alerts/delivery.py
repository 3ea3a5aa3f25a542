"""How an alert thread's owed posts are made: its root message, its session started on it, then its
notes, each filed in the session for the next turn to carry (a note starts no turn). One worker at a
time, by a claim; a fault that may pass is tried again after a backoff, one that will not gives up."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from bindings.models import MissingSecret
from kourier.queue import enqueue_after_commit, enqueue_after_commit_in
from kourier.slack.alerts import (
    message_link,
    post_alert_note_once,
    post_alert_once,
    workspace_url,
)
from kourier.slack.clients import (
    SlackError,
    async_web_client,
    call_outcome,
    connection_workspace,
    error_name,
    may_pass,
    retry_after_of,
)
from sessions.outbox import ThreadOutbox
from sessions.services import file_system_note, start_alert_thread

from .models import Alert, AlertPost
from .owed import message_key
from .task_names import DELIVER_ALERT

logger = logging.getLogger(__name__)

# After a transient failure delivery waits this long, doubled for each failure in a row, at most the cap.
DELIVERY_BACKOFF = timedelta(seconds=30)
DELIVERY_BACKOFF_CAP = timedelta(hours=1)


def delivery_backoff(failures: int) -> timedelta:
    return min(DELIVERY_BACKOFF_CAP, DELIVERY_BACKOFF * 2 ** max(0, failures - 1))


def _deliverable(now: datetime) -> Q:
    """Neither given up (a permanent failure) nor waiting out the backoff of a transient one."""
    return Q(delivery_failed=False) & (Q(next_delivery_at=None) | Q(next_delivery_at__lte=now))


def _claim(alert_id: int, now: datetime) -> bool:
    until = now + timedelta(seconds=settings.SESSION_LEASE_SECONDS)
    claimed = (
        Alert.objects.filter(_deliverable(now), pk=alert_id)
        .filter(Q(posting_until=None) | Q(posting_until__lt=now))
        .update(posting_until=until)
    )
    return bool(claimed)


# A thread whose root message is posted and whose session was never started owes its start; once
# started, never again (its session, deleted at the end of its lifetime, takes the alert with it).
_OWES_ITS_START = Q(thread_started_at=None, storm=None) & ~Q(root_ts="") & ~Q(kind=Alert.Kind.STORM)


def owes_posts(alert_id: int) -> bool:
    return (
        AlertPost.objects.filter(alert_id=alert_id, delivered_at=None).exists()
        or Alert.objects.filter(_OWES_ITS_START, pk=alert_id).exists()
    )


def deliver(alert_id: int) -> bool:
    """Makes the alert's owed posts, in order, and starts its thread on the posted message.

    One worker at a time (a claim that expires like a session's lease, so a killed worker's alert is
    taken up by beat's ``deliver-alerts``). False: another worker holds it; it looks again before
    it lets go, so nothing owed is left behind.

    A Slack refusal that will not pass (``channel_not_found``, ``invalid_auth``, ...) or a bot token
    that is not set gives up: the alert is marked failed with why, logged once at ERROR, and no sweep
    tries again. A transient fault (a rate limit, Slack's 5xx, a timeout) is tried again by the sweep
    after ``delivery_backoff``. Either way the caller gets False and nothing is raised. An alert
    given up on or waiting out its backoff is not claimed (False).
    """
    while _claim(alert_id, timezone.now()):
        try:
            _deliver(alert_id)
        except (SlackError, MissingSecret) as exc:
            _delivery_failed(alert_id, exc, timezone.now())
            return False
        else:
            Alert.objects.filter(pk=alert_id).exclude(delivery_failures=0, next_delivery_at=None).update(
                delivery_failures=0, next_delivery_at=None
            )
        finally:
            Alert.objects.filter(pk=alert_id).update(posting_until=None)
        if not owes_posts(alert_id):
            return True
    return False


def delivery_failure_reason(exc: Exception) -> str:
    """What the admin and the log say of a failed delivery: Slack's error, or the fault's kind."""
    if isinstance(exc, MissingSecret):
        return f"{exc.path}: {exc.variable} is not set"
    return error_name(exc) or call_outcome(exc)


def _delivery_failed(alert_id: int, exc: Exception, now: datetime) -> None:
    """Records why delivery failed; the caller holds the alert's claim, so the count is its own."""
    alert = Alert.objects.select_related("binding").get(pk=alert_id)
    reason = delivery_failure_reason(exc)[:100]
    log = {"alert_id": alert_id, "binding": alert.binding.name, "error": reason}
    if isinstance(exc, MissingSecret) or not may_pass(exc):
        Alert.objects.filter(pk=alert_id).update(
            delivery_failed=True,
            next_delivery_at=None,
            last_delivery_error=reason,
            last_delivery_failed_at=now,
        )
        logger.error("alert.delivery_failed", extra=log)
        return
    # Slack pacing the workspace is no fault that grows: wait what it asks (Retry-After), then go on.
    waited = retry_after_of(exc) if isinstance(exc, SlackError) else None
    failures = alert.delivery_failures + (0 if waited is not None else 1)
    backoff = timedelta(seconds=waited) if waited is not None else delivery_backoff(failures)
    Alert.objects.filter(pk=alert_id).update(
        delivery_failures=failures,
        next_delivery_at=now + backoff,
        last_delivery_error=reason,
        last_delivery_failed_at=now,
    )
    logger.warning(
        "alert.delivery_deferred",
        extra={**log, "failures": failures, "retry_in_seconds": int(backoff.total_seconds())},
    )
    # Tried again when its wait is over (a second past it, so the claim finds it due); beat's
    # deliver-alerts still finds it should this message be lost.
    enqueue_after_commit_in(backoff.total_seconds() + 1, DELIVER_ALERT, alert_id)


def deliver_again(alert_ids: Sequence[int]) -> int:
    """Clears the failure of alerts given up on (the operator fixed the channel or the token) and
    delivers them again after commit; how many there were."""
    failed = Alert.objects.filter(pk__in=alert_ids).filter(
        Q(delivery_failed=True) | ~Q(next_delivery_at=None)
    )
    again = list(failed.values_list("pk", flat=True))
    Alert.objects.filter(pk__in=again).update(
        delivery_failed=False, delivery_failures=0, next_delivery_at=None
    )
    for alert_id in again:
        enqueue_after_commit(DELIVER_ALERT, alert_id)
    return len(again)


def _deliver(alert_id: int) -> None:
    alert = Alert.objects.select_related("binding__connection", "previous").get(pk=alert_id)
    binding = alert.binding
    connection = binding.connection
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    # Each post goes through the outbox (a PostIntent by the post's key, sessions/outbox.py): a
    # worker that died after Slack took a post, before its record, left it to be found, not repeated.
    if not alert.root_ts:
        text = alert.message_text
        previous = alert.previous
        if previous is not None and previous.root_ts:
            url = async_to_sync(workspace_url)(client)
            link = message_link(url, previous.channel_id, previous.root_ts)
            text = f"{text}\n<{link}|Previous thread>" if link else text
        alert.root_ts = async_to_sync(post_alert_once)(
            client, ThreadOutbox(None), alert.channel_id, text, key=message_key(alert)
        )
        with transaction.atomic():
            Alert.objects.filter(pk=alert.pk).update(root_ts=alert.root_ts)
            AlertPost.objects.filter(alert=alert, kind=AlertPost.Kind.MESSAGE).update(
                delivered_at=timezone.now()
            )
    if alert.opens_session and alert.thread_started_at is None:
        turn = start_alert_thread(
            binding,
            alert.turn_text,
            channel_id=alert.channel_id,
            root_ts=alert.root_ts,
            root_key=message_key(alert),
        )
        Alert.objects.filter(pk=alert.pk).update(session=turn.session_id, thread_started_at=timezone.now())
        alert.session_id = turn.session_id
        logger.info("alert.thread_started", extra={"alert_id": alert.pk, "session_id": turn.session_id})
    owed = AlertPost.objects.filter(alert=alert, kind=AlertPost.Kind.NOTE, delivered_at=None)
    for post in owed.order_by("pk"):
        ts = async_to_sync(post_alert_note_once)(
            client, ThreadOutbox(alert.session_id), alert.channel_id, alert.root_ts, post.text, key=post.key
        )
        # Filed and marked delivered together: a worker that dies between the two files it once.
        with transaction.atomic():
            if alert.session_id is not None:
                # The next turn carries it: a note tells the agent without starting a turn of its own.
                file_system_note(alert.session_id, message_ts=ts, text=post.text)
            AlertPost.objects.filter(pk=post.pk).update(delivered_at=timezone.now())


def alerts_owing_posts(now: datetime) -> list[int]:
    """Alerts with posts owed and nobody posting them (a worker died, its task was lost, or a transient
    failure's backoff is over); not those given up on."""
    unclaimed = Q(posting_until=None) | Q(posting_until__lt=now)
    owed_posts = AlertPost.objects.filter(alert=OuterRef("pk"), delivered_at=None)
    owing = Q(Exists(owed_posts)) | _OWES_ITS_START
    return list(
        Alert.objects.filter(unclaimed).filter(_deliverable(now)).filter(owing).values_list("pk", flat=True)
    )
