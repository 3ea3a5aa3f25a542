"""kagent 0.10's Go runtime through the product's real processes: the scripted A2A agent speaks as the
Go runtime does ("kagent-go" text style and ``kagent.go`` pauses, written from kagent's Go source; see
tests/a2a/data/kagent_go/README.md), pauses for two tools and for three questions, people answer in
the thread, and what reaches the agent is what the Go runtime's decision reader takes
(go/adk/pkg/a2a/hitl.go: ``decision_type``, ``decisions`` by original call id, ``ask_user_answers``)."""

import json

import pytest

from interactions.approval_prompts import DECIDE_ACTION
from interactions.prompts import SUBMIT_ACTION
from kourier.a2a.dialects.kagent import DENIAL_REASON
from sessions import notices
from sessions.models import Turn
from simulator import defaults
from tests.fakes.a2a_agent import ReceivedMessage, kagent
from tests.fakes.a2a_agent.kagent import PendingTool
from tests.fakes.a2a_agent.kagent.shapes import Question
from tests.fakes.a2a_agent.steps import Step, text, tool_result

pytestmark = pytest.mark.slow

WAIT = 20.0
ADD = PendingTool("call_add", "add_numbers", {"a": 2, "b": 3})
CHECK = PendingTool("call_check", "check_status", {"service": "db"})


def bot_messages(world, thread_ts):
    return [m for m in world.slack.thread(world.channel, thread_ts)[1:] if m.is_bot]


def wait_for_prompt(world, thread_ts, action):
    def prompt():
        found = [m for m in bot_messages(world, thread_ts) if action in json.dumps(m.blocks)]
        return found[0] if found else None

    world.slack.wait_until(lambda: prompt() is not None, timeout=WAIT)
    return prompt()


def decision_of(received: ReceivedMessage) -> dict:
    [data] = received.data
    return data


def go_agent(make_a2a_agent, first_turn: list[Step], done: str):
    agent = make_a2a_agent(protocol="0.3", text_style="kagent-go")

    def script(received: ReceivedMessage) -> list[Step]:
        if not received.is_continuation:
            return first_turn
        decision = decision_of(received)
        if decision.get("decision_type") == "batch":
            return [
                tool_result(ADD.call_id, ADD.name, {"sum": 5}),
                tool_result(
                    CHECK.call_id,
                    CHECK.name,
                    {"result": f"Tool call was rejected by user. Reason: {DENIAL_REASON}"},
                ),
                text(done),
            ]
        return [text(done)]

    agent.on_message(script)
    return agent


def test_the_go_runtimes_two_tool_pause_is_decided_in_the_thread_and_the_batch_names_both_calls(
    make_world, make_a2a_agent
):
    agent = go_agent(
        make_a2a_agent,
        [text("I need to run two tools."), *kagent.go.approval_pause([ADD, CHECK])],
        "Ran 1 of 2.",
    )
    world = make_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True, tool_approvals=True)
    ts = world.mention("add and check")
    prompt = wait_for_prompt(world, ts, DECIDE_ACTION)
    assert "add_numbers" in json.dumps(prompt.blocks)

    delivery = world.slack.press_button(
        defaults.GRACE,
        world.channel,
        prompt.ts,
        DECIDE_ACTION,
        choices={"verdict-0": "approve", "verdict-1": "deny"},
    )
    assert delivery.status == 200

    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    decision = agent.received[1]
    assert decision.task_id == agent.received[0].server_task_id
    assert decision_of(decision) == {
        "decision_type": "batch",
        "decisions": {"call_add": "approve", "call_check": "reject"},
        "rejection_reasons": {"call_check": DENIAL_REASON},
    }
    world.slack.wait_until(
        lambda: any(m.text == "Ran 1 of 2." for m in bot_messages(world, ts)), timeout=WAIT
    )
    world.slack.wait_until(
        lambda: Turn.objects.filter(kind=Turn.Kind.ANSWER, ended_at__isnull=False).exists(), timeout=WAIT
    )
    assert Turn.objects.get(kind=Turn.Kind.ANSWER).outcome == Turn.Outcome.COMPLETED


def test_the_go_runtimes_questions_are_answered_in_the_thread_with_ask_user_answers(
    make_world, make_a2a_agent
):
    questions = [
        Question("Which database should I use?", ["PostgreSQL", "MySQL", "SQLite"]),
        Question("Which features do you want?", ["Auth", "Caching", "Audit logging"], multiple=True),
        Question("Any additional requirements?"),
    ]
    agent = go_agent(
        make_a2a_agent,
        [text("A few questions first."), *kagent.go.ask_user_pause(questions)],
        "Thanks, setting it up.",
    )
    world = make_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts, SUBMIT_ACTION)

    delivery = world.slack.press_button(
        defaults.GRACE,
        world.channel,
        prompt.ts,
        SUBMIT_ACTION,
        choices={"answer-0": "1", "answer-1": ["0", "2"], "answer-2": "Keep the nightly backups"},
    )
    assert delivery.status == 200

    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    assert decision_of(agent.received[1]) == {
        "decision_type": "approve",
        "ask_user_answers": [
            {"answer": ["MySQL"]},
            {"answer": ["Auth", "Audit logging"]},
            {"answer": ["Keep the nightly backups"]},
        ],
    }
    world.slack.wait_until(
        lambda: any(m.text == "Thanks, setting it up." for m in bot_messages(world, ts)), timeout=WAIT
    )


def test_past_the_channels_daily_token_budget_a_message_is_not_sent_and_the_thread_told_once(
    make_world, make_a2a_agent
):
    """The Go runtime reports 10 + 5 tokens per model call (adk_usage_metadata); a budget of 15 is
    spent by the first turn."""
    agent = make_a2a_agent(protocol="0.3", text_style="kagent-go")
    agent.on_message(lambda received: [text("Done.")])
    world = make_world(agent_url=agent.url, dialect="kagent-v1", daily_token_budget=15)
    ts = world.mention("first")
    world.slack.wait_until(lambda: Turn.objects.filter(ended_at__isnull=False).count() == 1, timeout=WAIT)
    assert (Turn.objects.get().input_tokens, Turn.objects.get().output_tokens) == (10, 5)

    world.says("second", thread_ts=ts)
    world.slack.wait_until(lambda: Turn.objects.filter(ended_at__isnull=False).count() == 2, timeout=WAIT)
    world.says("third", thread_ts=ts)
    world.slack.wait_until(lambda: Turn.objects.filter(ended_at__isnull=False).count() == 3, timeout=WAIT)

    assert len(agent.received) == 1
    assert [m.text for m in bot_messages(world, ts)] == ["Done.", notices.BUDGET_SPENT]
    assert sorted(Turn.objects.values_list("outcome", flat=True)) == [
        "budget-spent",
        "budget-spent",
        "completed",
    ]
