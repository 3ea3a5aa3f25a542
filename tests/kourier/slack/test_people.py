"""The person's email from users.info (kourier/slack/people.py), against the Slack fake."""

import asyncio
import uuid

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.people import person_email
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
