"""What the alerts app does with what a trigger delivers: its alerts sorted into threads.

``take_alerts`` (the door calls it) sorts a delivery's alerts into threads: an alertmanager
trigger's threads are per group (the notification's groupKey, with its receiver) unless its
``threadPer`` is ``alert``; a generic trigger's are per alert (its fingerprint). Each thread's alerts
are taken in one transaction. An occurrence (an alert's start) is recorded once, so a delivery
repeated changes nothing. A thread not open yet opens, owing its root message, unless its trigger
opened ``maxThreadsPerHour`` threads this hour: then it is held, a row listed by the hour's storm
thread, with no thread or agent turn of its own. In an open thread, an alert that joins, fires
again or resolves owes a note (a held thread's notes go to its storm thread); the last alert's
resolve closes the thread with the closing note. Nothing is posted here: what a thread owes is
recorded (owed.py), and delivery.py makes the posts.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from bindings.manifest import ThreadPer, TriggerSpec
from bindings.models import Binding

from . import messages, owed, storms
from .models import Alert, AlertMember, AlertOccurrence
from .payloads import AlertStatus, Notification, ReceivedAlert

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
    alerts: list[tuple[ReceivedAlert, str]]
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
    alerts: Sequence[ReceivedAlert],
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

    def occurrence(alert: ReceivedAlert) -> str:
        return alert.occurrence or (
            f"idempotency:{idempotency_key}" if idempotency_key else f"delivery:{delivery}"
        )

    if notification is not None and trigger.thread_per is ThreadPer.GROUP:
        key = group_thread_key(notification.receiver, notification.group_key)
        batches = [
            _Batch(
                key=key,
                kind=Alert.Kind.GROUP,
                # An occurrence is the group's: two routes grouping the same alert each take it.
                alerts=[(alert, f"{key}|{occurrence(alert)}") for alert in alerts],
                group_labels=notification.group_labels,
                truncated=notification.truncated,
                group_resolved=notification.resolved,
            )
        ]
    else:
        truncated = notification.truncated if notification is not None else 0
        batches = [
            _Batch(key=alert.fingerprint, kind=Alert.Kind.ALERT, alerts=[(alert, occurrence(alert))])
            for alert in alerts
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
            (alert, key)
            for alert, key in batch.alerts
            if alert.status is AlertStatus.FIRING and (alert.fingerprint, key) not in seen
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
    for alert, key in batch.alerts:
        member = members.get(alert.fingerprint)
        if alert.status is AlertStatus.RESOLVED:
            # Unchanged: an alert not firing here, or the late resolve of an earlier occurrence.
            if (
                member is None
                or member.state == AlertMember.State.RESOLVED
                or (alert.occurrence and member.occurrence != key)
            ):
                counts["unchanged"] += 1
                continue
            member.state, member.resolved_at = AlertMember.State.RESOLVED, alert.ends_at or now
            member.save(update_fields=["state", "resolved_at"])
            resolved.append(member)
            continue
        if (alert.fingerprint, key) in seen:
            counts["unchanged"] += 1
            continue
        seen.add((alert.fingerprint, key))
        AlertOccurrence.objects.create(**of_trigger, fingerprint=alert.fingerprint, key=key, alert=thread)
        if member is None:
            member = _member(thread, alert, key, batch.group_labels, now)
            members[alert.fingerprint] = member
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
        owed.owe_note(
            thread, f"truncated-{batch.truncated}", messages.truncated_note(batch.truncated), once=True
        )
    if thread.kind == Alert.Kind.ALERT:
        if again:
            owed.owe_note(
                thread, f"fire-{thread.fires}", messages.fired_again_note(thread.fires, thread.first_fired_at)
            )
    else:
        if joined:
            owed.owe_note(thread, "joined", messages.joined_note([m.name for m in joined]))
        if again:
            owed.owe_note(thread, "fired-again", messages.group_fired_again_note([m.name for m in again]))
    still_firing = sum(1 for m in members.values() if m.state == AlertMember.State.FIRING)
    if resolved and not still_firing:
        resolved_at = max(m.resolved_at or now for m in resolved)
        Alert.objects.filter(pk=thread.pk).update(state=Alert.State.RESOLVED, resolved_at=resolved_at)
        if thread.kind == Alert.Kind.ALERT:
            owed.owe_note(thread, "resolved", messages.resolved_note(resolved_at, thread.fires))
        else:
            owed.owe_note(thread, "resolved", messages.group_resolved_note(resolved_at, len(members)))
        logger.info("alert.resolved", extra={"alert_id": thread.pk, "binding": binding.name})
    elif resolved:
        owed.owe_note(
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
    fingerprints = {alert.fingerprint for alert, _ in batch.alerts}
    keys = {key for _, key in batch.alerts}
    return set(
        AlertOccurrence.objects.filter(**of_trigger, fingerprint__in=fingerprints, key__in=keys).values_list(
            "fingerprint", "key"
        )
    )


def _member(
    thread: Alert, alert: ReceivedAlert, key: str, group_labels: dict[str, str], now: datetime
) -> AlertMember:
    name = messages.member_name(alert, group_labels) if thread.kind == Alert.Kind.GROUP else alert.title
    return AlertMember.objects.create(
        thread=thread,
        fingerprint=alert.fingerprint,
        name=name[:200],
        occurrence=key,
        first_fired_at=alert.starts_at or now,
    )


def _open(
    binding: Binding,
    trigger: TriggerSpec,
    channel_id: str,
    batch: _Batch,
    firing: list[tuple[ReceivedAlert, str]],
    now: datetime,
) -> Alert:
    """Opens the batch's thread with its firing alerts, or holds it in the hour's storm thread."""
    of_trigger = {"binding": binding, "trigger": trigger.name}
    alerts = [alert for alert, _ in firing]
    if batch.kind == Alert.Kind.GROUP:
        title = messages.group_title(batch.group_labels, alerts)
        message = messages.group_message(title, alerts, batch.group_labels)
        turn_text = messages.first_group_turn_text(
            title, alerts, batch.group_labels, truncated=batch.truncated
        )
    else:
        title = alerts[0].title
        message = messages.alert_message(alerts[0])
        turn_text = messages.first_turn_text(alerts[0])
    storm = (
        None
        if storms.take_allowance(binding, trigger, now)
        else storms.storm_thread(binding, trigger, channel_id, now)
    )
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
        first_fired_at=min((n.starts_at or now for n in alerts), default=now),
        message_text=message,
        turn_text=turn_text,
    )
    for alert, key in firing:
        AlertOccurrence.objects.create(**of_trigger, fingerprint=alert.fingerprint, key=key, alert=thread)
        _member(thread, alert, key, batch.group_labels, now)
    if storm is not None:
        owed.owe_note(storm, f"held-{thread.pk}", messages.held_note(title, len(firing), storm.held.count()))
        logger.warning(
            "alert.held", extra={"alert_id": thread.pk, "storm_id": storm.pk, "binding": binding.name}
        )
    else:
        owed.owe_message(thread)
        logger.info("alert.opened", extra={"alert_id": thread.pk, "binding": binding.name})
    if batch.truncated:
        owed.owe_note(
            thread, f"truncated-{batch.truncated}", messages.truncated_note(batch.truncated), once=True
        )
    return thread
