"""The acknowledgment reaction: each waiting turn is claimed once, and an ended turn's reaction comes off
its message even when its runner could not take it off (the runner died between ending the turn and
removing it, or Slack failed the removal)."""

import asyncio
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from kourier.slack.clients import async_web_client, connection_workspace
from kourier.slack.incoming import ChatMessage
from sessions import acknowledgments, services, sweeps, turns
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory

# The reaction's row is written from the database threads async code uses: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)

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
    [ack] = acknowledgments.claim(Turn.objects.get().session_id)
    slack_client.reactions_add(channel=defaults.CHANNEL_ID, timestamp=ts, name=ACK)
    return Turn.objects.get(), ack


def reactions(slack_fake, turn):
    return slack_fake.message(defaults.CHANNEL_ID, turn.message_ts).reactions


def end(turn, *, ago: float) -> None:
    turns.finish_turn(turn.pk, outcome=Turn.Outcome.COMPLETED, failed=False)
    Turn.objects.filter(pk=turn.pk).update(ended_at=timezone.now() - timedelta(seconds=ago))


def test_the_sweep_removes_a_reaction_an_ended_turn_left_and_only_once(acknowledged_turn, slack_fake):
    turn, _ = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    end(turn, ago=120)  # its runner was killed before it removed the reaction
    sweeps.remove_stale_acknowledgments()
    assert ACK not in reactions(slack_fake, turn)
    assert not Turn.objects.get(pk=turn.pk).acknowledged
    sweeps.remove_stale_acknowledgments()
    assert slack_fake.count("reactions.remove") == 1


def test_the_sweep_leaves_a_turn_that_just_ended_or_still_runs_to_its_runner(acknowledged_turn, slack_fake):
    turn, _ = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    sweeps.remove_stale_acknowledgments()
    end(turn, ago=0)
    sweeps.remove_stale_acknowledgments()
    assert slack_fake.count("reactions.remove") == 0
    assert ACK in reactions(slack_fake, turn)


def test_a_removal_slack_fails_is_tried_again_on_the_next_sweep(acknowledged_turn, slack_fake):
    turn, _ = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    end(turn, ago=120)
    slack_fake.fail("reactions.remove", "http_503", times=None)  # past any retries of the client's
    sweeps.remove_stale_acknowledgments()
    assert ACK in reactions(slack_fake, turn)
    assert Turn.objects.get(pk=turn.pk).acknowledged
    slack_fake.clear_faults()
    sweeps.remove_stale_acknowledgments()
    assert ACK not in reactions(slack_fake, turn)


@pytest.mark.parametrize("fault", ["http_500", "timeout"])
def test_a_removal_that_fails_is_not_raised_and_is_left_to_the_sweep(
    acknowledged_turn, slack_fake, monkeypatch, fault
):
    turn, ack = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    turns.finish_turn(turn.pk, outcome=Turn.Outcome.COMPLETED, failed=False)
    # A held answer (the timeout) is let go when the client gives up.
    monkeypatch.setattr(acknowledgments, "_slack", lambda ack: async_web_client(ack.bot_token, timeout=1))
    slack_fake.fail("reactions.remove", fault, times=None)  # past any retries of the client's

    assert asyncio.run(acknowledgments.take_off(ack)) is False  # does not raise: the session goes on
    assert Turn.objects.get(pk=turn.pk).acknowledged  # left for the sweep
    slack_fake.clear_faults()
    assert asyncio.run(acknowledgments.take_off(ack)) is True
    assert ACK not in reactions(slack_fake, turn)
    assert not Turn.objects.get(pk=turn.pk).acknowledged


def test_a_reaction_already_gone_counts_as_removed(acknowledged_turn, slack_fake, slack_client):
    turn, ack = acknowledged_turn
    turns.finish_turn(turn.pk, outcome=Turn.Outcome.COMPLETED, failed=False)
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.DONE)
    slack_client.reactions_remove(channel=defaults.CHANNEL_ID, timestamp=turn.message_ts, name=ACK)
    assert asyncio.run(acknowledgments.take_off(ack)) is True  # Slack answers no_reaction
    assert not Turn.objects.get(pk=turn.pk).acknowledged


def spend(settings, method: str) -> None:
    """The workspace's budget of ``method`` is one a minute, and this test's one is spent."""
    from kourier.slack.budgets import Budget

    settings.SLACK_CALL_LIMITS = f"{method}=1/60"
    settings.SLACK_REACTION_WAIT_SECONDS = 5
    Budget(connection_workspace(Turn.objects.get().connection_id)).reserve(method, time.time(), max_wait=0)


def test_a_removal_whose_budget_has_no_slot_soon_is_not_sent_and_is_left_to_the_sweep(
    acknowledged_turn, slack_fake, settings
):
    turn, ack = acknowledged_turn
    turns.finish_turn(turn.pk, outcome=Turn.Outcome.COMPLETED, failed=False)
    spend(settings, "reactions.remove")
    assert asyncio.run(acknowledgments.take_off(ack)) is False
    assert slack_fake.count("reactions.remove") == 0  # not sent to draw a 429
    assert Turn.objects.get(pk=turn.pk).acknowledged  # the sweep's, on its next run
    assert ACK in reactions(slack_fake, turn)


def test_an_add_whose_budget_has_no_slot_soon_is_skipped_and_the_turn_left_to_run(
    binding, slack_fake, settings
):
    ts = slack_fake.user_says(
        defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi", deliver="none"
    )
    services.route_message(
        binding.connection,
        ChatMessage(defaults.TEAM_ID, defaults.CHANNEL_ID, ts, None, defaults.ADA, "hi", True),
    )
    spend(settings, "reactions.add")
    asyncio.run(acknowledgments.acknowledge_waiting_turns(Turn.objects.get().session_id))
    assert slack_fake.count("reactions.add") == 0
    assert slack_fake.message(defaults.CHANNEL_ID, ts).reactions == {}
    # Nothing to remove at its end, and a later look may still add it while the turn waits.
    assert not Turn.objects.get().acknowledged
    settings.SLACK_CALL_LIMITS = ""
    asyncio.run(acknowledgments.acknowledge_waiting_turns(Turn.objects.get().session_id))
    assert ACK in slack_fake.message(defaults.CHANNEL_ID, ts).reactions


def said(text="hello", *, ts="1700000001.000100", thread_ts=None):
    return ChatMessage(defaults.TEAM_ID, defaults.CHANNEL_ID, ts, thread_ts, defaults.ADA, text, True)


class TestClaims:
    def test_each_waiting_turn_is_claimed_once_in_message_order(self, binding):
        services.route_message(binding.connection, said("first"))
        services.route_message(
            binding.connection, said("second", ts="1700000002.000000", thread_ts="1700000001.000100")
        )
        session_id = Turn.objects.first().session_id
        claimed = acknowledgments.claim(session_id)
        assert [ack.message_ts for ack in claimed] == ["1700000001.000100", "1700000002.000000"]
        assert {ack.emoji for ack in claimed} == {ACK}
        assert acknowledgments.claim(session_id) == []

    def test_nothing_is_claimed_when_acknowledgment_is_turned_off(self, binding):
        binding.acknowledgment_enabled = False
        binding.save()
        services.route_message(binding.connection, said())
        assert acknowledgments.claim(Turn.objects.get().session_id) == []
        assert not Turn.objects.get().acknowledged

    def test_a_turn_that_has_ended_is_not_claimed(self, binding):
        services.route_message(binding.connection, said())
        Turn.objects.update(state=Turn.State.DONE)
        assert acknowledgments.claim(Turn.objects.get().session_id) == []


def test_an_acknowledgment_reads_only_the_columns_it_uses(acknowledged_turn):
    """The Binding's and the Connection's other columns cost more to build into the statement than
    the statement costs to run (docs/performance.md, issue 17 point 6)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    turn, claimed = acknowledged_turn
    Turn.objects.filter(pk=turn.pk).update(state=Turn.State.RUNNING)
    end(turn, ago=1)
    with CaptureQueriesContext(connection) as read:
        assert acknowledgments.of_turn(turn.pk) == claimed
    [statement] = [query["sql"] for query in read.captured_queries]
    assert "agent_url" not in statement
    assert "signing_secret_env" not in statement
