"""The product's Slack clients against the fake: what they repeat after a fault, and what they never do."""

import asyncio

import aiohttp
import pytest
from django.test import override_settings
from slack_sdk.errors import SlackApiError

from kourier.slack.clients import async_web_client, web_client
from tests.fakes.slack import defaults


@pytest.fixture
def client_for(slack_fake):
    def make(kind: str):
        with override_settings(SLACK_API_URL=slack_fake.url):
            return (
                web_client(slack_fake.bot_token) if kind == "sync" else async_web_client(slack_fake.bot_token)
            )

    return make


def call(client, method: str, **kwargs):
    result = getattr(client, method)(**kwargs)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_post_whose_answer_was_lost_is_not_sent_again(slack_fake, client_for, kind):
    slack_fake.fail("chat.postMessage", "disconnect_after_apply")
    with pytest.raises((OSError, aiohttp.ClientError)):  # the connection dropped after Slack applied it
        call(client_for(kind), "chat_postMessage", channel=defaults.CHANNEL_ID, text="once")
    assert [m.text for m in slack_fake.messages(defaults.CHANNEL_ID)] == ["once"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_update_whose_answer_was_lost_is_sent_again(slack_fake, client_for, kind):
    client = client_for(kind)
    ts = call(client, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    slack_fake.fail("chat.update", "disconnect_after_apply")
    call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="final")
    assert slack_fake.message(defaults.CHANNEL_ID, ts).text == "final"
    assert slack_fake.count("chat.update") == 2


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_rate_limited_call_is_sent_again_after_retry_after(slack_fake, client_for, kind):
    slack_fake.fail("reactions.add", "ratelimited", retry_after=1)
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hello")
    call(client_for(kind), "reactions_add", channel=defaults.CHANNEL_ID, timestamp=ts, name="eyes")
    assert [c.status for c in slack_fake.calls("reactions.add")] == [429, 200]


def test_the_error_of_a_refused_call_reaches_the_caller(slack_fake, client_for):
    with pytest.raises(SlackApiError) as refused:
        call(client_for("async"), "chat_postMessage", channel="C0NOWHERE", text="x")
    assert refused.value.response["error"] == "channel_not_found"
