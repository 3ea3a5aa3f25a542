"""Pytest fixtures for the Slack fake, the workspace simulator of simulator (loaded as a plugin by tests/conftest.py).

``slack_fake``: a started fake with the default world of defaults.py (workspace T0001, bot U0BOT,
channel C0001 with Ada U0ADA and Grace U0GRACE), stopped after the test. ``make_slack_fake`` builds
more, with options (a ManualClock, other rate limits, short stream lifetimes); ``slack_client`` and
``async_slack_client`` are the real slack_sdk clients pointed at ``slack_fake`` with the bot token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.web.async_client import AsyncWebClient

from simulator import defaults
from simulator.fake import SlackFake

CLIENT_TIMEOUT_SECONDS = 10


@pytest.fixture
def make_slack_fake() -> Iterator[Callable[..., SlackFake]]:
    """Build started fakes: ``make_slack_fake(clock=ManualClock(), populate=True, **SlackFake options)``."""
    made: list[SlackFake] = []

    def make(*, populate: bool = True, **options: Any) -> SlackFake:
        fake = SlackFake(**options)
        if populate:
            defaults.populate(fake)
        made.append(fake.start())
        return fake

    yield make
    for fake in made:
        fake.stop()
    bugs = [error for fake in made for error in fake.internal_errors]
    if bugs:
        pytest.fail("the Slack fake failed while answering the app:\n" + "\n".join(bugs))


@pytest.fixture
def slack_fake(make_slack_fake: Callable[..., SlackFake]) -> SlackFake:
    return make_slack_fake()


@pytest.fixture
def slack_client(slack_fake: SlackFake) -> WebClient:
    return WebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=CLIENT_TIMEOUT_SECONDS)


@pytest.fixture
def async_slack_client(slack_fake: SlackFake) -> AsyncWebClient:
    return AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=CLIENT_TIMEOUT_SECONDS)
