"""A thread's Slack agent session against the Slack fake: processing while the turn runs and active at
its end; a workspace without the feature, or an app that does not take the stop event, leaves the turn
its own Stop button; a failure never fails the turn."""

import asyncio
import time
import uuid

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack import agent_sessions
from kourier.slack.agent_sessions import AgentSession
from kourier.slack.budgets import Budget
from kourier.slack.clients import async_web_client
from simulator import defaults


@pytest.fixture(autouse=True)
def _sessions_available_again():
    agent_sessions.reset_agent_session_availability()
    yield
    agent_sessions.reset_agent_session_availability()


@pytest.fixture
def root(slack_fake) -> str:
    return slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi")


def session_of(slack_fake, root: str, connection_key: str = "1") -> AgentSession:
    client = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
    return AgentSession(client, defaults.CHANNEL_ID, root, connection_key)


def run_turn(session: AgentSession) -> bool:
    async def turn() -> bool:
        shows_stop = await session.processing()
        await session.active()
        return shows_stop

    return asyncio.run(turn())


def test_the_session_is_processing_while_the_turn_runs_and_active_after(slack_fake, root):
    assert run_turn(session_of(slack_fake, root)) is True

    assert slack_fake.agent_session_history(defaults.CHANNEL_ID, root) == ["processing", "active"]


def test_a_workspace_without_agent_sessions_is_asked_once_per_connection(slack_fake, root):
    slack_fake.configure_workspace(agent_sessions=False)

    assert run_turn(session_of(slack_fake, root)) is False
    assert run_turn(session_of(slack_fake, root)) is False  # the Connection's next turn asks no more

    assert slack_fake.count("agents.sessions.setStatus") == 1
    assert slack_fake.agent_session_status(defaults.CHANNEL_ID, root) is None


def test_an_app_not_subscribed_to_the_stop_keeps_its_button_and_still_ends_processing(slack_fake, root):
    slack_fake.configure_workspace(agent_session_stopped_subscribed=False)

    assert run_turn(session_of(slack_fake, root)) is False

    assert slack_fake.agent_session_history(defaults.CHANNEL_ID, root) == ["processing", "active"]


def test_a_failed_call_leaves_the_turn_its_button_and_the_next_turn_tries_again(slack_fake, root):
    slack_fake.fail("agents.sessions.setStatus", "internal_error")

    assert run_turn(session_of(slack_fake, root)) is False
    assert slack_fake.agent_session_status(defaults.CHANNEL_ID, root) is None  # never processing: left alone

    assert run_turn(session_of(slack_fake, root)) is True


def test_settling_moves_a_session_left_processing_to_active(slack_fake, root):
    asyncio.run(session_of(slack_fake, root).processing())

    asyncio.run(session_of(slack_fake, root).settle())

    assert slack_fake.agent_session_status(defaults.CHANNEL_ID, root) == "active"


def test_a_status_whose_budget_has_no_slot_soon_is_not_sent_and_the_turn_keeps_its_button(
    slack_fake, root, settings
):
    settings.SLACK_API_URL = slack_fake.url
    settings.SLACK_CALL_LIMITS = "agents.sessions.setStatus=1/20"  # a slot within the client's 60 s
    settings.SLACK_REACTION_WAIT_SECONDS = 5
    workspace = f"T-{uuid.uuid4().hex}"
    Budget(workspace).reserve("agents.sessions.setStatus", time.time(), max_wait=0)  # this minute's one
    session = AgentSession(
        async_web_client(slack_fake.bot_token, workspace=workspace), defaults.CHANNEL_ID, root, "1"
    )

    assert run_turn(session) is False  # not held up for 20 s: the Stop button shows instead

    assert slack_fake.count("agents.sessions.setStatus") == 0  # not sent to draw a 429
