"""alerts.delivery: how an alert thread's posts are made through the outbox, its session started on
its root message and its notes filed for the next turn, and how delivery's faults are met (given up,
or tried again after a backoff), against the Slack fake."""

import functools
import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from alerts import delivery
from alerts.models import Alert, AlertMember, AlertOccurrence, AlertPost
from alerts.payloads import AlertStatus
from alerts.task_names import DELIVER_ALERT
from bindings.manifest import TriggerKind, TriggerSpec
from kourier import queue
from kourier.slack import clients
from kourier.slack.outbox import PostKind
from sessions import outbox
from sessions import sweeps as session_sweeps
from sessions.identity import SYSTEM_IDENTITY
from sessions.models import PostIntent, Session, ThreadNote, Turn
from simulator import defaults
from tests.alerts.deliveries import START, pod, take
from tests.factories import BindingFactory
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return BindingFactory(channels=[defaults.CHANNEL_ID])


# --- Delivery -----------------------------------------------------------------------------------------


def test_delivery_posts_the_message_starts_the_session_and_files_each_note_for_the_next_turn(
    binding, slack_fake
):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    assert delivery.deliver(thread.pk)
    take(binding, pod("web-1"), pod("web-2"))
    assert delivery.deliver(thread.pk)

    thread.refresh_from_db()
    root, note = slack_fake.thread(defaults.CHANNEL_ID, thread.root_ts)
    assert root.text == thread.message_text
    assert note.text == ":heavy_plus_sign: Joined the group: PodCrashLooping pod=web-2."
    turn = Turn.objects.get()  # the join started no turn
    assert (turn.session, turn.user_id, turn.text) == (thread.session, SYSTEM_IDENTITY, thread.turn_text)
    assert list(ThreadNote.objects.values_list("user_id", "text", "message_ts")) == [
        (SYSTEM_IDENTITY, note.text, note.ts)
    ]
    assert delivery.alerts_owing_posts(timezone.now()) == []


# A group's notifications, the first opening its thread and each one after owing a note.
NOTIFICATIONS = {
    "joined": [[pod("web-1")], [pod("web-1"), pod("web-2")]],
    "fired-again": [
        [pod("web-1"), pod("web-2")],
        [pod("web-1", status=AlertStatus.RESOLVED), pod("web-2")],
        [pod("web-1", starts_at=START + timedelta(minutes=9)), pod("web-2")],
    ],
    "resolved": [[pod("web-1")], [pod("web-1", status=AlertStatus.RESOLVED)]],
}


@pytest.mark.parametrize("notifications", NOTIFICATIONS.values(), ids=NOTIFICATIONS.keys())
def test_an_alert_threads_notes_are_activity_that_moves_its_expiry_as_a_message_does(
    binding, slack_fake, notifications
):
    first, *later = notifications
    take(binding, *first)
    thread = Alert.objects.get()
    assert delivery.deliver(thread.pk)
    quiet_since = timezone.now() - timedelta(days=60)
    Session.objects.update(last_activity_at=quiet_since, expires_at=quiet_since + binding.thread_ttl)

    before = timezone.now()
    for alerts in later:
        take(binding, *alerts)
        assert delivery.deliver(thread.pk)

    session = Session.objects.get()
    assert session.last_activity_at >= before
    assert session.expires_at == session.last_activity_at + binding.thread_ttl


def test_a_storm_thread_is_posted_but_runs_no_agent(binding, slack_fake):
    capped = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=1)
    take(binding, pod("web-1"), trigger=capped, group_key="first")
    take(binding, pod("web-2"), trigger=capped, group_key="second")
    storm = Alert.objects.get(kind=Alert.Kind.STORM)

    assert delivery.deliver(storm.pk)

    storm.refresh_from_db()
    assert [m.text for m in slack_fake.thread(defaults.CHANNEL_ID, storm.root_ts)] == [
        storm.message_text,
        ":pause_button: Held back: *PodCrashLooping namespace=shop* (1 alert). 1 held back this hour.",
    ]
    assert (storm.session, Session.objects.count()) == (None, 0)
    assert storm.pk not in delivery.alerts_owing_posts(timezone.now())


def expire_and_delete_the_sessions() -> None:
    """Time passes: the sessions expired ``DELETE_AFTER_EXPIRY`` ago, and beat's sweep deletes them."""
    long_ago = timezone.now() - session_sweeps.DELETE_AFTER_EXPIRY - timedelta(days=1)
    Session.objects.update(last_activity_at=long_ago, expires_at=long_ago)
    session_sweeps.delete_expired_sessions()


def test_deleting_an_expired_alert_threads_session_deletes_its_alert_rows_and_their_texts(
    binding, slack_fake
):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    delivery.deliver(thread.pk)
    take(binding, pod("web-1"), pod("web-2"))
    delivery.deliver(thread.pk)

    expire_and_delete_the_sessions()

    kept = [Alert, AlertMember, AlertOccurrence, AlertPost, PostIntent, Session, Turn, ThreadNote]
    assert {model.__name__: model.objects.count() for model in kept} == dict.fromkeys(
        (model.__name__ for model in kept), 0
    )
    assert delivery.alerts_owing_posts(timezone.now()) == []


def test_a_later_notification_of_an_alert_whose_thread_was_deleted_opens_a_new_thread(binding, slack_fake):
    take(binding, pod("web-1"))
    delivery.deliver(Alert.objects.get().pk)
    old_root = Alert.objects.get().root_ts
    expire_and_delete_the_sessions()

    take(binding, pod("web-1"), pod("web-2"))  # the group still fires, and grew
    thread = Alert.objects.get()
    assert delivery.deliver(thread.pk)

    thread.refresh_from_db()
    assert thread.root_ts != old_root
    assert len(slack_fake.thread(defaults.CHANNEL_ID, old_root)) == 1  # no note in the old thread
    assert Session.objects.get().thread_ts == thread.root_ts
    assert thread.members.count() == 2


def test_every_alert_of_a_storm_is_a_row(binding):
    capped = TriggerSpec("prometheus", TriggerKind.ALERTMANAGER, "T", max_threads_per_hour=1)
    for number in range(5):
        take(binding, pod(f"web-{number}"), trigger=capped, group_key=f"group-{number}")

    assert (AlertMember.objects.count(), AlertOccurrence.objects.count()) == (5, 5)
    assert Alert.objects.filter(storm__isnull=False).count() == 4


# --- A worker that dies between a post and its record -------------------------------------------------


class WorkerDied(Exception):
    """The worker's process ends here (a SIGKILL, a lost host): what it did before stays done."""


def dies_once_before(monkeypatch, module, name: str) -> None:
    """The worker dies the first time it reaches ``module.name``, before it runs."""
    real = getattr(module, name)
    reached: list[bool] = []

    def dying(*args, **kwargs):
        if not reached:
            reached.append(True)
            raise WorkerDied(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, dying)


def test_a_restart_between_the_alert_message_and_its_record_posts_it_once(binding, slack_fake, monkeypatch):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    dies_once_before(monkeypatch, outbox, "confirm_post")  # Slack took the post; nothing recorded it

    with pytest.raises(WorkerDied):
        delivery.deliver(thread.pk)
    assert delivery.deliver(thread.pk)  # the task again, on another worker

    thread.refresh_from_db()
    assert [message.ts for message in slack_fake.messages(defaults.CHANNEL_ID)] == [thread.root_ts]
    assert slack_fake.count("chat.postMessage") == 1
    assert PostIntent.objects.get(kind=PostKind.ALERT).ts == thread.root_ts
    assert Turn.objects.get().message_ts == thread.root_ts


@pytest.mark.parametrize(
    ("module", "name"),
    [(outbox, "confirm_post"), (delivery, "file_system_note")],
    ids=["before-its-record", "before-its-filing"],
)
def test_a_restart_between_a_note_and_its_record_posts_it_once_and_files_it_once(
    binding, slack_fake, monkeypatch, module, name
):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    assert delivery.deliver(thread.pk)
    take(binding, pod("web-1"), pod("web-2"))
    dies_once_before(monkeypatch, module, name)

    with pytest.raises(WorkerDied):
        delivery.deliver(thread.pk)
    assert delivery.deliver(thread.pk)

    thread.refresh_from_db()
    _, note = slack_fake.thread(defaults.CHANNEL_ID, thread.root_ts)
    assert note.text == ":heavy_plus_sign: Joined the group: PodCrashLooping pod=web-2."
    assert list(ThreadNote.objects.values_list("message_ts", flat=True)) == [note.ts]
    assert not delivery.owes_posts(thread.pk)


def test_an_alert_threads_posts_belong_to_its_session_and_go_with_it(binding, slack_fake):
    take(binding, pod("web-1"))
    thread = Alert.objects.get()
    delivery.deliver(thread.pk)
    take(binding, pod("web-1"), pod("web-2"))
    delivery.deliver(thread.pk)

    thread.refresh_from_db()
    intents = PostIntent.objects.order_by("pk")
    assert [(i.kind, i.turn_id, i.session_id) for i in intents] == [
        (PostKind.ALERT, None, thread.session_id),
        (PostKind.NOTE, None, thread.session_id),
    ]
    assert all(i.text == "" for i in intents)  # an alert's texts stay with the alert
    Session.objects.all().delete()
    assert not PostIntent.objects.exists()


# --- Delivery's faults ----------------------------------------------------------------------------------

QUICK = clients.RetryPolicy(backoff=0.01, max_backoff=0.02)


@pytest.fixture
def quick_slack(monkeypatch):
    """The Slack client's own retries, without their waits."""
    monkeypatch.setattr(
        delivery, "async_web_client", functools.partial(clients.async_web_client, policy=QUICK)
    )


def delivery_logs(caplog):
    return [
        (record.levelno, record.getMessage(), getattr(record, "error", None), record.exc_info)
        for record in caplog.records
        if record.name == "alerts.delivery" and record.getMessage().startswith("alert.delivery")
    ]


def wait_after_a_failed_delivery(thread: Alert) -> tuple[timedelta, timedelta]:
    """Delivers the alert, which fails: the backoff until it is tried again lies between these two,
    counted from the attempt's end and from its start (the post may wait its turn in Slack's budget)."""
    before = timezone.now()
    assert not delivery.deliver(thread.pk)
    after = timezone.now()
    thread.refresh_from_db()
    assert thread.next_delivery_at is not None
    return thread.next_delivery_at - after, thread.next_delivery_at - before


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel", "invalid_auth", "is_archived"])
def test_an_alert_slack_refuses_for_good_fails_with_why_logged_once_and_no_sweep_tries_again(
    binding, slack_fake, caplog, error
):
    slack_fake.fail("chat.postMessage", error, times=None)
    take(binding, pod("web-1"))
    thread = Alert.objects.get()

    with caplog.at_level(logging.INFO, logger="alerts.delivery"):
        delivered = delivery.deliver(thread.pk)
        owing = delivery.alerts_owing_posts(timezone.now() + timedelta(days=1))
        again = delivery.deliver(thread.pk)

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

    assert not delivery.deliver(thread.pk)

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

    with caplog.at_level(logging.INFO, logger="alerts.delivery"):
        first_wait = wait_after_a_failed_delivery(thread)
        calls = slack_fake.count("chat.postMessage")
        assert not delivery.deliver(thread.pk)  # within the backoff: not tried
        assert slack_fake.count("chat.postMessage") == calls
        assert delivery.alerts_owing_posts(timezone.now()) == []
        assert delivery.alerts_owing_posts(thread.next_delivery_at) == [thread.pk]

        Alert.objects.filter(pk=thread.pk).update(next_delivery_at=timezone.now())
        second_wait = wait_after_a_failed_delivery(thread)

        slack_fake.clear_faults()
        Alert.objects.filter(pk=thread.pk).update(next_delivery_at=timezone.now())
        assert delivery.deliver(thread.pk)

    assert fault.hits >= 2
    assert first_wait[0] <= timedelta(seconds=30) <= first_wait[1]
    assert second_wait[0] <= timedelta(seconds=60) <= second_wait[1]
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
        delivery, "async_web_client", functools.partial(clients.async_web_client, policy=once)
    )
    slack_fake.fail("chat.postMessage", "ratelimited", retry_after=7, times=None)
    take(binding, pod("web-1"))
    thread = Alert.objects.get()

    with django_capture_on_commit_callbacks() as callbacks:
        wait = wait_after_a_failed_delivery(thread)

    assert wait[0] <= timedelta(seconds=7) <= wait[1]  # Slack's Retry-After, not the backoff
    assert (thread.delivery_failures, thread.last_delivery_error) == (0, "ratelimited")  # pacing, no fault
    [later] = [c for c in callbacks if c.func is queue._publish_later]
    seconds, task_name, args = later.args
    assert (task_name, args) == (DELIVER_ALERT, (thread.pk,))
    due = thread.next_delivery_at
    assert due is not None
    assert due <= timezone.now() + timedelta(seconds=seconds)  # due when it runs


def test_the_backoff_doubles_up_to_an_hour():
    assert [delivery.delivery_backoff(n).total_seconds() for n in (1, 2, 3, 8, 20)] == [
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
    delivery.deliver(thread.pk)

    with django_capture_on_commit_callbacks() as callbacks:
        assert delivery.deliver_again([thread.pk]) == 1
    assert enqueued(callbacks) == [("deliver_alert", (thread.pk,))]
    assert delivery.deliver(thread.pk)

    thread.refresh_from_db()
    assert (thread.delivery_failed, thread.last_delivery_error) == (False, "not_in_channel")
    assert slack_fake.thread(defaults.CHANNEL_ID, thread.root_ts)[0].text == thread.message_text
