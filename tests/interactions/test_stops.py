"""A press of Stop as the door's listener hands it over, against the Slack fake: a channel member's
press stops the running turn and is told nothing privately (the thread is told); someone outside the
channel, a press after the end and a forged press are each told why, privately, and nothing changes.
The stop control of Slack's agent session names the thread: it stops the turn running there."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from django import db
from django.core.cache import caches

from audit.models import AuditEvent
from bindings.models import Binding
from interactions.stops import StopOutcome, receive_session_stop, receive_stop_press
from kourier.slack.incoming import SessionStop, SubmitPress
from sessions import stops
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory

pytestmark = pytest.mark.django_db(transaction=True)

OUTSIDER = "U0EVE"  # in the workspace, not in the channel


@pytest.fixture(autouse=True)
def _nobody_remembered():
    caches.create_connection("default").delete_many(
        [f"slack-members:{defaults.CHANNEL_ID}"] + [f"slack-bot:{user}" for user in (defaults.ADA, OUTSIDER)]
    )


@pytest.fixture
def running(slack_fake, settings, monkeypatch):
    """A turn that runs in a thread of the fake's channel; the app's calls so far forgotten."""
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    slack_fake.add_user(OUTSIDER, "Eve Outsider")
    binding = BindingFactory(channels=[defaults.CHANNEL_ID])
    root = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi", deliver="none"
    )
    turn = TurnFactory(
        session__binding=binding, session__thread_ts=root, message_ts=root, state=Turn.State.RUNNING
    )
    slack_fake.reset_calls()
    return turn


def press_stop(slack_fake, turn: Turn, user: str, *, value: str | None = None) -> StopOutcome:
    press = SubmitPress(
        value=str(turn.pk) if value is None else value,
        team_id=defaults.TEAM_ID,
        channel_id=defaults.CHANNEL_ID,
        message_ts=turn.message_ts,
        thread_ts=turn.message_ts,
        user_id=user,
        values={},
        response_url=slack_fake.response_url(user, defaults.CHANNEL_ID, turn.message_ts),
        action_id=stops.STOP_ACTION,
    )

    return in_a_worker_loop(
        receive_stop_press(press, connection_id=turn.connection_id, bot_token=slack_fake.bot_token)
    )


def stop_session(slack_fake, turn: Turn, user: str) -> StopOutcome:
    stop = SessionStop(user_id=user, channel_id=defaults.CHANNEL_ID, thread_ts=turn.session.thread_ts)
    return in_a_worker_loop(
        receive_session_stop(stop, connection_id=turn.connection_id, bot_token=slack_fake.bot_token)
    )


def in_a_worker_loop(listener) -> StopOutcome:
    """Runs the listener's coroutine as the door does: its database work on one thread of its own."""

    async def scenario() -> StopOutcome:
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            return await listener
        finally:
            await asyncio.get_running_loop().run_in_executor(database_thread, lambda: db.connection.close())

    return asyncio.run(scenario())


def told(slack_fake, user: str) -> list[str]:
    return [shown.text for shown in slack_fake.ephemerals(user, defaults.CHANNEL_ID)]


def test_a_members_press_stops_the_turn_and_tells_them_nothing_privately(running, slack_fake):
    assert press_stop(slack_fake, running, defaults.ADA) is StopOutcome.STOPPING
    assert stops.stopped_by(running.pk) == defaults.ADA
    assert told(slack_fake, defaults.ADA) == []


def test_someone_outside_the_channel_is_refused_privately_and_nothing_changes(running, slack_fake):
    assert press_stop(slack_fake, running, OUTSIDER) is StopOutcome.REFUSED
    assert told(slack_fake, OUTSIDER) == [stops.ONLY_MEMBERS_STOP]
    assert stops.stopped_by(running.pk) is None
    assert not AuditEvent.objects.filter(action="turn.stopped").exists()


def test_a_press_after_the_end_is_told_there_is_nothing_to_stop(running, slack_fake):
    Turn.objects.filter(pk=running.pk).update(state=Turn.State.DONE)
    assert press_stop(slack_fake, running, defaults.ADA) is StopOutcome.REFUSED
    assert told(slack_fake, defaults.ADA) == [stops.NOTHING_TO_STOP]
    assert stops.stopped_by(running.pk) is None


def test_a_second_press_is_told_there_is_nothing_to_stop(running, slack_fake):
    press_stop(slack_fake, running, defaults.ADA)
    assert press_stop(slack_fake, running, defaults.ADA) is StopOutcome.REFUSED
    assert told(slack_fake, defaults.ADA) == [stops.NOTHING_TO_STOP]
    assert AuditEvent.objects.filter(action="turn.stopped").count() == 1


@pytest.mark.parametrize("value", ["not-a-turn", "999999"])
def test_a_forged_press_is_told_it_is_not_a_stop_of_this_channel(running, slack_fake, value):
    assert press_stop(slack_fake, running, defaults.ADA, value=value) is StopOutcome.REFUSED
    assert told(slack_fake, defaults.ADA) == [stops.NOT_A_STOP]
    assert stops.stopped_by(running.pk) is None


def test_with_stopby_requester_someone_else_is_told_only_the_asker_may_stop(running, slack_fake):
    Binding.objects.filter(pk=running.session.binding_id).update(stop_by="requester")
    Turn.objects.filter(pk=running.pk).update(user_id=defaults.ADA)
    assert press_stop(slack_fake, running, defaults.GRACE) is StopOutcome.REFUSED
    assert told(slack_fake, defaults.GRACE) == [stops.ONLY_THE_REQUESTER_STOPS]
    assert stops.stopped_by(running.pk) is None


def test_slacks_session_stop_stops_the_turn_running_in_its_thread_and_audits_the_control(running, slack_fake):
    assert stop_session(slack_fake, running, defaults.GRACE) is StopOutcome.STOPPING

    assert stops.stopped_by(running.pk) == defaults.GRACE
    assert AuditEvent.objects.get(action="turn.stopped").details["control"] == stops.SLACK_SESSION_STOP
    assert told(slack_fake, defaults.GRACE) == []
    assert slack_fake.count("agents.sessions.setStatus") == 0  # the turn's end moves the session


def test_slacks_session_stop_by_someone_outside_the_channel_is_told_in_their_messages_and_changes_nothing(
    running, slack_fake
):
    assert stop_session(slack_fake, running, OUTSIDER) is StopOutcome.REFUSED

    # Slack shows no private line in a channel to someone outside it: they are told in the app's DM.
    assert told(slack_fake, OUTSIDER) == []
    [told_directly] = [m.text for m in slack_fake.app_messages_to(OUTSIDER)]
    assert told_directly == stops.ONLY_MEMBERS_STOP
    assert stops.stopped_by(running.pk) is None


def test_slacks_session_stop_refused_to_a_member_is_told_in_the_thread_to_them_alone(running, slack_fake):
    Binding.objects.filter(pk=running.session.binding_id).update(stop_by="requester")
    Turn.objects.filter(pk=running.pk).update(user_id=defaults.ADA)

    assert stop_session(slack_fake, running, defaults.GRACE) is StopOutcome.REFUSED

    [refusal] = slack_fake.ephemerals(defaults.GRACE, defaults.CHANNEL_ID)
    assert (refusal.text, refusal.thread_ts) == (stops.ONLY_THE_REQUESTER_STOPS, running.session.thread_ts)
    assert stops.stopped_by(running.pk) is None


def test_slacks_session_stop_with_no_turn_running_moves_the_session_off_processing_and_tells_nobody(
    running, slack_fake
):
    Turn.objects.filter(pk=running.pk).update(state=Turn.State.DONE)  # a runner that died, say

    assert stop_session(slack_fake, running, defaults.GRACE) is StopOutcome.REFUSED

    assert slack_fake.agent_session_status(defaults.CHANNEL_ID, running.session.thread_ts) == "active"
    assert told(slack_fake, defaults.GRACE) == []
    assert not AuditEvent.objects.filter(action="turn.stopped").exists()
