"""Reading what alert sources send: Alertmanager's webhook (version 4) and the generic shape."""

import json
from datetime import UTC, datetime

import pytest

from alerts.payloads import (
    MAX_GROUP_KEY_LENGTH,
    AlertStatus,
    Unreadable,
    check_group,
    read_alertmanager,
    read_generic,
    read_notification,
)


def body(data) -> bytes:
    return json.dumps(data).encode()


ALERTMANAGER = {
    "version": "4",
    "groupKey": '{}:{alertname="DiskFull"}',
    "truncatedAlerts": 0,
    "status": "firing",
    "receiver": "kourier",
    "groupLabels": {"alertname": "DiskFull"},
    "commonLabels": {"alertname": "DiskFull"},
    "commonAnnotations": {},
    "externalURL": "http://alertmanager.example",
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "DiskFull", "severity": "critical", "instance": "db-1"},
            "annotations": {"summary": "Disk full on db-1", "runbook_url": "http://runbooks/disk"},
            "startsAt": "2024-05-01T10:00:00.123456789Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus.example/graph",
            "fingerprint": "a1b2c3",
        },
        {
            "status": "resolved",
            "labels": {"alertname": "DiskFull", "instance": "db-2"},
            "annotations": {},
            "startsAt": "2024-05-01T09:00:00+02:00",
            "endsAt": "2024-05-01T09:30:00+02:00",
            "generatorURL": "",
            "fingerprint": "d4e5f6",
        },
    ],
}


def test_a_grouped_alertmanager_payload_is_read_alert_by_alert():
    firing, resolved = read_alertmanager(body(ALERTMANAGER))

    assert (firing.fingerprint, firing.status, firing.title, firing.severity) == (
        "a1b2c3", AlertStatus.FIRING, "DiskFull", "critical",
    )  # fmt: skip
    assert firing.text == "Disk full on db-1"
    assert firing.link == "http://prometheus.example/graph"
    assert firing.starts_at == datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert firing.ends_at is None  # Go's zero time: still firing
    assert firing.occurrence == "2024-05-01T10:00:00.123456+00:00"
    assert (resolved.status, resolved.occurrence) == (AlertStatus.RESOLVED, "2024-05-01T07:00:00+00:00")


def test_an_alert_without_a_fingerprint_is_known_by_its_labels():
    data = json.loads(json.dumps(ALERTMANAGER))
    del data["alerts"][0]["fingerprint"]
    again = json.loads(json.dumps(data))
    again["alerts"][0]["labels"] = dict(reversed(list(again["alerts"][0]["labels"].items())))

    assert read_alertmanager(body(data))[0].fingerprint == read_alertmanager(body(again))[0].fingerprint


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"version": "3"}, 'version must be "4" (got "3")'),
        ({"alerts": {}}, "alerts must be a list (got an object)"),
        ({"alerts": [1]}, "alerts[0] must be an object (got 1)"),
        ({"alerts": [{"status": "on", "labels": {}, "startsAt": "2024-05-01T10:00:00Z"}]},
         'alerts[0].status must be firing or resolved (got "on")'),
        ({"alerts": [{"status": "firing", "labels": {"a": 1}, "startsAt": "2024-05-01T10:00:00Z"}]},
         "alerts[0].labels.a must be a string (got 1)"),
        ({"alerts": [{"status": "firing", "labels": {}}]}, "alerts[0].startsAt is required"),
        ({"alerts": [{"status": "firing", "labels": {}, "startsAt": "yesterday"}]},
         'alerts[0].startsAt must be an RFC 3339 time (got "yesterday")'),
        ({"alerts": [{"status": "firing", "labels": {}, "startsAt": "2024-05-01T10:00:00"}]},
         'alerts[0].startsAt must name its time zone (got "2024-05-01T10:00:00")'),
    ],
)  # fmt: skip
def test_an_alertmanager_payload_it_cannot_read_is_refused_with_the_reason(change, reason):
    with pytest.raises(Unreadable) as refused:
        read_alertmanager(body({**ALERTMANAGER, **change}))

    assert str(refused.value) == reason


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff", "the body is not UTF-8"),
        (b"{", "the body is not JSON"),
        (b"[]", "the body must be a JSON object (got a list)"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused(raw, reason):
    with pytest.raises(Unreadable) as refused:
        read_generic(raw)

    assert str(refused.value) == reason


def test_the_generic_shape_is_one_alert_known_by_its_id():
    [alert] = read_generic(
        body(
            {
                "id": "backup",
                "title": "Backup failed",
                "text": "exit 2",
                "labels": {"host": "b-1"},
                "link": "http://ci",
            }
        )
    )

    assert (alert.fingerprint, alert.status, alert.title, alert.text) == (
        "backup", AlertStatus.FIRING, "Backup failed", "exit 2",
    )  # fmt: skip
    assert (alert.labels, alert.link, alert.starts_at, alert.occurrence) == (
        {"host": "b-1"},
        "http://ci",
        None,
        None,
    )


def test_the_generic_shape_takes_a_fingerprint_a_resolve_and_a_start():
    [alert] = read_generic(
        body({"fingerprint": "f1", "status": "resolved", "title": "T", "startsAt": "2024-05-01T10:00:00Z"})
    )

    assert (alert.fingerprint, alert.status, alert.occurrence) == (
        "f1", AlertStatus.RESOLVED, "2024-05-01T10:00:00+00:00",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"title": "T"}, "id (or fingerprint) is required"),
        ({"id": "x"}, "title is required"),
        ({"id": "x", "title": "T", "status": "down"}, 'status must be firing or resolved (got "down")'),
        ({"id": "x", "title": "T", "severity": "high"}, "unknown field severity (expected: id, fingerprint, "
         "status, title, text, labels, link, startsAt, endsAt)"),
        ({"id": 5, "title": "T"}, "id must be a string (got 5)"),
    ],
)  # fmt: skip
def test_a_generic_alert_it_cannot_read_is_refused_with_the_reason(data, reason):
    with pytest.raises(Unreadable) as refused:
        read_generic(body(data))

    assert str(refused.value) == reason


def test_a_notification_names_its_group_its_receiver_and_how_many_alerts_it_left_out():
    sent = read_notification(body({**ALERTMANAGER, "truncatedAlerts": 3}))

    assert (sent.group_key, sent.receiver, sent.group_labels, sent.truncated) == (
        '{}:{alertname="DiskFull"}',
        "kourier",
        {"alertname": "DiskFull"},
        3,
    )
    assert [a.fingerprint for a in sent.alerts] == ["a1b2c3", "d4e5f6"]
    check_group(sent)  # both alerts carry the group's label


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"groupKey": None}, "groupKey is required: alerts are grouped by it (or set threadPer: alert)"),
        ({"groupKey": "   "}, "groupKey is required: alerts are grouped by it (or set threadPer: alert)"),
        (
            {"groupLabels": {"alertname": "CpuHigh"}},
            'alerts[0].labels.alertname must be the group\'s "CpuHigh" (got "DiskFull")',
        ),
        (
            {"groupLabels": {"instance": "db-1"}},
            'alerts[1].labels.instance must be the group\'s "db-1" (got "db-2")',
        ),
    ],
    ids=["no group key", "blank group key", "another group", "one alert outside"],
)
def test_a_notification_that_does_not_name_its_group_or_whose_alerts_disagree_with_it_is_refused(
    changes, error
):
    sent = read_notification(body({**ALERTMANAGER, **changes}))

    with pytest.raises(Unreadable) as refused:
        check_group(sent)
    assert str(refused.value) == error


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        (
            {"groupKey": "k" * (MAX_GROUP_KEY_LENGTH + 1)},
            f"groupKey must be at most {MAX_GROUP_KEY_LENGTH} characters (got {MAX_GROUP_KEY_LENGTH + 1})",
        ),
        ({"groupKey": 7}, "groupKey must be a string (got 7)"),
        ({"truncatedAlerts": -1}, "truncatedAlerts must be a count of alerts (got -1)"),
        ({"truncatedAlerts": "2"}, 'truncatedAlerts must be a count of alerts (got "2")'),
        ({"groupLabels": {"alertname": 1}}, "groupLabels.alertname must be a string (got 1)"),
    ],
    ids=[
        "group key too long",
        "group key not a string",
        "negative truncated",
        "truncated not a number",
        "bad group label",
    ],
)
def test_a_notification_whose_group_fields_cannot_be_read_is_unreadable(changes, error):
    with pytest.raises(Unreadable) as refused:
        read_notification(body({**ALERTMANAGER, **changes}))
    assert str(refused.value) == error
