"""Socket Mode end to end: the Slack fake's websocket, the real `manage.py socket` process(es), the
real workers, a real a2a-sdk agent. No web process: every event and press comes over the socket."""

import json

import pytest

from interactions.approval_prompts import APPROVE_ACTION
from interactions.models import Interaction
from interactions.prompts import SUBMIT_ACTION
from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import (
    ROOMY_STREAM_BUDGETS,
    WAIT,
    answers_received,
    ask_then_finish,
    decisions_received,
    mentions_at,
    pause_then_finish,
    replies,
    wait_for,
    wait_for_reply_count,
    wait_for_turns_to_end,
    wait_until_answered,
)
from tests.e2e.helpers import wait_for_prompt as wait_for_approval_prompt
from tests.e2e.helpers import wait_for_prompt as wait_for_question_prompt
from tests.fakes.a2a_agent import HITL_EXTENSION, steps
from tests.fakes.a2a_agent.gates import Gate
from tests.fakes.a2a_agent.kagent import PendingTool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(330, func_only=True)]

BURST = 50


@pytest.fixture
def agent(a2a_agent):
    a2a_agent.on_message(lambda received: [steps.text(f"answer to {received.text.rsplit(': ', 1)[-1]}")])
    return a2a_agent


def test_a_mention_over_the_socket_is_answered_in_its_thread(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url, beat=True)  # the whole service, no web process
    ts = world.mention("hello")
    wait_for_reply_count(world, ts, 1)
    wait_for_turns_to_end(world, 1)
    [answer] = replies(world, ts)
    assert answer.text == "answer to hello"
    assert Turn.objects.get().state == Turn.State.DONE
    [envelope] = [e for e in world.slack.socket_envelopes("app_mention")]
    assert envelope.acked_in_time


def test_a_reply_sent_while_the_agent_works_is_queued_and_answered_after(make_socket_world, a2a_agent):
    gate = Gate("first turn")
    a2a_agent.on_message(
        lambda received: (
            [steps.wait_for(gate), steps.text("first answer")]
            if received.text.endswith("start")
            else [steps.text("second answer")]
        )
    )
    world = make_socket_world(agent_url=a2a_agent.url)
    ts = world.mention("start")
    gate.wait_reached(1, timeout=WAIT)
    world.says("second", user=defaults.GRACE, thread_ts=ts)
    wait_for(lambda: Turn.objects.count() == 2, "two turns")
    assert list(Turn.objects.order_by("message_ts").values_list("state", flat=True)) == [
        Turn.State.RUNNING,
        Turn.State.QUEUED,
    ]
    gate.open()
    wait_for_turns_to_end(world, 2)
    assert [m.text for m in replies(world, ts)] == ["first answer", "second answer"]


def test_a_question_is_answered_by_a_press_over_the_socket(make_socket_world, make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(ask_then_finish)
    world = make_socket_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set up the service")
    prompt = wait_for_question_prompt(world, ts)
    delivery = world.slack.press_button(
        defaults.GRACE,
        world.channel,
        prompt.ts,
        SUBMIT_ACTION,
        choices={"answer-0": "0", "answer-1": ["0"], "answer-2": "Use the backups"},
    )
    assert delivery.ok  # acked over the socket within three seconds
    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    assert answers_received(agent.received[1])["answers"][0] == {"answer": ["PostgreSQL"]}
    world.slack.wait_until(
        lambda: any("Thanks, carrying on." in m.text for m in replies(world, ts)), timeout=WAIT
    )


def test_an_approval_is_decided_by_a_press_over_the_socket(make_socket_world, make_a2a_agent):
    tools = [PendingTool("call_add", "add_numbers", {"a": 2, "b": 3}, approval_id="adk-add")]
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish(tools))
    world = make_socket_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True, tool_approvals=True)
    ts = world.mention("add them")
    prompt = wait_for_approval_prompt(world, ts)
    delivery = world.slack.press_button(defaults.GRACE, world.channel, prompt.ts, APPROVE_ACTION)
    assert delivery.ok
    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    assert decisions_received(agent.received[1])["approvals"] == [{"id": "adk-add", "approved": True}]
    assert Interaction.objects.get().state == Interaction.State.ANSWERED


def test_an_envelope_delivered_twice_makes_one_turn(make_socket_world, agent):
    world = make_socket_world(agent_url=agent.url)
    ts = world.mention("once")
    [first] = world.slack.deliveries(ts=ts, kind="app_mention")
    again = world.slack.redeliver(first, retry_num=1, reason="timeout")  # Slack's retry after a late ack
    assert again.ok
    wait_for_reply_count(world, ts, 1)
    wait_for_turns_to_end(world, 1)
    assert Turn.objects.count() == 1
    assert len(agent.received) == 1
    assert len(replies(world, ts)) == 1


def test_every_ack_comes_within_three_seconds_at_fifty_envelopes_a_second(make_socket_world, agent):
    # Under test are the acks, and that every mention is answered: neither the fake's limits (off, its
    # default) nor the product's budgets spread the fifty answers over a minute.
    world = make_socket_world(agent_url=agent.url, workers=1, env=ROOMY_STREAM_BUDGETS)
    warm_up = world.mention("warm up")  # the first event pays the process's first auth.test and connection
    wait_for_reply_count(world, warm_up, 1)
    sent = mentions_at(world, BURST, per_second=50)
    world.slack.wait_until(
        lambda: len([e for e in world.slack.socket_envelopes("app_mention") if e.delivery]) >= BURST + 1,
        timeout=30,
    )
    envelopes = [
        e for e in world.slack.socket_envelopes("app_mention") if "warm up" not in json.dumps(e.payload)
    ]
    # By the fake's own record: when it sent each envelope, and when the ack came.
    late = [(e.envelope_id, e.ack_delay) for e in envelopes if not e.acked_in_time]
    assert late == []
    assert all(e.retry_attempt == 0 for e in envelopes)  # so none was sent again
    assert len(envelopes) == BURST
    wait_until_answered(world, sent)
    assert Turn.objects.count() == BURST + 1
