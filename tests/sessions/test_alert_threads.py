"""Alert threads: started by a trigger through sessions.services.start_alert_thread, no person."""

import pytest

from kourier.progress import ThreadKind
from sessions import services, turns
from sessions.agent_text import build_turn_text
from sessions.models import Session, Turn
from tests.factories import BindingFactory
from tests.fakes.slack import defaults
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return BindingFactory(channels=[defaults.CHANNEL_ID], progress="activity")


def test_an_alert_is_posted_as_the_bot_and_its_first_turn_queued_with_no_person(
    binding, slack_fake, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        turn = services.start_alert_thread(binding, "Disk is full on db-1")
    [root] = slack_fake.messages(defaults.CHANNEL_ID)
    assert (root.text, root.user, root.thread_ts) == ("Disk is full on db-1", defaults.BOT_USER_ID, None)
    session = Session.objects.get()
    assert (session.kind, session.thread_ts, session.binding) == (ThreadKind.ALERT, root.ts, binding)
    assert (turn.session, turn.message_ts, turn.user_id, turn.text, turn.state) == (
        session,
        root.ts,
        "",
        "Disk is full on db-1",
        Turn.State.QUEUED,
    )
    assert turn.message_id == services.message_id_for(binding.connection_id, defaults.CHANNEL_ID, root.ts)
    assert enqueued(callbacks) == [("drive_session", (session.id,))]  # no acknowledgment: no one wrote


def test_an_alert_can_take_a_root_message_posted_by_someone_else(binding, slack_fake):
    slack_fake.add_bot("U0ALERTS", "alerts")
    slack_fake.join(defaults.CHANNEL_ID, "U0ALERTS")
    root = slack_fake.bot_says("U0ALERTS", defaults.CHANNEL_ID, "CPU at 100%")
    turn = services.start_alert_thread(binding, "CPU at 100%", root_ts=root)
    assert turn.message_ts == root
    assert slack_fake.count("chat.postMessage") == 0
    assert Session.objects.get().kind == ThreadKind.ALERT


def test_starting_the_same_alert_thread_again_is_the_same_turn(
    binding, slack_fake, django_capture_on_commit_callbacks
):
    root = services.start_alert_thread(binding, "Disk is full").message_ts
    with django_capture_on_commit_callbacks() as callbacks:
        again = services.start_alert_thread(binding, "Disk is full", root_ts=root)
    assert Turn.objects.get() == again
    assert callbacks == []


def test_the_alerts_channel_must_be_one_of_the_bindings(binding):
    with pytest.raises(ValueError, match="not bound"):
        services.start_alert_thread(binding, "x", channel_id="C0OTHER")
    with pytest.raises(ValueError, match="needs text"):
        services.start_alert_thread(binding, "  ")
    two = BindingFactory(connection=binding.connection, channels=["C0002", "C0003"])
    with pytest.raises(ValueError, match="name the alert's channel"):
        services.start_alert_thread(two, "x")
    assert not Session.objects.exists()


def test_an_alert_turns_work_says_it_is_an_alert_thread_with_no_person(binding):
    turn = services.start_alert_thread(binding, "Disk is full")
    work = turns.start_turn(turn.id)
    assert work is not None
    assert (work.thread_kind, work.user_id, work.progress, work.connection_id) == (
        "alert",
        "",
        "activity",
        binding.connection_id,
    )


def test_the_first_turn_of_an_alert_thread_names_no_person():
    assert build_turn_text(None, "Disk is full on db-1") == "Slack: alert: Disk is full on db-1"
