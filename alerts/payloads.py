"""What an alert source sends, read into one shape: Alertmanager's webhook (version 4) and the generic
JSON shape (docs/manifests.md). Pure: no I/O.

An alert is known by its fingerprint (generic: its ``id`` or ``fingerprint``), one occurrence of it by
its ``startsAt``. A body that cannot be read raises ``Unreadable`` with the reason, for the 400.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

ALERTMANAGER_VERSION = "4"
MAX_ALERTS = 1000
MAX_FIELD_LENGTH = 4000
MAX_GROUP_KEY_LENGTH = 1000
# Alertmanager writes endsAt as Go's zero time while an alert fires.
_ZERO_TIME_YEAR = 1
_FRACTION = re.compile(r"(\.\d{6})\d+")


class AlertStatus(StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class Unreadable(ValueError):
    """The body is not what the trigger's kind sends; the message says why, for the caller."""


@dataclass(frozen=True)
class ReceivedAlert:
    """One alert, as one delivery tells it."""

    fingerprint: str
    status: AlertStatus
    title: str
    text: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    link: str = ""
    starts_at: datetime | None = None  # None (generic only): each delivery is a new occurrence
    ends_at: datetime | None = None

    @property
    def severity(self) -> str:
        return self.labels.get("severity", "")

    @property
    def occurrence(self) -> str | None:
        """The occurrence's key: its start, to the microsecond, in UTC."""
        return self.starts_at.astimezone(UTC).isoformat() if self.starts_at is not None else None


@dataclass(frozen=True)
class Notification:
    """One Alertmanager notification: a group's alerts, as its receiver was sent them."""

    alerts: list[ReceivedAlert]
    group_key: str = ""  # empty when the payload had none (refused where threads are per group)
    receiver: str = ""
    group_labels: dict[str, str] = field(default_factory=dict)
    truncated: int = 0  # alerts Alertmanager left out of this notification (its max_alerts)
    resolved: bool = False  # the notification's status: every alert of the group resolved


def read_alertmanager(body: bytes) -> list[ReceivedAlert]:
    """Alertmanager's webhook payload, version 4, grouped alerts included, in the order sent."""
    return read_notification(body).alerts


def read_notification(body: bytes) -> Notification:
    """Alertmanager's webhook payload, version 4: its alerts and what names their group."""
    data = _json_object(body)
    version = data.get("version")
    if version != ALERTMANAGER_VERSION:
        raise Unreadable(f'version must be "{ALERTMANAGER_VERSION}" (got {_show(version)})')
    alerts = data.get("alerts")
    if not isinstance(alerts, list):
        raise Unreadable(f"alerts must be a list (got {_show(alerts)})")
    if len(alerts) > MAX_ALERTS:
        raise Unreadable(f"alerts: at most {MAX_ALERTS} are read (got {len(alerts)})")
    group_key = data.get("groupKey")
    if group_key is not None and not isinstance(group_key, str):
        raise Unreadable(f"groupKey must be a string (got {_show(group_key)})")
    if group_key is not None and len(group_key) > MAX_GROUP_KEY_LENGTH:
        raise Unreadable(f"groupKey must be at most {MAX_GROUP_KEY_LENGTH} characters (got {len(group_key)})")
    truncated = data.get("truncatedAlerts", 0)
    if truncated is None:
        truncated = 0
    if not isinstance(truncated, int) or isinstance(truncated, bool) or truncated < 0:
        raise Unreadable(f"truncatedAlerts must be a count of alerts (got {_show(truncated)})")
    return Notification(
        alerts=[_alertmanager_alert(alert, f"alerts[{i}]") for i, alert in enumerate(alerts)],
        group_key=group_key or "",
        receiver=_text(data.get("receiver"), "receiver", required=False),
        group_labels=_strings(data.get("groupLabels"), "groupLabels", required=False),
        truncated=truncated,
        resolved=data.get("status") == AlertStatus.RESOLVED.value,
    )


def check_group(notification: Notification) -> None:
    """For threads per group: the notification names its group, and every alert in it belongs there
    (carries each of the group's labels with the group's value). Raises ``Unreadable`` otherwise."""
    if not notification.group_key.strip():
        raise Unreadable("groupKey is required: alerts are grouped by it (or set threadPer: alert)")
    for i, alert in enumerate(notification.alerts):
        for label, value in notification.group_labels.items():
            if alert.labels.get(label) != value:
                raise Unreadable(
                    f"alerts[{i}].labels.{label} must be the group's {_show(value)} "
                    f"(got {_show(alert.labels.get(label))})"
                )


def _alertmanager_alert(alert: Any, path: str) -> ReceivedAlert:
    if not isinstance(alert, dict):
        raise Unreadable(f"{path} must be an object (got {_show(alert)})")
    labels = _strings(alert.get("labels"), f"{path}.labels", required=True)
    annotations = _strings(alert.get("annotations"), f"{path}.annotations", required=False)
    fingerprint = _text(alert.get("fingerprint"), f"{path}.fingerprint", required=False)
    starts_at = _time(alert.get("startsAt"), f"{path}.startsAt", required=True)
    return ReceivedAlert(
        fingerprint=fingerprint or _labels_fingerprint(labels),
        status=_status(alert.get("status"), f"{path}.status", required=True),
        title=labels.get("alertname", "") or "alert",
        text=annotations.get("summary", "") or annotations.get("description", ""),
        labels=labels,
        annotations=annotations,
        link=_text(alert.get("generatorURL"), f"{path}.generatorURL", required=False),
        starts_at=starts_at,
        ends_at=_time(alert.get("endsAt"), f"{path}.endsAt", required=False),
    )


GENERIC_FIELDS = ("id", "fingerprint", "status", "title", "text", "labels", "link", "startsAt", "endsAt")


def read_generic(body: bytes) -> list[ReceivedAlert]:
    """The generic shape: one alert per delivery (docs/manifests.md)."""
    data = _json_object(body)
    unknown = sorted(set(data) - set(GENERIC_FIELDS))
    if unknown:
        raise Unreadable(f"unknown field {unknown[0]} (expected: {', '.join(GENERIC_FIELDS)})")
    key = _text(data.get("id"), "id", required=False) or _text(
        data.get("fingerprint"), "fingerprint", required=False
    )
    if not key:
        raise Unreadable("id (or fingerprint) is required")
    title = _text(data.get("title"), "title", required=True)
    return [
        ReceivedAlert(
            fingerprint=key,
            status=_status(data.get("status"), "status", required=False),
            title=title,
            text=_text(data.get("text"), "text", required=False),
            labels=_strings(data.get("labels"), "labels", required=False),
            link=_text(data.get("link"), "link", required=False),
            starts_at=_time(data.get("startsAt"), "startsAt", required=False),
            ends_at=_time(data.get("endsAt"), "endsAt", required=False),
        )
    ]


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise Unreadable("the body is not UTF-8") from None
    except (ValueError, RecursionError):
        raise Unreadable("the body is not JSON") from None
    if not isinstance(data, dict):
        raise Unreadable(f"the body must be a JSON object (got {_show(data)})")
    return data


def _status(value: Any, path: str, *, required: bool) -> AlertStatus:
    if value is None and not required:
        return AlertStatus.FIRING
    if not isinstance(value, str) or value not in set(AlertStatus):
        raise Unreadable(f"{path} must be firing or resolved (got {_show(value)})")
    return AlertStatus(value)


def _text(value: Any, path: str, *, required: bool) -> str:
    if value is None or value == "":
        if required:
            raise Unreadable(f"{path} is required")
        return ""
    if not isinstance(value, str):
        raise Unreadable(f"{path} must be a string (got {_show(value)})")
    if len(value) > MAX_FIELD_LENGTH:
        raise Unreadable(f"{path} must be at most {MAX_FIELD_LENGTH} characters")
    return value


def _strings(value: Any, path: str, *, required: bool) -> dict[str, str]:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise Unreadable(f"{path} must be an object of strings (got {_show(value)})")
    for key, item in value.items():
        _text(item, f"{path}.{key}", required=False)
    return dict(sorted(value.items()))


def _time(value: Any, path: str, *, required: bool) -> datetime | None:
    if value is None or value == "":
        if required:
            raise Unreadable(f"{path} is required")
        return None
    if not isinstance(value, str):
        raise Unreadable(f"{path} must be an RFC 3339 time (got {_show(value)})")
    try:
        parsed = datetime.fromisoformat(_FRACTION.sub(r"\1", value))
    except ValueError:
        raise Unreadable(f"{path} must be an RFC 3339 time (got {_show(value)})") from None
    if parsed.tzinfo is None:
        raise Unreadable(f"{path} must name its time zone (got {_show(value)})")
    if parsed.year == _ZERO_TIME_YEAR:
        return None
    return parsed


def _labels_fingerprint(labels: dict[str, str]) -> str:
    """An alert with no fingerprint is known by its labels, as Alertmanager itself knows it."""
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return "a list" if isinstance(value, list) else "an object"
