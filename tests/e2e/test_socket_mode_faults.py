"""Socket Mode under faults and with several replicas: sockets dropped or refreshed mid-burst, a
socket process SIGKILLed with envelopes in flight, two and three `manage.py socket` processes
sharing one Connection's envelopes. Each mention makes one turn and one answer; each press one decision.

Slack sends an unacked event again nearly at once, after ~1 min and after ~5 min; the fake here
does it at once, after 2 s and after 5 s, so that a test need not wait minutes for the later tries.
Its rate limits are off: Slack's budgets (a post a second per channel, 20 reactions.remove a
minute) would spread the answers to 50 mentions in one channel over minutes, and what is under test
here is how the envelopes get through, not the budgets (tests/kourier/slack cover those).
"""

import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from interactions.approval_prompts import APPROVE_ACTION
from interactions.models import Interaction
from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import (
    ROOMY_STREAM_BUDGETS,
    WAIT,
    mentions_at,
    pause_then_finish,
    replies,
    wait_for,
    wait_for_turns_to_end,
    wait_until_answered,
)
from tests.e2e.helpers import wait_for_prompt as wait_for_approval_prompt
from tests.fakes.a2a_agent import HITL_EXTENSION, steps
from tests.fakes.a2a_agent.kagent import PendingTool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(330, func_only=True)]

BURST = 50
SENT_AGAIN = (0.0, 2.0, 5.0)


@pytest.fixture
def slack_fake(make_slack_fake):
    return make_slack_fake(socket_retry_delays=SENT_AGAIN)


@pytest.fixture
def make_socket_world(make_socket_world):
    """Under test are the sockets: the answers to a burst are not made to wait for Slack's budgets."""

    def make(**options):
        return make_socket_world(env=ROOMY_STREAM_BUDGETS, **options)

    return make


@pytest.fixture
def agent(a2a_agent):
    a2a_agent.on_message(lambda received: [steps.text(f"answer to {received.text.rsplit(': ', 1)[-1]}")])
    return a2a_agent


def burst_with(world, count: int, fault, *, after_acks: int = 10) -> list[str]:
    """Sends ``count`` mentions at 50 a second and applies ``fault`` once ``after_acks`` were acked."""
    with ThreadPoolExecutor(max_workers=1) as background:
        burst = background.submit(mentions_at, world, count, 50)
        world.slack.wait_until(
            lambda: len([e for e in world.slack.socket_envelopes() if e.acked_at]) >= after_acks, timeout=WAIT
        )
        fault()
        return burst.result()


def each_answered_once(world, agent, sent: list[str]) -> None:
    wait_until_answered(world, sent, timeout=240)
    wait_for(
        lambda: Turn.objects.filter(state=Turn.State.DONE).count() == len(sent),
        "every turn done",
        timeout=120,
    )
    assert Turn.objects.count() == len(sent)
    assert len(agent.received) == len(sent)
    assert sorted(r.text.rsplit(": ", 1)[-1] for r in agent.received) == sorted(
        f"number {n}" for n in range(len(sent))
    )
    assert all(len(replies(world, ts)) == 1 for ts in sent)


def test_a_socket_dropped_mid_burst_loses_and_doubles_nothing(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url)
    sent = burst_with(world, BURST, lambda: world.slack.socket_drop())
    each_answered_once(world, agent, sent)
    assert world.slack.count("apps.connections.open") >= 2


def test_a_refresh_requested_mid_burst_loses_and_doubles_nothing(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url)
    sent = burst_with(
        world, BURST, lambda: world.slack.socket_disconnect("refresh_requested", close_after=2.0)
    )
    each_answered_once(world, agent, sent)

    # The new socket was open before Slack closed the old one (two seconds after asking for the refresh).
    def old_and_new():
        return sorted(world.slack.socket_connections(open_only=False), key=lambda c: c.id)[:2]

    wait_for(lambda: old_and_new()[0].closed_at is not None, "the old socket closed")
    old, new = old_and_new()
    assert old.close_reason == "refresh_requested"
    assert old.closed_at is not None
    assert new.opened_at < old.closed_at


def test_a_socket_process_killed_with_envelopes_in_flight_loses_and_doubles_nothing(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url)

    def kill_and_restart() -> None:
        world.stack.kill("socket1", signal.SIGKILL)
        world.start_replica("socket-restarted")

    sent = burst_with(world, BURST, kill_and_restart)
    each_answered_once(world, agent, sent)
    assert Turn.objects.count() == BURST  # every mention of the burst is one turn: none lost, none doubled


@pytest.mark.parametrize("replicas", [2, 3])
def test_replicas_share_the_connections_envelopes_and_each_event_makes_one_turn(
    make_socket_world, agent, replicas
):
    world = make_socket_world(agent_url=agent.url, replicas=replicas)
    sent = mentions_at(world, 30, per_second=50)
    each_answered_once(world, agent, sent)
    carried = {e.ack_connection for e in world.slack.socket_envelopes() if e.acked_in_time}
    assert len(carried) == replicas  # every replica took its share


def test_one_of_three_replicas_killed_mid_burst_loses_nothing(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url, replicas=3)
    sent = burst_with(world, BURST, lambda: world.stack.kill("socket2", signal.SIGKILL))
    each_answered_once(world, agent, sent)
    assert Turn.objects.count() == BURST  # every mention of the burst is one turn: none lost, none doubled


def test_presses_at_once_through_different_replicas_make_one_decision(make_socket_world, make_a2a_agent):
    tools = [PendingTool("call_add", "add_numbers", {"a": 2, "b": 3}, approval_id="adk-add")]
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish(tools))
    world = make_socket_world(
        agent_url=agent.url, dialect="kagent-v1", ask_user=True, tool_approvals=True, replicas=2
    )
    ts = world.mention("add them")
    prompt = wait_for_approval_prompt(world, ts)
    start = threading.Barrier(2)

    def press(user: str):
        start.wait()
        return world.slack.press_button(user, world.channel, prompt.ts, APPROVE_ACTION)

    with ThreadPoolExecutor(max_workers=2) as pool:
        deliveries = list(pool.map(press, [defaults.ADA, defaults.GRACE]))
    assert all(delivery.ok for delivery in deliveries)
    assert len({e.ack_connection for e in world.slack.socket_envelopes("block_actions")}) == 2
    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    wait_for_turns_to_end(world, 2)
    assert len(agent.received) == 2  # one decision sent, not two
    assert Interaction.objects.get().state == Interaction.State.ANSWERED
