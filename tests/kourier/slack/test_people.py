"""Who people are (kourier/slack/people.py), against the Slack fake: the person's email from
users.info; a channel's members, kept a minute, forgotten when Slack says someone left or joined."""

import asyncio
import uuid

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.people import channel_members, forget_channel_members, person_email
from simulator import defaults


@pytest.fixture
def team() -> str:
    """A workspace id of this test's own: the cache is shared across tests."""
    return f"T{uuid.uuid4().hex[:10].upper()}"


@pytest.fixture
def client(slack_fake) -> AsyncWebClient:
    return AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)


def test_the_email_users_info_shows_is_read_once_and_kept(slack_fake, client, team):
    first = asyncio.run(person_email(client, team, defaults.ADA))
    again = asyncio.run(person_email(client, team, defaults.ADA))

    assert first == again == defaults.ADA_EMAIL
    assert len(slack_fake.calls("users.info")) == 1


def test_a_profile_without_an_email_gives_none(slack_fake, client, team):
    assert asyncio.run(person_email(client, team, defaults.GRACE)) is None


def test_an_unknown_user_gives_none(slack_fake, client, team):
    assert asyncio.run(person_email(client, team, "U0NOBODY")) is None


def test_a_channels_members_are_kept_and_read_again_once_someone_left(slack_fake, client):
    # The cache is shared across tests: this test's own channel.
    channel = f"C{uuid.uuid4().hex[:10].upper()}"
    slack_fake.add_channel(channel, "ops", members=[defaults.ADA, defaults.GRACE])
    assert defaults.GRACE in asyncio.run(channel_members(client, channel))
    slack_fake.leave(channel, defaults.GRACE)
    assert defaults.GRACE in asyncio.run(channel_members(client, channel))  # kept: Slack not asked again
    asyncio.run(forget_channel_members(channel))  # Slack said so: member_left_channel
    assert defaults.GRACE not in asyncio.run(channel_members(client, channel))
    assert len(slack_fake.calls("conversations.members")) == 2
