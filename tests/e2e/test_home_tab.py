"""The Home tab end to end (issue 33, point 4): app_home_opened into the real processes, views.publish
to the Slack fake, and a decision pressed in the tab going down the thread prompt's one press path."""

import json

import pytest

from audit.models import AuditEvent
from interactions.approval_prompts import APPROVE_ACTION
from interactions.home_view import NO_ALERTS, NO_APPROVALS, NO_SESSIONS
from interactions.models import Interaction
from simulator import defaults
from tests.e2e.helpers import (
    ADD,
    WAIT,
    approvals_world,
    bot_messages,
    has_controls,
    pause_then_finish,
    press,
    wait_for,
    wait_for_prompt,
    wait_for_reply_count,
)
from tests.fakes.a2a_agent import HITL_EXTENSION, steps

pytestmark = [pytest.mark.slow, pytest.mark.shares_stacks]  # tests/support/stack.py: StackPool


def texts(view) -> str:
    return json.dumps(view["blocks"])


def prompt_recorded(world, thread_ts):
    """The thread's prompt, once posted and its message recorded on the Interaction (the tab lists it then)."""
    prompt = wait_for_prompt(world, thread_ts)
    wait_for(
        lambda: Interaction.objects.filter(prompt_ts=prompt.ts).exists(), "the prompt's message recorded"
    )
    return prompt


def opened_home(world, user):
    publishes = world.slack.count("views.publish")
    world.slack.user_opens_home(user)
    world.slack.wait_for_call("views.publish", count=publishes + 1, timeout=WAIT)
    return world.slack.home_view(user)


def test_opening_the_home_tab_shows_the_persons_threads(make_world, a2a_agent):
    a2a_agent.script([steps.text("Hello.")])
    world = make_world(agent_url=a2a_agent.url)
    ts = world.mention("hello")
    wait_for_reply_count(world, ts, 1)
    view = opened_home(world, defaults.ADA)
    assert view["type"] == "home"
    assert f"/thread/{world.channel}-{ts}|A thread> in <#{world.channel}>" in texts(view)
    assert NO_APPROVALS in texts(view)
    assert NO_ALERTS in texts(view)
    assert NO_SESSIONS.format(command="/kourier") in texts(
        opened_home(world, defaults.GRACE)
    )  # Grace wrote nothing


def test_an_approval_decided_in_the_home_tab_is_the_threads_decision(make_world, make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = approvals_world(make_world, agent)
    ts = world.mention("add")
    prompt = prompt_recorded(world, ts)
    view = opened_home(world, defaults.GRACE)
    assert "add_numbers" in texts(view)
    [buttons] = [b for b in view["blocks"] if b["type"] == "actions"]
    assert buttons["block_id"] == f"prompt|{world.channel}|{prompt.ts}|{ts}"

    publishes = world.slack.count("views.publish")
    delivery = world.slack.press_home_button(defaults.GRACE, APPROVE_ACTION)
    assert delivery.ok
    assert delivery.acked_in_time

    world.slack.wait_until(
        lambda: any("Ran 1 of 1 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    interaction = Interaction.objects.get()
    assert (interaction.state, interaction.answered_by, interaction.decided_in) == (
        "answered",
        defaults.GRACE,
        "",
    )
    [row] = AuditEvent.objects.filter(action="interaction.decided")  # audited as a press in the thread is
    assert row.actor_id == defaults.GRACE
    assert not has_controls(
        world.slack.message(world.channel, prompt.ts).blocks
    )  # the thread's prompt closed
    world.slack.wait_for_call("views.publish", count=publishes + 1, timeout=WAIT)
    assert NO_APPROVALS in texts(world.slack.home_view(defaults.GRACE))


def test_an_approval_decided_in_the_thread_is_gone_from_the_home_tab(make_world, make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = approvals_world(make_world, agent)
    ts = world.mention("add")
    prompt = prompt_recorded(world, ts)
    assert "add_numbers" in texts(opened_home(world, defaults.GRACE))
    press(world, prompt.ts, APPROVE_ACTION)
    world.slack.wait_until(
        lambda: any("Ran 1 of 1 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    assert NO_APPROVALS in texts(opened_home(world, defaults.GRACE))


def test_an_approval_someone_outside_its_approver_groups_may_not_decide_is_not_in_their_home_tab(
    make_world, make_a2a_agent
):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = approvals_world(make_world, agent, approver_groups=["S0ONCALL"])
    world.slack.add_usergroup("S0ONCALL", "oncall", [defaults.GRACE])
    ts = world.mention("add")
    prompt_recorded(world, ts)
    assert NO_APPROVALS in texts(opened_home(world, defaults.ADA))
    assert "add_numbers" in texts(opened_home(world, defaults.GRACE))


def test_an_approval_decided_in_the_home_tab_over_the_socket_is_the_threads_decision(
    make_socket_world, make_a2a_agent
):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = make_socket_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True, tool_approvals=True)
    ts = world.mention("add")
    prompt = prompt_recorded(world, ts)
    assert "add_numbers" in texts(opened_home(world, defaults.GRACE))
    delivery = world.slack.press_home_button(defaults.GRACE, APPROVE_ACTION)
    assert delivery.ok
    world.slack.wait_until(
        lambda: any("Ran 1 of 1 tools." in m.text for m in bot_messages(world, ts)), timeout=WAIT
    )
    assert not has_controls(world.slack.message(world.channel, prompt.ts).blocks)
    [envelope] = [
        e for e in world.slack.socket_envelopes("block_actions") if e.payload["container"]["type"] == "view"
    ]
    assert envelope.type == "interactive"


def test_an_approvers_open_home_tab_lists_a_new_approval_and_drops_it_once_decided_in_the_thread(
    make_world, make_a2a_agent
):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(pause_then_finish([ADD]))
    world = approvals_world(make_world, agent, env={"HOME_TAB_REFRESH_SECONDS": "1"})
    assert NO_APPROVALS in texts(opened_home(world, defaults.GRACE))
    ts = world.mention("add")
    prompt = prompt_recorded(world, ts)
    world.slack.wait_until(
        lambda: "add_numbers" in texts(world.slack.home_view(defaults.GRACE)), timeout=WAIT
    )
    press(world, prompt.ts, APPROVE_ACTION)
    world.slack.wait_until(lambda: NO_APPROVALS in texts(world.slack.home_view(defaults.GRACE)), timeout=WAIT)
    assert world.slack.home_view(defaults.ADA) is None  # Ada never opened hers: nothing is published for her
