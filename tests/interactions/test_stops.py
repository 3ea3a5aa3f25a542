"""A press of Stop as the door's listener hands it over, against the Slack fake: a channel member's
press stops the running turn and is told nothing privately (the thread is told); someone outside the
channel, a press after the end and a forged press are each told why, privately, and nothing changes."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from django import db
from django.core.cache import caches

from audit.models import AuditEvent
from bindings.models import Binding
from interactions.stops import StopOutcome, receive_stop_press
from kourier.slack.incoming import SubmitPress
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

    async def scenario() -> StopOutcome:
        database_thread = ThreadPoolExecutor(max_workers=1)
        asyncio.get_running_loop().set_default_executor(database_thread)
        try:
            return await receive_stop_press(
                press, connection_id=turn.connection_id, bot_token=slack_fake.bot_token
            )
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
