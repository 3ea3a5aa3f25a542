"""A turn's intended posts in the database: recorded before they are sent, confirmed after, and what a
restarted runner does with them (the writer's Outbox against the Slack fake over real HTTP)."""

import asyncio

import pytest
from django.test import override_settings
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.clients import RetryPolicy, async_web_client
from kourier.slack.writer import IntentState, PostKind, notice_key, notice_metadata, post_notice
from sessions import services
from sessions.models import PostIntent, Turn
from sessions.outbox import TurnOutbox, confirm_post, intend_post
from sessions.routing import ChatMessage
from tests.factories import BindingFactory
from tests.fakes.slack import defaults

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
    assert PostIntent.objects.get().kind == PostIntent.Kind.NOTICE


def test_a_notice_is_recorded_then_confirmed_with_its_ts(slack_fake, turn, thread_ts):
    ts = notify(slack_fake, turn, thread_ts)
    intent = PostIntent.objects.get()
    assert (intent.key, intent.kind, intent.state, intent.ts) == (
        notice_key(turn.message_id),
        PostIntent.Kind.NOTICE,
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
