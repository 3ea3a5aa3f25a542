"""alerts.services: how a delivery's alerts are sorted into threads (per Alertmanager group, per alert,
or held in the hour's storm thread) and what each thread owes."""

import threading
from datetime import timedelta

import pytest
from django import db

from alerts import messages, services
from alerts.models import Alert, AlertPost
from alerts.payloads import AlertStatus, Notification
from bindings.manifest import TriggerKind, TriggerSpec
from simulator import defaults
from tests.alerts.deliveries import NOW, PER_ALERT, PROMETHEUS, START, notes, notification, pod, take
from tests.factories import BindingFactory
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return BindingFactory(channels=[defaults.CHANNEL_ID])


# --- One thread per group -----------------------------------------------------------------------------


def test_a_groups_first_notification_opens_one_thread_that_names_its_alerts(
    binding, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        taken = take(binding, pod("web-1"), pod("web-2"))

    thread = Alert.objects.get()
    assert taken == services.Taken(opened=2)
    assert (thread.kind, thread.title, thread.fires) == (
        Alert.Kind.GROUP,
        "PodCrashLooping namespace=shop",
        2,
    )
    assert sorted(thread.members.values_list("name", flat=True)) == [
        "PodCrashLooping pod=web-1",
        "PodCrashLooping pod=web-2",
    ]
    assert thread.message_text.startswith(
        ":rotating_light: *FIRING* · *PodCrashLooping namespace=shop* · 2 alerts · severity warning"
    )
    assert thread.turn_text.startswith("A new alert group fired: 2 alerts. Investigate it.")
    assert "alert 2:\nstatus: firing\nname: PodCrashLooping" in thread.turn_text
    assert list(thread.posts.values_list("kind", flat=True)) == [AlertPost.Kind.MESSAGE]
    assert enqueued(callbacks) == [("deliver_alert", (thread.pk,))]


def test_the_same_notification_again_changes_nothing(binding, django_capture_on_commit_callbacks):
    take(binding, pod("web-1"), pod("web-2"))
    with django_capture_on_commit_callbacks() as callbacks:
        taken = take(binding, pod("web-1"), pod("web-2"), now=NOW + timedelta(hours=4))  # repeat_interval

    assert taken == services.Taken(unchanged=2)
    assert (Alert.objects.count(), AlertPost.objects.count(), callbacks) == (1, 1, [])


def test_an_alert_that_joins_the_group_later_is_a_note_naming_it_not_a_thread(binding):
    take(binding, pod("web-1"))
    taken = take(binding, pod("web-1"), pod("web-2"), pod("web-3"))

    thread = Alert.objects.get()
    assert taken == services.Taken(joined=2, unchanged=1)
    assert notes(thread) == [
        ":heavy_plus_sign: Joined the group: PodCrashLooping pod=web-2, PodCrashLooping pod=web-3."
    ]
    assert thread.members.count() == 3


def test_a_partial_resolve_says_which_and_how_many_still_fire_and_the_last_one_closes_the_thread(binding):
    take(binding, pod("web-1"), pod("web-2"), pod("web-3"))
    partly = take(binding, pod("web-1", status=AlertStatus.RESOLVED), pod("web-2"), pod("web-3"))
    fully = take(
        binding, pod("web-2", status=AlertStatus.RESOLVED), pod("web-3", status=AlertStatus.RESOLVED)
    )

    thread = Alert.objects.get()
    assert (partly, fully) == (services.Taken(resolved=1, unchanged=2), services.Taken(resolved=2))
    assert notes(thread) == [
        ":white_check_mark: Resolved: PodCrashLooping pod=web-1. 2 alerts still firing.",
        ":white_check_mark: Resolved at 2026-05-01 10:17 UTC: every alert of the group (3 alerts). "
        "Replies still reach the agent.",
    ]
    assert (thread.state, thread.resolved_at) == (Alert.State.RESOLVED, NOW)


def test_a_group_alertmanager_says_resolved_closes_even_with_an_alert_it_no_longer_names(binding):
    take(binding, pod("web-1"), pod("web-2"))
    take(binding, pod("web-1", status=AlertStatus.RESOLVED), resolved=True)  # web-2 was silenced

    thread = Alert.objects.get()
    assert thread.state == Alert.State.RESOLVED
    assert notes(thread)[-1].startswith(":white_check_mark: Resolved at ")


def test_a_truncated_resolved_notification_closes_only_what_it_names(binding):
    take(binding, pod("web-1"), pod("web-2"))
    take(binding, pod("web-1", status=AlertStatus.RESOLVED), resolved=True, truncated=1)

    assert Alert.objects.get().state == Alert.State.FIRING


def test_a_notification_after_the_group_resolved_opens_a_new_thread_linked_to_the_previous(binding):
    take(binding, pod("web-1"))
    take(binding, pod("web-1", status=AlertStatus.RESOLVED))
    taken = take(binding, pod("web-1", starts_at=START + timedelta(hours=1)))

    previous, current = Alert.objects.order_by("pk")
    assert taken == services.Taken(opened=1)
    assert (previous.state, current.state, current.previous) == (
        Alert.State.RESOLVED,
        Alert.State.FIRING,
        previous,
    )


def test_a_late_copy_of_a_notification_after_the_resolve_opens_nothing(binding):
    take(binding, pod("web-1"))
    take(binding, pod("web-1", status=AlertStatus.RESOLVED))

    assert take(binding, pod("web-1")) == services.Taken(unchanged=1)
    assert Alert.objects.count() == 1


def test_an_alert_that_resolved_and_fires_again_while_its_group_fires_is_a_note(binding):
    take(binding, pod("web-1"), pod("web-2"))
    take(binding, pod("web-1", status=AlertStatus.RESOLVED), pod("web-2"))
    taken = take(binding, pod("web-1", starts_at=START + timedelta(minutes=9)), pod("web-2"))

    assert taken == services.Taken(repeated=1, unchanged=1)
    assert notes(Alert.objects.get())[-1] == ":repeat: Fired again: PodCrashLooping pod=web-1."


def test_two_receivers_grouping_the_same_alerts_get_a_thread_each(binding):
    take(binding, pod("web-1"))
    other = Notification(alerts=[pod("web-1")], group_key=notification().group_key, receiver="other")
    services.take_alerts(binding, PROMETHEUS, defaults.CHANNEL_ID, other.alerts, notification=other, now=NOW)

    assert Alert.objects.count() == 2
    assert services.group_thread_key("kourier", "k") != services.group_thread_key("other", "k")


def test_a_truncated_notification_says_in_the_thread_that_alertmanager_dropped_alerts(binding):
    take(binding, pod("web-1"), truncated=7)
    take(binding, pod("web-1"), truncated=7, now=NOW + timedelta(hours=4))  # its repeat_interval re-send

    thread = Alert.objects.get()
    assert notes(thread) == [
        ":warning: Alertmanager dropped 7 alerts from its notification (truncatedAlerts): this thread does "
        "not list them. The receiver's max_alerts sets how many it sends."
    ]
    assert "alerts Alertmanager left out of this notification: 7" in thread.turn_text


# --- One thread per alert -----------------------------------------------------------------------------


def test_thread_per_alert_keeps_a_thread_for_each_alert_and_its_repeats_as_notes(binding):
    taken = take(binding, pod("web-1"), pod("web-2"), trigger=PER_ALERT)
    again = take(binding, pod("web-1", starts_at=START + timedelta(minutes=5)), trigger=PER_ALERT)
    closed = take(binding, pod("web-2", status=AlertStatus.RESOLVED), trigger=PER_ALERT)

    web_1, web_2 = Alert.objects.order_by("pk")
    assert (taken, again, closed) == (
        services.Taken(opened=2),
        services.Taken(repeated=1),
        services.Taken(resolved=1),
    )
    assert (web_1.kind, web_1.key, web_2.key) == (Alert.Kind.ALERT, "fp-web-1", "fp-web-2")
    assert notes(web_1) == [messages.fired_again_note(2, START)]
    assert notes(web_2) == [messages.resolved_note(NOW, 1)]


def test_a_generic_trigger_has_a_thread_per_alert(binding):
    generic = TriggerSpec("hooks", TriggerKind.GENERIC, "T")
    services.take_alerts(binding, generic, defaults.CHANNEL_ID, [pod("web-1"), pod("web-2")], now=NOW)

    assert list(Alert.objects.values_list("kind", flat=True)) == [Alert.Kind.ALERT, Alert.Kind.ALERT]


# --- Storms -------------------------------------------------------------------------------------------


def test_past_the_cap_a_new_group_is_held_in_the_hours_storm_thread_which_lists_it(
    binding, django_capture_on_commit_callbacks
):
    capped = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=2)

    def group(name, now=NOW):
        return take(binding, pod(name), trigger=capped, now=now, group_key=f"{{}}:{{pod={name!r}}}")

    group("web-1")
    group("web-2")
    with django_capture_on_commit_callbacks() as callbacks:
        held = group("web-3")
    group("web-4")
    next_hour = group("web-5", now=NOW + timedelta(hours=1))

    storm = Alert.objects.get(kind=Alert.Kind.STORM)
    web_3, web_4 = Alert.objects.filter(storm=storm).order_by("pk")
    assert (held, next_hour) == (services.Taken(held=1), services.Taken(opened=1))
    assert storm.message_text == (
        ":cyclone: *Alert storm* · trigger prometheus opened 2 threads this hour, its maxThreadsPerHour. "
        "New alert groups are listed in this thread until the hour ends: they get no thread and no "
        "investigation of their own."
    )
    assert notes(storm) == [
        ":pause_button: Held back: *PodCrashLooping namespace=shop* (1 alert). 1 held back this hour.",
        ":pause_button: Held back: *PodCrashLooping namespace=shop* (1 alert). 2 held back this hour.",
    ]
    # A held group is a row with its alerts, and posts nothing of its own.
    assert (web_3.members.count(), web_3.posts.count(), web_4.posts.count()) == (1, 0, 0)
    assert enqueued(callbacks) == [("deliver_alert", (storm.pk,))] * 2  # its root, then the note
    assert Alert.objects.filter(kind=Alert.Kind.GROUP, storm=None).count() == 3


def test_a_held_groups_notes_go_to_the_storm_thread_naming_the_group(binding):
    capped = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=1)
    take(binding, pod("web-1"), trigger=capped, group_key="first")
    take(binding, pod("web-2"), trigger=capped, group_key="second")
    take(binding, pod("web-2"), pod("web-3"), trigger=capped, group_key="second")

    storm = Alert.objects.get(kind=Alert.Kind.STORM)
    assert notes(storm)[-1] == (
        "*PodCrashLooping namespace=shop*: :heavy_plus_sign: Joined the group: PodCrashLooping pod=web-3."
    )


# --- Races (PostgreSQL) -------------------------------------------------------------------------------


@pytest.mark.requires_postgres("SQLite serializes every write, so deliveries cannot race there")
@pytest.mark.django_db(transaction=True)
def test_groups_arriving_at_once_take_no_more_threads_than_the_cap_and_share_one_storm_thread(binding):
    capped = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=2)
    groups = 6
    start = threading.Barrier(groups)
    failures: list[BaseException] = []

    def deliver(number: int) -> None:
        try:
            start.wait()
            take(binding, pod(f"web-{number}"), trigger=capped, group_key=f"group-{number}")
        except BaseException as exc:
            failures.append(exc)
        finally:
            db.connection.close()

    threads = [threading.Thread(target=deliver, args=(number,)) for number in range(groups)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    storm = Alert.objects.get(kind=Alert.Kind.STORM)
    assert Alert.objects.filter(kind=Alert.Kind.GROUP, storm=None).count() == 2
    assert storm.held.count() == groups - 2
    assert sorted(notes(storm))[-1].endswith(f"{groups - 2} held back this hour.")
