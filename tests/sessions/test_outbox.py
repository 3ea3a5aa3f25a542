"""A turn's intended posts in the database: recorded before they are sent, confirmed after, and what a
restarted runner does with them (the writer's Outbox against the Slack fake over real HTTP)."""

import asyncio
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.clients import RetryPolicy, async_web_client
from kourier.slack.incoming import ChatMessage
from kourier.slack.outbox import IntentState, PostKind, notice_key, notice_metadata, post_notice
from sessions import services, sweeps
from sessions.models import PostIntent, Turn
from sessions.outbox import TurnOutbox, confirm_post, intend_post
from simulator import defaults
from tests.factories import BindingFactory

# The outbox's own threads write the rows: they must be committed for them to be seen.
pytestmark = pytest.mark.django_db(transaction=True)

QUICK = RetryPolicy(backoff=0.01, max_backoff=0.02)


@pytest.fixture
def thread_ts(slack_fake) -> str:
    return slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi")


@pytest.fixture
def turn(thread_ts) -> Turn:
    binding = BindingFactory(channels=[defaults.CHANNEL_ID])
    services.route_message(
        binding.connection,
        ChatMessage(defaults.TEAM_ID, defaults.CHANNEL_ID, thread_ts, None, defaults.ADA, "hi", True),
    )
    return Turn.objects.get()


def client_for(fake):
    with override_settings(SLACK_API_URL=fake.url):
        return async_web_client(fake.bot_token, timeout=1, policy=QUICK)


def notify(fake, turn: Turn, thread_ts: str) -> str:
    """The turn's failure notice, posted by a runner of its own (a fresh process each time)."""
    key = notice_key(turn.message_id)
    return asyncio.run(
        post_notice(
            client_for(fake),
            defaults.CHANNEL_ID,
            thread_ts,
            "It failed.",
            key=key,
            outbox=TurnOutbox(turn.pk),
        )
    )


def test_an_intent_is_new_then_pending_until_confirmed(turn):
    assert intend_post(turn.pk, "k1", PostKind.NOTICE.value).state is IntentState.NEW
    pending = intend_post(turn.pk, "k1", PostKind.NOTICE.value)
    assert pending.state is IntentState.PENDING
    assert pending.since is not None
    confirm_post("k1", "1700000000.000100")
    confirmed = intend_post(turn.pk, "k1", PostKind.NOTICE.value)
    assert (confirmed.state, confirmed.ts) == (IntentState.CONFIRMED, "1700000000.000100")
    assert PostIntent.objects.get().kind == PostKind.NOTICE


def test_a_notice_is_recorded_then_confirmed_with_its_ts(slack_fake, turn, thread_ts):
    ts = notify(slack_fake, turn, thread_ts)
    intent = PostIntent.objects.get()
    assert (intent.key, intent.kind, intent.state, intent.ts) == (
        notice_key(turn.message_id),
        PostKind.NOTICE,
        PostIntent.State.CONFIRMED,
        ts,
    )
    assert intent.turn == turn


def test_a_confirmed_notice_is_not_posted_again_after_a_restart(slack_fake, turn, thread_ts):
    first = notify(slack_fake, turn, thread_ts)
    assert notify(slack_fake, turn, thread_ts) == first
    assert len(slack_fake.thread(defaults.CHANNEL_ID, thread_ts)) == 2
    assert slack_fake.count("chat.postMessage") == 1


def test_an_intended_notice_that_reached_slack_is_found_not_posted_again(slack_fake, turn, thread_ts):
    key = notice_key(turn.message_id)
    intend_post(turn.pk, key, PostKind.NOTICE.value)  # the earlier runner died after posting
    earlier = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
    posted = asyncio.run(
        earlier.chat_postMessage(
            channel=defaults.CHANNEL_ID, thread_ts=thread_ts, text="It failed.", metadata=notice_metadata(key)
        )
    )["ts"]
    assert notify(slack_fake, turn, thread_ts) == posted
    assert len(slack_fake.thread(defaults.CHANNEL_ID, thread_ts)) == 2
    assert PostIntent.objects.get().ts == posted


def test_an_intended_notice_that_never_reached_slack_is_posted(slack_fake, turn, thread_ts):
    intend_post(turn.pk, notice_key(turn.message_id), PostKind.NOTICE.value)  # died before posting
    ts = notify(slack_fake, turn, thread_ts)
    [_, notice] = slack_fake.thread(defaults.CHANNEL_ID, thread_ts)
    assert notice.ts == ts
    assert PostIntent.objects.get().state == PostIntent.State.CONFIRMED


def test_a_notice_whose_post_timed_out_after_slack_made_it_is_posted_once(slack_fake, turn, thread_ts):
    slack_fake.fail("chat.postMessage", "timeout_after_apply")
    ts = notify(slack_fake, turn, thread_ts)
    [_, notice] = slack_fake.thread(defaults.CHANNEL_ID, thread_ts)
    assert notice.ts == ts
    assert slack_fake.count("chat.postMessage") == 1
    assert PostIntent.objects.get().ts == ts


class TestOwedNotices:
    """Beat's sweep posts the notices ended turns could not (Slack refused them past the retries)."""

    @pytest.fixture
    def owed(self, slack_fake, turn, settings, monkeypatch):
        settings.SLACK_API_URL = slack_fake.url
        monkeypatch.setenv(turn.connection.bot_token_env, slack_fake.bot_token)
        key = notice_key(turn.message_id)
        intend_post(turn.pk, key, PostKind.NOTICE.value, "It failed.")  # the runner's attempt failed
        Turn.objects.filter(pk=turn.pk).update(state=Turn.State.FAILED, outcome="failed")
        PostIntent.objects.update(created_at=timezone.now() - timedelta(minutes=5))
        return key

    def test_a_notice_an_ended_turn_could_not_post_is_posted_once(self, slack_fake, owed, thread_ts):
        sweeps.post_owed_notices()
        sweeps.post_owed_notices()
        [_, notice] = slack_fake.thread(defaults.CHANNEL_ID, thread_ts)
        assert notice.text == "It failed."
        assert notice.metadata == notice_metadata(owed)
        assert PostIntent.objects.get().ts == notice.ts

    def test_a_notice_that_reached_slack_after_all_is_found_not_posted_again(
        self, slack_fake, owed, thread_ts
    ):
        earlier = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
        posted = asyncio.run(
            earlier.chat_postMessage(
                channel=defaults.CHANNEL_ID,
                thread_ts=thread_ts,
                text="It failed.",
                metadata=notice_metadata(owed),
            )
        )["ts"]
        sweeps.post_owed_notices()
        assert len(slack_fake.thread(defaults.CHANNEL_ID, thread_ts)) == 2
        assert PostIntent.objects.get().ts == posted

    def test_a_running_turns_notice_is_left_to_its_runner(self, slack_fake, owed, thread_ts):
        Turn.objects.update(state=Turn.State.RUNNING)
        sweeps.post_owed_notices()
        assert slack_fake.count("chat.postMessage") == 0
        assert PostIntent.objects.get().state == PostIntent.State.INTENDED
