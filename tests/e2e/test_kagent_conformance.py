"""Conformance with a real kagent, as the spec asks: the kagent 1.0 runtime (kagent-adk 1.0.0a5, a
scripted model; tests/support/kagent_runtime) asks its questions through the product's real processes,
a member answers with signed block_actions, and the model receives exactly those answers."""

import json

import pytest

from interactions.prompts import SUBMIT_ACTION
from sessions.models import Turn
from tests.fakes.slack import defaults
from tests.support.kagent_runtime.script import Script, ask_user, question
from tests.support.kagent_runtime.script import Turn as ModelTurn

pytestmark = pytest.mark.slow

WAIT = 60.0  # the runtime's first model turn imports much of ADK


def test_the_model_receives_exactly_the_answers_given_in_the_thread_and_the_task_completes(
    make_world, start_kagent_runtime
):
    runtime = start_kagent_runtime(
        Script(
            [
                ModelTurn(
                    "A few questions first.",
                    [
                        ask_user(
                            "call_ask",
                            question(
                                "Which database should I use?",
                                ["PostgreSQL", "MySQL", "SQLite"],
                                multiple=False,
                            ),
                            question(
                                "Which features do you want?",
                                ["Auth", "Caching", "Audit logging"],
                                multiple=True,
                            ),
                            question("Any additional requirements?"),
                        )
                    ],
                ),
                ModelTurn("Thanks, setting it up."),
            ]
        )
    )
    world = make_world(agent_url=runtime.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set up the service")

    def prompt():
        found = [
            message
            for message in world.slack.thread(world.channel, ts)[1:]
            if message.is_bot and SUBMIT_ACTION in json.dumps(message.blocks)
        ]
        return found[0] if found else None

    world.slack.wait_until(lambda: prompt() is not None, timeout=WAIT)
    delivery = world.slack.press_button(
        defaults.GRACE,
        world.channel,
        prompt().ts,
        SUBMIT_ACTION,
        choices={"answer-0": "1", "answer-1": ["0", "2"], "answer-2": "Keep the nightly backups"},
    )
    assert delivery.status == 200

    world.slack.wait_until(
        lambda: Turn.objects.filter(kind=Turn.Kind.ANSWER, state=Turn.State.DONE).exists(), timeout=WAIT
    )
    answer_turn = Turn.objects.get(kind=Turn.Kind.ANSWER)
    assert answer_turn.outcome == Turn.Outcome.COMPLETED  # the task completed
    assert any(m.text == "Thanks, setting it up." for m in world.slack.thread(world.channel, ts) if m.is_bot)
    first, after_answers = runtime.model_requests()
    assert first.text.endswith("set up the service")
    assert json.loads(after_answers.function_responses["call_ask"]["result"]) == [
        {"question": "Which database should I use?", "answer": ["MySQL"]},
        {"question": "Which features do you want?", "answer": ["Auth", "Audit logging"]},
        {"question": "Any additional requirements?", "answer": ["Keep the nightly backups"]},
    ]
