"""What the alerts app does with what a trigger delivers, and how an alert thread's posts are made.

``take_alerts`` (the door calls it) sorts a delivery's alerts into threads: an alertmanager
trigger's threads are per group (the notification's groupKey, with its receiver) unless its
``threadPer`` is ``alert``; a generic trigger's are per alert (its fingerprint). Each thread's alerts
are taken in one transaction. An occurrence (an alert's start) is recorded once, so a delivery
repeated changes nothing. A thread not open yet opens, owing its root message, unless its trigger
opened ``maxThreadsPerHour`` threads this hour: then it is held, a row listed by the hour's storm
thread, with no thread or agent turn of its own. In an open thread, an alert that joins, fires
again or resolves owes a note (a held thread's notes go to its storm thread); the last alert's
resolve closes the thread with the closing note. Nothing is posted there: the posts are recorded
and ``deliver`` (a Celery task, after commit) makes them, through the outbox, starts the thread's
session on the confirmed root message, and files each note in the session, so the next turn
carries it: a note starts no turn.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from bindings.manifest import ThreadPer, TriggerSpec
from bindings.models import Binding, MissingSecret
from kourier.db import insert_unless_taken
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
from sessions.services import file_system_note, start_alert_thread

from . import messages
from .models import Alert, AlertMember, AlertOccurrence, AlertPost, ThreadAllowance
from .outbox import AlertOutbox
from .payloads import AlertNotice, AlertStatus, Notification
from .task_names import DELIVER_ALERT

logger = logging.getLogger(__name__)

# A delivery racing another for the same thread loses at a unique constraint and looks again.
_ATTEMPTS = 3


@dataclass(frozen=True)
class Taken:
    """What one delivery did, counted by alert (the door answers with them)."""

    opened: int = 0  # alerts of a thread this delivery opened
    held: int = 0  # alerts of a thread held back past the cap (listed in the storm thread)
    joined: int = 0  # alerts that joined an open group's thread
    repeated: int = 0  # new occurrences of alerts already in an open thread
    resolved: int = 0
    unchanged: int = 0  # seen before, or the resolve of what is not open


@dataclass(frozen=True)
class _Batch:
    """The alerts of one delivery that go to one thread, each with its occurrence's key."""

    key: str
    kind: Alert.Kind
    alerts: list[tuple[AlertNotice, str]]
    group_labels: dict[str, str] = field(default_factory=dict)
    truncated: int = 0
    group_resolved: bool = False  # Alertmanager says the whole group resolved


def group_thread_key(receiver: str, group_key: str) -> str:
    """A group's thread key: Alertmanager's groupKey with the receiver it was routed to (two routes
    can group the same alerts), hashed to fit the column, whatever the groupKey's length."""
    digest = hashlib.sha256(f"{receiver}\n{group_key}".encode()).hexdigest()
    return f"group:{digest[:40]}"


def take_alerts(
    binding: Binding,
    trigger: TriggerSpec,
    channel_id: str,
    notices: Sequence[AlertNotice],
    *,
    notification: Notification | None = None,
    idempotency_key: str = "",
    now: datetime | None = None,
) -> Taken:
    """Takes a delivery's alerts, a thread's worth at a time; safe to call again with the same body.

    ``notification`` is the Alertmanager notification they came in (its group), for threads per
    group; without it, or with ``threadPer: alert``, each alert is its own thread."""
    now = now or timezone.now()
    delivery = uuid.uuid4().hex

    def occurrence(notice: AlertNotice) -> str:
        return notice.occurrence or (
            f"idempotency:{idempotency_key}" if idempotency_key else f"delivery:{delivery}"
        )

    if notification is not None and trigger.thread_per is ThreadPer.GROUP:
        key = group_thread_key(notification.receiver, notification.group_key)
        batches = [
            _Batch(
                key=key,
                kind=Alert.Kind.GROUP,
                # An occurrence is the group's: two routes grouping the same alert each take it.
                alerts=[(notice, f"{key}|{occurrence(notice)}") for notice in notices],
                group_labels=notification.group_labels,
                truncated=notification.truncated,
                group_resolved=notification.resolved,
            )
        ]
    else:
        truncated = notification.truncated if notification is not None else 0
        batches = [
            _Batch(key=notice.fingerprint, kind=Alert.Kind.ALERT, alerts=[(notice, occurrence(notice))])
            for notice in notices
        ]
        if truncated and batches:  # said once, in the first alert's thread
            batches[0] = _Batch(batches[0].key, batches[0].kind, batches[0].alerts, truncated=truncated)
    counts: Counter[str] = Counter()
    for batch in batches:
        for attempt in range(_ATTEMPTS):
            try:
                counts.update(_take(binding, trigger, channel_id, batch, now))
                break
            except IntegrityError:
                if attempt == _ATTEMPTS - 1:
                    raise
    return Taken(**counts)


@transaction.atomic
def _take(
    binding: Binding, trigger: TriggerSpec, channel_id: str, batch: _Batch, now: datetime
) -> Counter[str]:
    of_trigger = {"binding": binding, "trigger": trigger.name}
    counts: Counter[str] = Counter()
    thread = (
        Alert.objects.select_for_update()
        .filter(**of_trigger, key=batch.key, state=Alert.State.FIRING)
        .first()
    )
    if thread is None:
        seen = _seen(of_trigger, batch)
        new = [
            (notice, key)
            for notice, key in batch.alerts
            if notice.status is AlertStatus.FIRING and (notice.fingerprint, key) not in seen
        ]
        if not new:
            counts["unchanged"] += len(batch.alerts)
            return counts
        opened = _open(binding, trigger, channel_id, batch, new, now)
        counts["held" if opened.storm_id else "opened"] += len(new)
        counts["unchanged"] += len(batch.alerts) - len(new)
        return counts
    members = {member.fingerprint: member for member in thread.members.all()}
    seen = _seen(of_trigger, batch)
    joined: list[AlertMember] = []
    again: list[AlertMember] = []
    resolved: list[AlertMember] = []
    for notice, key in batch.alerts:
        member = members.get(notice.fingerprint)
        if notice.status is AlertStatus.RESOLVED:
            # Unchanged: an alert not firing here, or the late resolve of an earlier occurrence.
            if (
                member is None
                or member.state == AlertMember.State.RESOLVED
                or (notice.occurrence and member.occurrence != key)
            ):
                counts["unchanged"] += 1
                continue
            member.state, member.resolved_at = AlertMember.State.RESOLVED, notice.ends_at or now
            member.save(update_fields=["state", "resolved_at"])
            resolved.append(member)
            continue
        if (notice.fingerprint, key) in seen:
            counts["unchanged"] += 1
            continue
        seen.add((notice.fingerprint, key))
        AlertOccurrence.objects.create(**of_trigger, fingerprint=notice.fingerprint, key=key, alert=thread)
        if member is None:
            member = _member(thread, notice, key, batch.group_labels, now)
            members[notice.fingerprint] = member
            joined.append(member)
            continue
        member.state, member.occurrence, member.resolved_at = AlertMember.State.FIRING, key, None
        member.save(update_fields=["state", "occurrence", "resolved_at"])
        again.append(member)
    if batch.group_resolved and not batch.truncated:
        # The whole group resolved, and the notification lists all of it: an alert it no longer
        # names (silenced, or its resolve was sent while Kourier could not take it) resolved too.
        for member in members.values():
            if member.state == AlertMember.State.FIRING:
                member.state, member.resolved_at = AlertMember.State.RESOLVED, now
                member.save(update_fields=["state", "resolved_at"])
                resolved.append(member)
    counts.update(joined=len(joined), repeated=len(again), resolved=len(resolved))
    if joined or again:
        Alert.objects.filter(pk=thread.pk).update(fires=F("fires") + len(joined) + len(again))
        thread.fires += len(joined) + len(again)
    if batch.truncated:  # said once per count: re-sends of the notification carry it again
        _owe(thread, f"truncated-{batch.truncated}", messages.truncated_note(batch.truncated), once=True)
    if thread.kind == Alert.Kind.ALERT:
        if again:
            _owe(
                thread, f"fire-{thread.fires}", messages.fired_again_note(thread.fires, thread.first_fired_at)
            )
    else:
        if joined:
            _owe(thread, "joined", messages.joined_note([m.name for m in joined]))
        if again:
            _owe(thread, "fired-again", messages.group_fired_again_note([m.name for m in again]))
    still_firing = sum(1 for m in members.values() if m.state == AlertMember.State.FIRING)
    if resolved and not still_firing:
        resolved_at = max(m.resolved_at or now for m in resolved)
        Alert.objects.filter(pk=thread.pk).update(state=Alert.State.RESOLVED, resolved_at=resolved_at)
        if thread.kind == Alert.Kind.ALERT:
            _owe(thread, "resolved", messages.resolved_note(resolved_at, thread.fires))
        else:
            _owe(thread, "resolved", messages.group_resolved_note(resolved_at, len(members)))
        logger.info("alert.resolved", extra={"alert_id": thread.pk, "binding": binding.name})
    elif resolved:
        _owe(
            thread, "partly-resolved", messages.partly_resolved_note([m.name for m in resolved], still_firing)
        )
    if joined or again or resolved:
        logger.info(
            "alert.noted",
            extra={
                "alert_id": thread.pk,
                "binding": binding.name,
                "joined": len(joined),
                "repeated": len(again),
                "resolved": len(resolved),
            },
        )
    return counts


def _seen(of_trigger: dict[str, object], batch: _Batch) -> set[tuple[str, str]]:
    """The batch's occurrences already recorded, as (fingerprint, key)."""
    fingerprints = {notice.fingerprint for notice, _ in batch.alerts}
    keys = {key for _, key in batch.alerts}
    return set(
        AlertOccurrence.objects.filter(**of_trigger, fingerprint__in=fingerprints, key__in=keys).values_list(
            "fingerprint", "key"
        )
    )


def _member(
    thread: Alert, notice: AlertNotice, key: str, group_labels: dict[str, str], now: datetime
) -> AlertMember:
    name = messages.member_name(notice, group_labels) if thread.kind == Alert.Kind.GROUP else notice.title
    return AlertMember.objects.create(
        thread=thread,
        fingerprint=notice.fingerprint,
        name=name[:200],
        occurrence=key,
        first_fired_at=notice.starts_at or now,
    )


def _open(
    binding: Binding,
    trigger: TriggerSpec,
    channel_id: str,
    batch: _Batch,
    firing: list[tuple[AlertNotice, str]],
    now: datetime,
) -> Alert:
    """Opens the batch's thread with its firing alerts, or holds it in the hour's storm thread."""
    of_trigger = {"binding": binding, "trigger": trigger.name}
    notices = [notice for notice, _ in firing]
    if batch.kind == Alert.Kind.GROUP:
        title = messages.group_title(batch.group_labels, notices)
        message = messages.group_message(title, notices, batch.group_labels)
        turn_text = messages.first_group_turn_text(
            title, notices, batch.group_labels, truncated=batch.truncated
        )
    else:
        title = notices[0].title
        message = messages.alert_message(notices[0])
        turn_text = messages.first_turn_text(notices[0])
    storm = None if _allowed(binding, trigger, now) else _storm_thread(binding, trigger, channel_id, now)
    thread = Alert.objects.create(
        **of_trigger,
        key=batch.key,
        kind=batch.kind,
        title=title[:200],
        channel_id=channel_id,
        previous=Alert.objects.filter(**of_trigger, key=batch.key, state=Alert.State.RESOLVED)
        .order_by("-pk")
        .first(),
        storm=storm,
        fires=len(firing),
        first_fired_at=min((n.starts_at or now for n in notices), default=now),
        message_text=message,
        turn_text=turn_text,
    )
    for notice, key in firing:
        AlertOccurrence.objects.create(**of_trigger, fingerprint=notice.fingerprint, key=key, alert=thread)
        _member(thread, notice, key, batch.group_labels, now)
    if storm is not None:
        _owe(storm, f"held-{thread.pk}", messages.held_note(title, len(firing), storm.held.count()))
        logger.warning(
            "alert.held", extra={"alert_id": thread.pk, "storm_id": storm.pk, "binding": binding.name}
        )
    else:
        AlertPost.objects.create(alert=thread, key=_message_key(thread), kind=AlertPost.Kind.MESSAGE, text="")
        enqueue_after_commit(DELIVER_ALERT, thread.pk)
        logger.info("alert.opened", extra={"alert_id": thread.pk, "binding": binding.name})
    if batch.truncated:
        _owe(thread, f"truncated-{batch.truncated}", messages.truncated_note(batch.truncated), once=True)
    return thread


def _hour(now: datetime) -> datetime:
    return now.replace(minute=0, second=0, microsecond=0)


def _allowed(binding: Binding, trigger: TriggerSpec, now: datetime) -> bool:
    """Takes one of the trigger's threads for this hour, if one is left: a conditional update, so of
    two deliveries at once only one takes the last."""
    allowance = ThreadAllowance(binding=binding, trigger=trigger.name, hour=_hour(now))
    insert_unless_taken(allowance, ("binding", "trigger", "hour"))
    taken = ThreadAllowance.objects.filter(
        binding=binding, trigger=trigger.name, hour=_hour(now), opened__lt=trigger.max_threads_per_hour
    ).update(opened=F("opened") + 1)
    return bool(taken)


def _storm_thread(binding: Binding, trigger: TriggerSpec, channel_id: str, now: datetime) -> Alert:
    """The trigger's storm thread for this hour, opened (owing its root message) by the first group held."""
    of_trigger = {"binding": binding, "trigger": trigger.name, "key": f"storm:{_hour(now):%Y-%m-%dT%H}"}
    storm = Alert.objects.select_for_update().filter(**of_trigger, state=Alert.State.FIRING).first()
    if storm is not None:
        return storm
    storm = Alert.objects.create(
        **of_trigger,
        kind=Alert.Kind.STORM,
        title="Alert storm",
        channel_id=channel_id,
        first_fired_at=now,
        message_text=messages.storm_message(trigger.name, trigger.max_threads_per_hour),
    )
    AlertPost.objects.create(alert=storm, key=_message_key(storm), kind=AlertPost.Kind.MESSAGE, text="")
    enqueue_after_commit(DELIVER_ALERT, storm.pk)
    logger.warning("alert.storm", extra={"alert_id": storm.pk, "binding": binding.name})
    return storm


def _message_key(alert: Alert) -> str:
    return f"alert-{alert.pk}"


def _owe(thread: Alert, name: str, text: str, *, once: bool = False) -> None:
    """Owes a note in the thread (a held thread's: in its storm thread, naming it). ``once``: a note
    that a re-send of the same notification must not owe again (its name says what it is about)."""
    if thread.storm_id is not None:
        target_id = thread.storm_id
        text = messages.held_group_note(thread.title, text)
    else:
        target_id = thread.pk
    # Unique per note: the thread's row lock orders its notes, and a storm thread's come from many.
    key = f"alert-{target_id}:{thread.pk}-{name}" + ("" if once else f"-{uuid.uuid4().hex[:12]}")
    if once and AlertPost.objects.filter(key=key).exists():
        return
    AlertPost.objects.create(alert_id=target_id, key=key, kind=AlertPost.Kind.NOTE, text=text)
    enqueue_after_commit(DELIVER_ALERT, target_id)


# --- Posting -----------------------------------------------------------------------------------------

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


# A thread whose root message is posted and whose session was never started owes its start. Once
# started, never again: a session deleted at the end of its lifetime leaves a thread Agent Kourier
# no longer owns, and a months-old alert is not investigated again.
_OWES_ITS_START = Q(thread_started_at=None, storm=None) & ~Q(root_ts="") & ~Q(kind=Alert.Kind.STORM)


def owes_posts(alert_id: int) -> bool:
    return (
        AlertPost.objects.filter(alert_id=alert_id, state=AlertPost.State.INTENDED).exists()
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
    if alert.opens_session and alert.thread_started_at is None:
        turn = start_alert_thread(
            binding, alert.turn_text, channel_id=alert.channel_id, root_ts=alert.root_ts
        )
        Alert.objects.filter(pk=alert.pk).update(session=turn.session_id, thread_started_at=timezone.now())
        alert.session_id = turn.session_id
        logger.info("alert.thread_started", extra={"alert_id": alert.pk, "session_id": turn.session_id})
    owed = AlertPost.objects.filter(alert=alert, kind=AlertPost.Kind.NOTE, state=AlertPost.State.INTENDED)
    for post in owed.order_by("pk"):
        ts = async_to_sync(post_alert_note_once)(
            client, outbox, alert.channel_id, alert.root_ts, post.text, key=post.key
        )
        if alert.session_id is not None:
            # The next turn carries it: a note tells the agent without starting a turn of its own.
            file_system_note(alert.session_id, message_ts=ts, text=post.text)


def alerts_owing_posts(now: datetime) -> list[int]:
    """Alerts with posts owed and nobody posting them (a worker died, its task was lost, or a transient
    failure's backoff is over); not those given up on."""
    unclaimed = Q(posting_until=None) | Q(posting_until__lt=now)
    owing = Q(posts__state=AlertPost.State.INTENDED) | _OWES_ITS_START
    return list(
        Alert.objects.filter(unclaimed)
        .filter(_deliverable(now))
        .filter(owing)
        .values_list("pk", flat=True)
        .distinct()
    )
