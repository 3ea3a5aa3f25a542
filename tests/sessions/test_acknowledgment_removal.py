"""An ended turn's acknowledgment reaction comes off its message even when its runner could not take it
off: the runner died between ending the turn and removing it, or Slack failed the removal."""

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from kourier.slack.incoming import ChatMessage
from sessions import runner, services, tasks
from sessions.models import Turn
from tests.factories import BindingFactory
from tests.fakes.slack import defaults

pytestmark = pytest.mark.django_db

ACK = "hourglass_flowing_sand"


@pytest.fixture
def binding(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return BindingFactory(channels=[defaults.CHANNEL_ID], acknowledgment_emoji=ACK)


@pytest.fixture
def acknowledged_turn(binding, slack_fake, slack_client):
    """A person's mention, its turn taken and its reaction on, as a runner leaves them."""
    ts = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi", deliver="none"
    )
    services.route_message(
        binding.connection,
        ChatMessage(defaults.TEAM_ID, defaults.CHANNEL_ID, ts, None, defaults.ADA, "hi", True),
    )
    [ack] = services.claim_acknowledgments(Turn.objects.get().session_id)
    slack_client.reactions_add(channel=defaults.CHANNEL_ID, timestamp=ts, name=ACK)
    return Turn.objects.get(), ack


def reactions(slack_fake, turn):
    return slack_fake.message(defaults.CHANNEL_ID, turn.message_ts).reactions


def end(turn, *, ago: float) -> None:
    services.finish_turn(turn.pk, outcome="completed", failed=False)
    Turn.objects.filter(pk=turn.pk).update(ended_at=timezone.now() - timedelta(seconds=ago))


def test_the_sweep_removes_a_reaction_an_ended_turn_left_and_only_once(acknowledged_turn, slack_fake):
    turn, _ = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    end(turn, ago=120)  # its runner was killed before it removed the reaction
    tasks.recover_sessions()
    assert ACK not in reactions(slack_fake, turn)
    assert not Turn.objects.get(pk=turn.pk).acknowledged
    tasks.recover_sessions()
    assert slack_fake.count("reactions.remove") == 1


def test_the_sweep_leaves_a_turn_that_just_ended_or_still_runs_to_its_runner(acknowledged_turn, slack_fake):
    turn, _ = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    tasks.recover_sessions()
    end(turn, ago=0)
    tasks.recover_sessions()
    assert slack_fake.count("reactions.remove") == 0
    assert ACK in reactions(slack_fake, turn)


def test_a_removal_slack_fails_is_tried_again_on_the_next_sweep(acknowledged_turn, slack_fake):
    turn, _ = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    end(turn, ago=120)
    slack_fake.fail("reactions.remove", "http_503", times=None)  # past any retries of the client's
    tasks.recover_sessions()
    assert ACK in reactions(slack_fake, turn)
    assert Turn.objects.get(pk=turn.pk).acknowledged
    slack_fake.clear_faults()
    tasks.recover_sessions()
    assert ACK not in reactions(slack_fake, turn)


@pytest.fixture
def deferred_db(monkeypatch):
    """The runner's database calls, kept to be made on the test's thread (and in its transaction)
    once the coroutine is done: inside ``asyncio.run`` Django would open another connection."""
    calls = []

    def defer(fn):
        async def call(*args, **kwargs):
            calls.append((fn, args, kwargs))

        return call

    monkeypatch.setattr(runner, "_db", defer)

    def run_them() -> None:
        while calls:
            fn, args, kwargs = calls.pop(0)
            fn(*args, **kwargs)

    return run_them


@pytest.mark.parametrize("fault", ["http_500", "timeout"])
def test_a_runner_whose_removal_fails_goes_on_and_leaves_it_to_the_sweep(
    acknowledged_turn, slack_fake, deferred_db, fault
):
    turn, ack = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    services.finish_turn(turn.pk, outcome="completed", failed=False)
    slack_fake.fail("reactions.remove", fault, times=None)  # past any retries of the client's

    def remove() -> None:
        client = runner.async_web_client(ack.bot_token)
        client.timeout = 1  # a held answer (the timeout) is let go when the client gives up
        asyncio.run(runner.remove_acknowledgment(client, turn.pk, ack.channel_id, ack.message_ts, ack.emoji))
        deferred_db()

    remove()  # does not raise: the session goes on to its next turn
    assert Turn.objects.get(pk=turn.pk).acknowledged  # left for the sweep
    slack_fake.clear_faults()
    remove()
    assert ACK not in reactions(slack_fake, turn)
    assert not Turn.objects.get(pk=turn.pk).acknowledged
