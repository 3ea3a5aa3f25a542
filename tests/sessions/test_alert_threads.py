"""Alert threads: started by a trigger through sessions.services.start_alert_thread on the root
message the alerts app posted, filed under the system identity (no person)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from kourier.progress import ThreadKind
from sessions import services, turns
from sessions.agent_text import Author, Note, build_turn_text
from sessions.identity import SYSTEM_IDENTITY, filed_under, is_person
from sessions.models import Session, Turn
from simulator import defaults
from tests.factories import BindingFactory
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return BindingFactory(channels=[defaults.CHANNEL_ID], progress="activity")


def root_message(slack_fake, text="Disk is full on db-1"):
    """The alert message, as the alerts app's delivery posts it (through its outbox) as the bot."""
    return slack_fake.bot_says(defaults.BOT_USER_ID, defaults.CHANNEL_ID, text)


def test_an_alert_thread_starts_on_its_root_message_with_a_first_turn_filed_under_the_system_identity(
    binding, slack_fake, django_capture_on_commit_callbacks
):
    root = root_message(slack_fake)
    with django_capture_on_commit_callbacks() as callbacks:
        turn = services.start_alert_thread(binding, "Disk is full on db-1", root_ts=root)
    session = Session.objects.get()
    assert (session.kind, session.thread_ts, session.binding) == (ThreadKind.ALERT, root, binding)
    assert (turn.session, turn.message_ts, turn.user_id, turn.text, turn.state) == (
        session,
        root,
        SYSTEM_IDENTITY,
        "Disk is full on db-1",
        Turn.State.QUEUED,
    )
    assert turn.message_id == services.message_id_for(binding.connection_id, defaults.CHANNEL_ID, root)
    assert enqueued(callbacks) == [("drive_session", (session.id,))]  # no acknowledgment: no one wrote
    assert slack_fake.count("chat.postMessage") == 0  # the alerts app posts; starting a thread does not


def test_starting_the_same_alert_thread_again_is_the_same_turn(
    binding, slack_fake, django_capture_on_commit_callbacks
):
    root = root_message(slack_fake)
    services.start_alert_thread(binding, "Disk is full", root_ts=root)
    with django_capture_on_commit_callbacks() as callbacks:
        again = services.start_alert_thread(binding, "Disk is full", root_ts=root)
    assert Turn.objects.get() == again
    assert callbacks == []


def test_the_alerts_channel_must_be_one_of_the_bindings(binding):
    with pytest.raises(ValueError, match="not bound"):
        services.start_alert_thread(binding, "x", channel_id="C0OTHER", root_ts="1.000001")
    with pytest.raises(ValueError, match="needs text"):
        services.start_alert_thread(binding, "  ", root_ts="1.000001")
    two = BindingFactory(connection=binding.connection, channels=["C0002", "C0003"])
    with pytest.raises(ValueError, match="name the alert's channel"):
        services.start_alert_thread(two, "x", root_ts="1.000001")
    assert not Session.objects.exists()


def test_an_alert_turns_work_says_it_is_an_alert_thread_with_no_person(binding, slack_fake):
    turn = services.start_alert_thread(binding, "Disk is full", root_ts=root_message(slack_fake))
    work = turns.start_turn(turn.id)
    assert work is not None
    assert (work.thread_kind, work.user_id, work.progress, work.connection_id) == (
        "alert",
        SYSTEM_IDENTITY,
        "activity",
        binding.connection_id,
    )


def test_the_system_identity_is_no_person_and_the_admin_files_an_unnamed_turn_under_it():
    assert not is_person(SYSTEM_IDENTITY)
    assert not is_person("")  # an alert turn stored before the identity was named
    assert is_person("U0ADA")
    assert (filed_under(""), filed_under("U0ADA")) == (SYSTEM_IDENTITY, "U0ADA")


def test_an_alert_threads_notes_go_with_the_next_turn_and_never_with_the_first(binding, slack_fake):
    root = root_message(slack_fake)
    first = services.start_alert_thread(binding, "Disk is full", root_ts=root)
    note_ts = slack_fake.bot_says(
        defaults.BOT_USER_ID, defaults.CHANNEL_ID, "Joined the group", thread_ts=root
    )
    assert services.file_system_note(first.session_id, message_ts=note_ts, text="Joined the group: db-2.")
    assert not services.file_system_note(first.session_id, message_ts=note_ts, text="Joined the group: db-2.")
    assert turns.start_turn(first.id).notes == ()
    turns.finish_turn(first.id, outcome=Turn.Outcome.COMPLETED, failed=False)
    reply = Turn.objects.create(
        session=first.session, connection=binding.connection, channel_id=defaults.CHANNEL_ID,
        message_ts="9999999999.000001", user_id="U0ADA", text="and now?", message_id="m-2",
    )  # fmt: skip

    assert turns.start_turn(reply.id).notes == ((SYSTEM_IDENTITY, "Joined the group: db-2."),)


def test_the_first_turn_of_an_alert_thread_names_no_person():
    assert build_turn_text(None, "Disk is full on db-1") == "Slack: alert: Disk is full on db-1"


def test_an_alert_threads_notes_are_labelled_as_the_alerts_in_the_next_turn():
    text = build_turn_text(
        Author("U0ADA", "Ada"), "and now?", [Note(None, "Joined the group: db-2.")], marker="untrusted-data-0"
    )
    assert text.endswith("<untrusted-data-0>\nSlack: alert: Joined the group: db-2.\n</untrusted-data-0>")


def test_an_alert_threads_note_is_activity_that_moves_its_expiry_as_a_message_does(binding, slack_fake):
    started = timezone.now() - timedelta(days=30)
    root = root_message(slack_fake)
    first = services.start_alert_thread(binding, "Disk is full", root_ts=root, now=started)
    noted = started + timedelta(days=20)

    services.file_system_note(
        first.session_id, message_ts="1800000000.000100", text="Fired again.", now=noted
    )

    session = Session.objects.get()
    assert (session.last_activity_at, session.expires_at) == (noted, noted + binding.thread_ttl)


def test_a_note_in_an_expired_alert_thread_does_not_bring_it_back_as_a_message_would_not(binding, slack_fake):
    started = timezone.now() - timedelta(days=200)
    first = services.start_alert_thread(
        binding, "Disk is full", root_ts=root_message(slack_fake), now=started
    )
    expired = Session.objects.values_list("last_activity_at", "expires_at").get()

    services.file_system_note(first.session_id, message_ts="1800000000.000100", text="Fired again.")

    assert Session.objects.values_list("last_activity_at", "expires_at").get() == expired
