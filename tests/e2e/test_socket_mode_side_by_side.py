"""HTTP and Socket Mode side by side: one service, one Connection over the Events API (the web
process) and another over Socket Mode (`manage.py socket`), each workspace answered its own way."""

import pytest

from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import (
    APP_TOKEN_ENV,
    BOT_TOKEN_ENV,
    SIGNING_SECRET_ENV,
    assert_acked,
    replies,
    wait_for_reply_count,
    wait_for_turns_to_end,
)
from tests.factories import BindingFactory, ConnectionFactory
from tests.fakes.a2a_agent import steps

pytestmark = pytest.mark.slow

OTHER_TEAM, OTHER_CHANNEL, BEA = "T0002", "C0002", "U0BEA"
OTHER_BOT_TOKEN = "xoxb-0002-0002-othersbottoken"
OTHER_APP_TOKEN = "xapp-1-A0OTHER-0002-otherapptoken"


def test_one_service_runs_a_connection_over_http_and_another_over_socket_mode(
    slack_fake, start_stack, a2a_agent
):
    a2a_agent.on_message(lambda received: [steps.text(f"answer to {received.text.rsplit(': ', 1)[-1]}")])
    slack_fake.add_workspace(OTHER_TEAM, bot_token=OTHER_BOT_TOKEN, app_token=OTHER_APP_TOKEN)
    slack_fake.add_user(BEA, "Bea Smith", team=OTHER_TEAM)
    slack_fake.add_channel(OTHER_CHANNEL, "agents", team=OTHER_TEAM, members=[BEA])
    over_http = ConnectionFactory(
        name="over-http", bot_token_env=BOT_TOKEN_ENV, signing_secret_env=SIGNING_SECRET_ENV
    )
    over_socket = ConnectionFactory(
        name="over-socket",
        bot_token_env="KOURIER_E2E_OTHER_BOT_TOKEN",
        signing_secret_env="KOURIER_E2E_OTHER_SIGNING_SECRET",
        app_token_env=APP_TOKEN_ENV,
    )
    BindingFactory(connection=over_http, channels=[defaults.CHANNEL_ID], agent_url=a2a_agent.url)
    BindingFactory(connection=over_socket, channels=[OTHER_CHANNEL], agent_url=a2a_agent.url)
    stack = start_stack(
        env={
            "SLACK_API_URL": slack_fake.url,
            BOT_TOKEN_ENV: defaults.BOT_TOKEN,
            SIGNING_SECRET_ENV: defaults.SIGNING_SECRET,
            "KOURIER_E2E_OTHER_BOT_TOKEN": OTHER_BOT_TOKEN,
            "KOURIER_E2E_OTHER_SIGNING_SECRET": "another-signing-secret",
            APP_TOKEN_ENV: OTHER_APP_TOKEN,
        }
    )
    slack_fake.deliver_events_to(f"{stack.base_url}/slack/events", defaults.SIGNING_SECRET)
    slack_fake.deliver_events_over_socket_mode(team=OTHER_TEAM)
    stack.start_socket("socket")
    slack_fake.wait_for_socket_connections(1, timeout=60)

    by_http = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} over http")
    assert_acked(slack_fake, by_http)
    other_bot = slack_fake.workspace(OTHER_TEAM).app.bot_user_id
    by_socket = slack_fake.user_says(BEA, OTHER_CHANNEL, f"<@{other_bot}> over the socket")

    class Thread:  # what replies() reads of a world
        def __init__(self, channel: str) -> None:
            self.slack, self.channel = slack_fake, channel

    wait_for_reply_count(Thread(defaults.CHANNEL_ID), by_http, 1)
    wait_for_reply_count(Thread(OTHER_CHANNEL), by_socket, 1)
    wait_for_turns_to_end(Thread(defaults.CHANNEL_ID), 2)
    assert [m.text for m in replies(Thread(defaults.CHANNEL_ID), by_http)] == ["answer to over http"]
    assert [m.text for m in replies(Thread(OTHER_CHANNEL), by_socket)] == ["answer to over the socket"]
    assert Turn.objects.count() == 2
    # Each came its own way: HTTP deliveries to the web for one, envelopes over the socket for the other.
    assert {d.url.startswith("socket:") for d in slack_fake.deliveries(ts=by_http)} == {False}
    assert {d.url.startswith("socket:") for d in slack_fake.deliveries(ts=by_socket)} == {True}
