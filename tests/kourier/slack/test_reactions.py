"""Emoji reactions against the Slack fake, through the real AsyncWebClient over HTTP."""

import asyncio

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.reactions import add_reaction, remove_reaction
from simulator import defaults


@pytest.fixture
def thread_ts(slack_fake) -> str:
    return slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi")


def test_reacting_twice_and_removing_twice_are_harmless(slack_fake, thread_ts):
    async def scenario():
        client = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
        await add_reaction(client, defaults.CHANNEL_ID, thread_ts, "eyes")
        await add_reaction(client, defaults.CHANNEL_ID, thread_ts, "eyes")
        assert slack_fake.message(defaults.CHANNEL_ID, thread_ts).reactions == {
            "eyes": [defaults.BOT_USER_ID]
        }
        await remove_reaction(client, defaults.CHANNEL_ID, thread_ts, "eyes")
        await remove_reaction(client, defaults.CHANNEL_ID, thread_ts, "eyes")

    asyncio.run(scenario())
    assert [call.error for call in slack_fake.calls("reactions.add")] == [None, "already_reacted"]
    assert [call.error for call in slack_fake.calls("reactions.remove")] == [None, "no_reaction"]
    assert slack_fake.message(defaults.CHANNEL_ID, thread_ts).reactions == {}
