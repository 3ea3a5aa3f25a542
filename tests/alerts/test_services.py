"""alerts.services: how a delivery's alerts are sorted into threads (per Alertmanager group, per alert,
or held in the hour's storm thread), what each thread owes, and how ``deliver`` makes its posts and
starts its session through the outbox, against the Slack fake."""

import functools
import logging
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django import db
from django.utils import timezone

from alerts import messages, services
from alerts.models import Alert, AlertMember, AlertOccurrence, AlertPost
from alerts.payloads import AlertNotice, AlertStatus, Notification
from alerts.task_names import DELIVER_ALERT
from bindings.manifest import ThreadPer, TriggerKind, TriggerSpec
from kourier import queue
from kourier.slack import clients
from sessions.identity import SYSTEM_IDENTITY
from sessions.models import Session, ThreadNote, Turn
from simulator import defaults
from tests.factories import BindingFactory
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 5, 1, 10, 17, tzinfo=UTC)
START = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
GROUP_LABELS = {"alertname": "PodCrashLooping", "namespace": "shop"}
PROMETHEUS = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T")
PER_ALERT = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", thread_per=ThreadPer.ALERT)


def pod(name, *, status=AlertStatus.FIRING, starts_at=START, namespace="shop"):
    return AlertNotice(
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


@pytest.fixture
def binding(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return BindingFactory(channels=[defaults.CHANNEL_ID])


def take(binding, *alerts, trigger=PROMETHEUS, now=NOW, **group):
    sent = notification(*alerts, **group)
    return services.take_alerts(
        binding, trigger, defaults.CHANNEL_ID, sent.alerts, notification=sent, now=now
    )


def notes(thread):
    return list(thread.posts.filter(kind=AlertPost.Kind.NOTE).order_by("pk").values_list("text", flat=True))


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


# --- Delivery -----------------------------------------------------------------------------------------


def test_delivery_posts_the_message_starts_the_session_and_files_each_note_for_the_next_turn(
    binding, slack_fake
):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    assert services.deliver(thread.pk)
    take(binding, pod("web-1"), pod("web-2"))
    assert services.deliver(thread.pk)

    thread.refresh_from_db()
    root, note = slack_fake.thread(defaults.CHANNEL_ID, thread.root_ts)
    assert root.text == thread.message_text
    assert note.text == ":heavy_plus_sign: Joined the group: PodCrashLooping pod=web-2."
    turn = Turn.objects.get()  # the join started no turn
    assert (turn.session, turn.user_id, turn.text) == (thread.session, SYSTEM_IDENTITY, thread.turn_text)
    assert list(ThreadNote.objects.values_list("user_id", "text", "message_ts")) == [
        (SYSTEM_IDENTITY, note.text, note.ts)
    ]
    assert services.alerts_owing_posts(timezone.now()) == []


def test_a_storm_thread_is_posted_but_runs_no_agent(binding, slack_fake):
    capped = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=1)
    take(binding, pod("web-1"), trigger=capped, group_key="first")
    take(binding, pod("web-2"), trigger=capped, group_key="second")
    storm = Alert.objects.get(kind=Alert.Kind.STORM)

    assert services.deliver(storm.pk)

    storm.refresh_from_db()
    assert [m.text for m in slack_fake.thread(defaults.CHANNEL_ID, storm.root_ts)] == [
        storm.message_text,
        ":pause_button: Held back: *PodCrashLooping namespace=shop* (1 alert). 1 held back this hour.",
    ]
    assert (storm.session, Session.objects.count()) == (None, 0)
    assert storm.pk not in services.alerts_owing_posts(timezone.now())


def test_a_thread_whose_session_was_deleted_at_the_end_of_its_lifetime_is_not_investigated_again(
    binding, slack_fake
):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    services.deliver(thread.pk)
    Session.objects.all().delete()  # 90 days after expiry

    owing = services.alerts_owing_posts(timezone.now())
    services.deliver(thread.pk)

    assert owing == []
    assert not services.owes_posts(thread.pk)
    assert (Session.objects.count(), Turn.objects.count()) == (0, 0)
    thread.refresh_from_db()
    assert (thread.session, thread.thread_started_at is not None) == (None, True)


def test_a_thread_whose_session_is_gone_and_whose_channel_was_unbound_does_not_fail_the_sweep(
    binding, slack_fake
):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    services.deliver(thread.pk)
    Session.objects.all().delete()
    binding.channels.all().delete()

    assert services.alerts_owing_posts(timezone.now()) == []
    services.deliver(thread.pk)  # nothing to start: raises nothing


def test_every_alert_of_a_storm_is_a_row(binding):
    capped = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=1)
    for number in range(5):
        take(binding, pod(f"web-{number}"), trigger=capped, group_key=f"group-{number}")

    assert (AlertMember.objects.count(), AlertOccurrence.objects.count()) == (5, 5)
    assert Alert.objects.filter(storm__isnull=False).count() == 4


# --- Delivery's faults ----------------------------------------------------------------------------------

QUICK = clients.RetryPolicy(backoff=0.01, max_backoff=0.02)


@pytest.fixture
def quick_slack(monkeypatch):
    """The Slack client's own retries, without their waits."""
    monkeypatch.setattr(
        services, "async_web_client", functools.partial(clients.async_web_client, policy=QUICK)
    )


def delivery_logs(caplog):
    return [
        (record.levelno, record.getMessage(), getattr(record, "error", None), record.exc_info)
        for record in caplog.records
        if record.name == "alerts.services" and record.getMessage().startswith("alert.delivery")
    ]


def wait_after_a_failed_delivery(thread: Alert) -> timedelta:
    """Delivers the alert, which fails; how long from before the attempt until it is tried again."""
    before = timezone.now()
    assert not services.deliver(thread.pk)
    thread.refresh_from_db()
    assert thread.next_delivery_at is not None
    return thread.next_delivery_at - before


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel", "invalid_auth", "is_archived"])
def test_an_alert_slack_refuses_for_good_fails_with_why_logged_once_and_no_sweep_tries_again(
    binding, slack_fake, caplog, error
):
    slack_fake.fail("chat.postMessage", error, times=None)
    take(binding, pod("web-1"))
    thread = Alert.objects.get()

    with caplog.at_level(logging.INFO, logger="alerts.services"):
        delivered = services.deliver(thread.pk)
        owing = services.alerts_owing_posts(timezone.now() + timedelta(days=1))
        again = services.deliver(thread.pk)

    thread.refresh_from_db()
    assert (delivered, again, owing) == (False, False, [])
    assert (thread.delivery_failed, thread.last_delivery_error, thread.root_ts) == (True, error, "")
    assert thread.last_delivery_failed_at is not None
    assert slack_fake.count("chat.postMessage") == 1
    assert delivery_logs(caplog) == [(logging.ERROR, "alert.delivery_failed", error, None)]


def test_an_alert_whose_bot_token_is_not_set_fails_naming_the_variable(binding, monkeypatch):
    monkeypatch.delenv("SLACK_BOT_TOKEN")
    take(binding, pod("web-1"))
    thread = Alert.objects.get()

    assert not services.deliver(thread.pk)

    thread.refresh_from_db()
    assert (thread.delivery_failed, thread.last_delivery_error) == (
        True,
        "spec.botToken: SLACK_BOT_TOKEN is not set",
    )


def test_a_transient_failure_is_tried_again_by_the_sweep_after_a_backoff_that_doubles(
    binding, slack_fake, caplog, quick_slack
):
    fault = slack_fake.fail("chat.postMessage", "http_503", times=None)
    take(binding, pod("web-1"))
    thread = Alert.objects.get()

    with caplog.at_level(logging.INFO, logger="alerts.services"):
        first_wait = wait_after_a_failed_delivery(thread)
        calls = slack_fake.count("chat.postMessage")
        assert not services.deliver(thread.pk)  # within the backoff: not tried
        assert slack_fake.count("chat.postMessage") == calls
        assert services.alerts_owing_posts(timezone.now()) == []
        assert services.alerts_owing_posts(thread.next_delivery_at) == [thread.pk]

        Alert.objects.filter(pk=thread.pk).update(next_delivery_at=timezone.now())
        second_wait = wait_after_a_failed_delivery(thread)

        slack_fake.clear_faults()
        Alert.objects.filter(pk=thread.pk).update(next_delivery_at=timezone.now())
        assert services.deliver(thread.pk)

    assert fault.hits >= 2
    assert timedelta(seconds=29) < first_wait <= timedelta(seconds=31)
    assert timedelta(seconds=59) < second_wait <= timedelta(seconds=61)
    thread.refresh_from_db()
    assert (thread.delivery_failed, thread.delivery_failures, thread.next_delivery_at) == (False, 0, None)
    assert thread.root_ts
    assert thread.last_delivery_error == "internal_error"  # the 503's body
    assert (
        delivery_logs(caplog)
        == [(logging.WARNING, "alert.delivery_deferred", thread.last_delivery_error, None)] * 2
    )


def test_a_rate_limited_delivery_waits_what_slack_asks_and_is_queued_again_for_then(
    binding, slack_fake, monkeypatch, django_capture_on_commit_callbacks
):
    once = clients.RetryPolicy(rate_limit_retries=0)  # the client's own waits are not what is tested
    monkeypatch.setattr(
        services, "async_web_client", functools.partial(clients.async_web_client, policy=once)
    )
    slack_fake.fail("chat.postMessage", "ratelimited", retry_after=7, times=None)
    take(binding, pod("web-1"))
    thread = Alert.objects.get()

    with django_capture_on_commit_callbacks() as callbacks:
        wait = wait_after_a_failed_delivery(thread)

    assert timedelta(seconds=6) < wait <= timedelta(seconds=8)  # Slack's Retry-After, not the backoff
    assert (thread.delivery_failures, thread.last_delivery_error) == (0, "ratelimited")  # pacing, no fault
    [later] = [c for c in callbacks if c.func is queue._publish_later]
    seconds, task_name, args = later.args
    assert (task_name, args) == (DELIVER_ALERT, (thread.pk,))
    due = thread.next_delivery_at
    assert due is not None
    assert due <= timezone.now() + timedelta(seconds=seconds)  # due when it runs


def test_the_backoff_doubles_up_to_an_hour():
    assert [services.delivery_backoff(n).total_seconds() for n in (1, 2, 3, 8, 20)] == [
        30,
        60,
        120,
        3600,
        3600,
    ]


def test_delivering_again_an_alert_given_up_on_posts_it_once_the_channel_is_fixed(
    binding, slack_fake, django_capture_on_commit_callbacks
):
    slack_fake.fail("chat.postMessage", "not_in_channel")
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    services.deliver(thread.pk)

    with django_capture_on_commit_callbacks() as callbacks:
        assert services.deliver_again([thread.pk]) == 1
    assert enqueued(callbacks) == [("deliver_alert", (thread.pk,))]
    assert services.deliver(thread.pk)

    thread.refresh_from_db()
    assert (thread.delivery_failed, thread.last_delivery_error) == (False, "not_in_channel")
    assert slack_fake.thread(defaults.CHANNEL_ID, thread.root_ts)[0].text == thread.message_text


# --- Races (PostgreSQL) -------------------------------------------------------------------------------

ON_POSTGRES = db.connection.vendor == "postgresql"


@pytest.mark.postgres
@pytest.mark.skipif(
    not ON_POSTGRES,
    reason="SQLite serializes every write, so deliveries cannot race there; set DATABASE_URL "
    "to a PostgreSQL database to run it",
)
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
