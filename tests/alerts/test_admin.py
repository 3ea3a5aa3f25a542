"""Alert threads in the admin, read-only: every thread and every group held past the cap is a row,
with its alerts; an alert thread's turn is filed under the system identity."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from alerts import services
from alerts.models import Alert
from alerts.payloads import AlertStatus, Notification, ReceivedAlert
from bindings.manifest import TriggerKind, TriggerSpec
from sessions.identity import SYSTEM_IDENTITY
from tests.factories import BindingFactory, StaffUserFactory, TurnFactory

pytestmark = pytest.mark.django_db

CAPPED = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=1)
NOW = datetime(2026, 5, 1, 10, 17, tzinfo=UTC)


def group(binding, name, *pods):
    alerts = [
        ReceivedAlert(
            fingerprint=f"{name}-{pod}",
            status=AlertStatus.FIRING,
            title=name,
            labels={"alertname": name, "pod": pod},
            starts_at=NOW,
        )
        for pod in pods
    ]
    sent = Notification(alerts=alerts, group_key=name, receiver="kourier", group_labels={"alertname": name})
    services.take_alerts(binding, CAPPED, "C0123456789", alerts, notification=sent, now=NOW)


def test_every_group_is_listed_and_a_held_one_names_its_storm_thread(admin_client):
    binding = BindingFactory(channels=["C0123456789"])
    group(binding, "DiskFull", "db-1")
    group(binding, "CpuHigh", "web-1", "web-2")

    page = admin_client.get(reverse("admin:alerts_alert_changelist")).content.decode()
    held = Alert.objects.get(title="CpuHigh")
    detail = admin_client.get(reverse("admin:alerts_alert_change", args=[held.pk])).content.decode()

    assert "group prometheus/DiskFull (firing)" in page
    assert "group prometheus/CpuHigh (firing)" in page
    assert "storm prometheus/Alert storm (firing)" in page
    assert "CpuHigh pod=web-1" in detail
    assert "CpuHigh pod=web-2" in detail
    assert admin_client.get(reverse("admin:alerts_alert_add")).status_code == 403


def test_an_alert_threads_turn_is_filed_under_the_system_identity(admin_client):
    turn = TurnFactory(user_id="")  # as alert turns were stored before the identity had a name

    page = admin_client.get(reverse("admin:threads_turn_change", args=[turn.pk])).content.decode()

    assert SYSTEM_IDENTITY in page


def test_each_thread_links_to_slack_and_says_how_its_delivery_failed(admin_client):
    binding = BindingFactory(channels=["C0123456789"], connection__team_id="T0001")
    group(binding, "DiskFull", "db-1")
    group(binding, "CpuHigh", "web-1")
    posted, failed = Alert.objects.get(title="DiskFull"), Alert.objects.get(kind=Alert.Kind.STORM)
    Alert.objects.filter(pk=posted.pk).update(root_ts="1700000000.000100")
    Alert.objects.filter(pk=failed.pk).update(delivery_failed=True, last_delivery_error="channel_not_found")

    page = admin_client.get(reverse("admin:alerts_alert_changelist")).content.decode()

    thread = "https://app.slack.com/client/T0001/C0123456789/thread/C0123456789-1700000000.000100"
    assert f'<a href="{thread}" target="_blank" rel="noopener">open thread</a>' in page
    assert '<span class="delivery-failed">failed: channel_not_found</span>' in page


def test_deliver_again_clears_a_failure_for_those_who_may_change_alerts(admin_client, client):
    binding = BindingFactory(channels=["C0123456789"])
    group(binding, "DiskFull", "db-1")
    alert = Alert.objects.get()
    Alert.objects.filter(pk=alert.pk).update(delivery_failed=True, last_delivery_error="not_in_channel")
    client.force_login(StaffUserFactory(permissions=["alerts.view_alert"]))
    changelist = reverse("admin:alerts_alert_changelist")
    action = {"action": "deliver_again", "_selected_action": [alert.pk]}

    client.post(changelist, action)
    assert Alert.objects.get().delivery_failed
    response = admin_client.post(changelist, action, follow=True)

    assert not Alert.objects.get().delivery_failed
    assert "1 alert to deliver again." in response.content.decode()
