"""What a turn cost, from the real kagent runtimes (both lines, tests/support/kagent_runtime): the
scripted model reports its tokens as a provider does, kagent passes them on its own way (0.10:
kagent_usage_metadata per model call; 1.0: the usage extension's task total on the final status), and
each turn keeps its own share, a question's answer turn included; a model that reports nothing leaves
the turn without usage."""

import json

import pytest

from interactions.prompts import SUBMIT_ACTION
from sessions.models import Turn
from simulator import defaults
from tests.support.kagent_runtime.script import Script, Usage, ask_user, question
from tests.support.kagent_runtime.script import Turn as ModelTurn

pytestmark = pytest.mark.slow

WAIT = 60.0  # the runtime's first model turn imports much of ADK


def bot_messages(world, thread_ts):
    return [m for m in world.slack.thread(world.channel, thread_ts)[1:] if m.is_bot]


def ended(kind):
    return Turn.objects.filter(kind=kind, ended_at__isnull=False)


def test_each_turn_keeps_the_tokens_of_its_own_model_calls(make_world, start_kagent_runtime):
    runtime = start_kagent_runtime(
        Script(
            [
                ModelTurn(
                    "One question first.",
                    [ask_user("call_ask", question("Which database?", ["A", "B"]))],
                    Usage(100, 20),
                ),
                ModelTurn("Thanks, done.", usage=Usage(150, 10)),
            ]
        )
    )
    world = make_world(agent_url=runtime.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set it up")

    def prompt():
        found = [m for m in bot_messages(world, ts) if SUBMIT_ACTION in json.dumps(m.blocks)]
        return found[0] if found else None

    world.slack.wait_until(lambda: prompt() is not None, timeout=WAIT)
    asked = Turn.objects.get(kind=Turn.Kind.MESSAGE)
    assert (asked.input_tokens, asked.output_tokens) == (100, 20)

    world.slack.press_button(
        defaults.GRACE, world.channel, prompt().ts, SUBMIT_ACTION, choices={"answer-0": "1"}
    )
    world.slack.wait_until(lambda: ended(Turn.Kind.ANSWER).exists(), timeout=WAIT)

    answer = Turn.objects.get(kind=Turn.Kind.ANSWER)
    assert answer.outcome == Turn.Outcome.COMPLETED
    assert (answer.input_tokens, answer.output_tokens) == (150, 10)


def test_a_model_that_reports_no_usage_leaves_the_turn_without_any(make_world, start_kagent_runtime):
    runtime = start_kagent_runtime(Script([ModelTurn("Hello.")]))
    world = make_world(agent_url=runtime.url, dialect="kagent-v1")
    world.mention("hi")

    world.slack.wait_until(lambda: ended(Turn.Kind.MESSAGE).exists(), timeout=WAIT)

    turn = Turn.objects.get()
    assert turn.outcome == Turn.Outcome.COMPLETED
    assert (turn.input_tokens, turn.output_tokens) == (None, None)
