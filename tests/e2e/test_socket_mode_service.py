"""`manage.py socket` starts and stops like a service, and takes bad input over the socket as the
HTTP door takes it: the real process against the Slack fake's websocket."""

import json
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from sessions.models import Session, Turn
from simulator import defaults
from tests.e2e.helpers import (
    APP_TOKEN_ENV,
    BOT_TOKEN_ENV,
    SIGNING_SECRET_ENV,
    WAIT,
    mentions_at,
    replies,
    wait_for_reply_count,
    wait_for_turns_to_end,
    wait_until_answered,
)
from tests.factories import BindingFactory, ConnectionFactory
from tests.fakes.a2a_agent import steps
from tests.support.private_redis import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(330, func_only=True)]

EXIT_WAIT = 60.0  # a bound to fail on: a busy host takes seconds to start Django


@pytest.fixture
def agent(a2a_agent):
    a2a_agent.on_message(lambda received: [steps.text(f"answer to {received.text.rsplit(': ', 1)[-1]}")])
    return a2a_agent


def socket_alone(slack_fake, start_stack, **env):
    """A Connection with an app token, no worker: only `manage.py socket`, to watch it start."""
    connection = ConnectionFactory(
        name="acme",
        bot_token_env=BOT_TOKEN_ENV,
        signing_secret_env=SIGNING_SECRET_ENV,
        app_token_env=APP_TOKEN_ENV,
    )
    BindingFactory(connection=connection, channels=[defaults.CHANNEL_ID])
    slack_fake.deliver_events_over_socket_mode()
    stack = start_stack(
        env={
            "SLACK_API_URL": slack_fake.url,
            BOT_TOKEN_ENV: defaults.BOT_TOKEN,
            SIGNING_SECRET_ENV: defaults.SIGNING_SECRET,
            APP_TOKEN_ENV: defaults.APP_TOKEN,
        },
        web=False,
        workers=0,
    )
    process = stack.start_socket("socket", env=env)
    return stack, process


def exits_with_one_line(stack, process) -> str:
    """The process exits 1 and says why in one line, with no traceback; returns that line."""
    assert process.wait(timeout=EXIT_WAIT) == 1
    log = stack.log_tail("socket", lines=200)
    assert "Traceback" not in log
    [line] = [line for line in log.splitlines() if line.startswith("CommandError:")]
    return line


def test_a_wrong_app_token_is_one_line_and_exit_status_1(slack_fake, start_stack):
    stack, process = socket_alone(slack_fake, start_stack, **{APP_TOKEN_ENV: "xapp-1-not-the-token"})
    line = exits_with_one_line(stack, process)
    assert 'Connection "acme": Slack refused its app token (invalid_auth)' in line
    assert "xapp-1-not-the-token" not in stack.log_tail("socket", lines=200)  # never a secret in the log


def test_a_token_revoked_while_running_stops_the_process_with_one_line(slack_fake, start_stack):
    stack, process = socket_alone(slack_fake, start_stack)
    slack_fake.wait_for_socket_connections(1, timeout=EXIT_WAIT)
    slack_fake.revoke_token(defaults.APP_TOKEN)  # its websockets close; opening another is refused
    line = exits_with_one_line(stack, process)
    assert "(token_revoked)" in line


def test_a_database_that_is_not_there_is_one_line_and_exit_status_1(slack_fake, start_stack):
    nowhere = f"postgres://kourier@127.0.0.1:{free_port()}/kourier"
    stack, process = socket_alone(slack_fake, start_stack, DATABASE_URL=nowhere)
    line = exits_with_one_line(stack, process)
    assert line.startswith("CommandError: The database is not reachable:")
    assert slack_fake.count("apps.connections.open") == 0


def test_it_reconnects_after_slack_closes_the_socket_and_carries_on(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url)
    [first] = world.slack.socket_connections()
    world.slack.socket_drop(connection=first.id)
    world.slack.wait_until(
        lambda: [c.id for c in world.slack.socket_connections()] not in ([], [first.id]), timeout=WAIT
    )
    ts = world.mention("still there?")
    wait_for_reply_count(world, ts, 1)
    assert world.slack.count("apps.connections.open") == 2


def test_sigterm_mid_burst_exits_within_the_grace_period_and_loses_nothing(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url, replicas=2)
    with ThreadPoolExecutor(max_workers=1) as background:
        burst = background.submit(mentions_at, world, 20, 10)
        world.slack.wait_until(lambda: len([e for e in world.slack.socket_envelopes() if e.acked_at]) >= 5)
        process = world.stack.processes["socket1"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0  # its --grace-seconds is 20
        sent = burst.result()
    assert "Socket Mode: stopped." in world.stack.log_tail("socket1")
    wait_until_answered(world, sent)
    wait_for_turns_to_end(world, len(sent))
    assert Turn.objects.count() == len(sent)
    assert all(len(replies(world, ts)) == 1 for ts in sent)


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        ('{"envelope_id": "e-cut-short", "type": "events_api", "payload": {"type": "event_ca', "not JSON"),
        (
            json.dumps({"envelope_id": "e-unknown", "type": "no_such_type", "payload": {}}),
            "envelope type not used",
        ),
        (
            json.dumps(
                {"envelope_id": "e-shape", "type": "events_api", "payload": {"type": "event_callback"}}
            ),
            "event_callback without an event",
        ),
        (
            json.dumps(
                {"envelope_id": "e-actions", "type": "interactive", "payload": {"type": "block_actions"}}
            ),
            "block_actions without actions",
        ),
    ],
)
def test_bad_input_over_the_socket_is_acked_logged_once_and_changes_nothing(
    make_socket_world, agent, frame, why
):
    world = make_socket_world(agent_url=agent.url)
    envelope_id = json.loads(frame)["envelope_id"] if why != "not JSON" else "e-cut-short"
    world.slack.send_socket_frame(frame)
    world.stack.wait_for_log("socket1", why, timeout=WAIT)
    ts = world.mention("and then a good one")  # the process carries on
    wait_for_reply_count(world, ts, 1)
    log = world.stack.log_tail("socket1", lines=500)
    assert log.count(why) == 1
    assert log.count("slack.envelope_unreadable") + log.count("slack.envelope_ignored") == 1
    assert json.loads(world.slack.socket_refused_frames[0]) == {"envelope_id": envelope_id}
    assert Session.objects.count() == 1  # only the good mention's
    assert [m.text for m in replies(world, ts)] == ["answer to and then a good one"]
