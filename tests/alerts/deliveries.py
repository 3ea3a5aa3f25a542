"""Alerts as a trigger delivers them (Alertmanager's pods crash-looping in one group), taken the way
the door takes them, for the alerts app's tests."""

from datetime import UTC, datetime

from alerts import services
from alerts.models import AlertPost
from alerts.payloads import AlertStatus, Notification, ReceivedAlert
from bindings.manifest import ThreadPer, TriggerKind, TriggerSpec
from simulator import defaults

NOW = datetime(2026, 5, 1, 10, 17, tzinfo=UTC)
START = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
GROUP_LABELS = {"alertname": "PodCrashLooping", "namespace": "shop"}
PROMETHEUS = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T")
PER_ALERT = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", thread_per=ThreadPer.ALERT)


def pod(name, *, status=AlertStatus.FIRING, starts_at=START, namespace="shop"):
    return ReceivedAlert(
        fingerprint=f"fp-{name}",
        status=status,
        title="PodCrashLooping",
        text="A pod restarts over and over",
        labels={"alertname": "PodCrashLooping", "namespace": namespace, "pod": name, "severity": "warning"},
        starts_at=starts_at,
        ends_at=NOW if status is AlertStatus.RESOLVED else None,
    )


def notification(
    *alerts, group_key='{}:{alertname="PodCrashLooping", namespace="shop"}', truncated=0, resolved=False
):
    return Notification(
        alerts=list(alerts),
        group_key=group_key,
        receiver="kourier",
        group_labels=GROUP_LABELS,
        truncated=truncated,
        resolved=resolved,
    )


def take(binding, *alerts, trigger=PROMETHEUS, now=NOW, **group):
    sent = notification(*alerts, **group)
    return services.take_alerts(
        binding, trigger, defaults.CHANNEL_ID, sent.alerts, notification=sent, now=now
    )


def notes(thread):
    return list(thread.posts.filter(kind=AlertPost.Kind.NOTE).order_by("pk").values_list("text", flat=True))
