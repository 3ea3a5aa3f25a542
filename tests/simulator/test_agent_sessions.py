"""Slack's agent sessions in the fake: agents.sessions.setStatus through the real slack_sdk client, and
the native stop control that stops the thread's streams and sends agent_session_stopped."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient

from simulator import FakeMisuse, SlackFake
from simulator.agent_sessions import NO_STOP_SUBSCRIPTION
from simulator.defaults import ADA, CHANNEL_ID, GRACE, TEAM_ID
from tests.simulator.helpers import slack_error

from .receiver import Receiver


@pytest.fixture
def root(slack_fake: SlackFake) -> str:
    return slack_fake.user_says(ADA, CHANNEL_ID, f"{slack_fake.bot_mention} find it")


def test_a_sessions_status_is_set_per_thread_and_follows_each_call(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    set_status = slack_client.agents_sessions_setStatus

    assert set_status(channel_id=CHANNEL_ID, thread_ts=root, status="processing")["ok"] is True
    set_status(channel_id=CHANNEL_ID, thread_ts=root, status="active")

    assert slack_fake.agent_session_history(CHANNEL_ID, root) == ["processing", "active"]
    assert slack_fake.agent_session_status(CHANNEL_ID, root) == "active"
    assert slack_fake.agent_session_status(CHANNEL_ID, "1.000001") is None


def test_a_status_call_is_refused_with_slacks_errors(slack_client: WebClient, root: str) -> None:
    set_status = slack_client.agents_sessions_setStatus

    assert slack_error(set_status, channel_id=CHANNEL_ID, thread_ts=root, status="busy") == "invalid_status"
    assert slack_error(set_status, channel_id=CHANNEL_ID, status="processing") == "thread_ts_required"
    assert slack_error(set_status, channel_id="C0NOWHERE", thread_ts=root, status="active") == (
        "channel_not_found"
    )
    long_title = "t" * 201
    assert slack_error(
        set_status, channel_id=CHANNEL_ID, thread_ts=root, status="active", title=long_title
    ) == ("invalid_arguments")


def test_a_workspace_without_agent_sessions_answers_feature_disabled(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    slack_fake.configure_workspace(agent_sessions=False)

    error = slack_error(
        slack_client.agents_sessions_setStatus, channel_id=CHANNEL_ID, thread_ts=root, status="active"
    )

    assert error == "feature_disabled"
    assert slack_fake.agent_session_status(CHANNEL_ID, root) is None


def test_an_app_not_subscribed_to_the_stop_is_warned_and_its_indicator_has_no_stop(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    slack_fake.configure_workspace(agent_session_stopped_subscribed=False)

    answer = slack_client.agents_sessions_setStatus(
        channel_id=CHANNEL_ID, thread_ts=root, status="processing"
    )

    assert answer["warning"] == NO_STOP_SUBSCRIPTION
    with pytest.raises(FakeMisuse):
        slack_fake.user_stops_agent_session(ADA, CHANNEL_ID, root)


def test_the_stop_shows_only_while_the_session_is_processing(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    with pytest.raises(FakeMisuse):
        slack_fake.user_stops_agent_session(ADA, CHANNEL_ID, root)  # no session yet
    slack_client.agents_sessions_setStatus(channel_id=CHANNEL_ID, thread_ts=root, status="active")
    with pytest.raises(FakeMisuse):
        slack_fake.user_stops_agent_session(ADA, CHANNEL_ID, root)


def test_the_stop_ends_the_threads_streams_and_tells_the_app_which_it_stopped_leaving_the_status(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient, root: str
) -> None:
    stream = slack_client.chat_startStream(
        channel=CHANNEL_ID,
        thread_ts=root,
        recipient_user_id=ADA,
        recipient_team_id=TEAM_ID,
        markdown_text="hi",
    )["ts"]
    slack_client.agents_sessions_setStatus(channel_id=CHANNEL_ID, thread_ts=root, status="processing")

    app_fake.user_stops_agent_session(GRACE, CHANNEL_ID, root)

    app_fake.wait_until(lambda: receiver.events()[-1]["type"] == "agent_session_stopped")
    event = receiver.events()[-1]
    assert event == {
        "type": "agent_session_stopped",
        "channel": CHANNEL_ID,
        "thread_ts": root,
        "user": GRACE,
        "event_ts": event["event_ts"],
        "streaming_message_ts": [stream],
    }
    assert slack_error(slack_client.chat_appendStream, channel=CHANNEL_ID, ts=stream, markdown_text="x") == (
        "stopped_by_user"
    )
    assert app_fake.agent_session_status(CHANNEL_ID, root) == "processing"  # the app moves it
