"""The agent asks, a channel member answers in the thread, and the same task carries on (askUser),
end to end: signed events and block_actions into Daphne, a Celery worker running turns against the
scripted a2a-sdk agent, the prompt and the answers in the Slack fake."""

import json
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from audit.models import AuditEvent
from interactions.bound import ANOTHER_APP
from interactions.kinds import Refusal
from interactions.models import Interaction
from interactions.prompts import SUBMIT_ACTION, TIMED_OUT_LINE
from interactions.questions import QUESTION
from kourier.progress import STOPPED, WAITING_FOR_YOUR_ANSWER
from sessions import notices
from sessions.models import Session, Turn
from simulator import defaults
from tests.e2e.helpers import (
    QUESTIONS,
    _has_submit,
    another_app,
    answers_received,
    ask_then_finish,
    bot_messages,
    submit,
    through_another_app,
    wait_for,
    wait_for_prompt,
    wait_for_turns_to_end,
)
from tests.fakes.a2a_agent import HITL_EXTENSION, ReceivedMessage, kagent
from tests.fakes.a2a_agent.steps import Step, input_required, jsonrpc_error, sleep, text

pytestmark = [pytest.mark.slow, pytest.mark.shares_stacks]  # tests/support/stack.py: StackPool

WAIT = 20.0
ACK = "hourglass_flowing_sand"


@pytest.fixture
def kagent_agent(make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.on_message(ask_then_finish)
    return agent


def test_a_kagent_question_is_answered_in_the_thread_and_the_same_task_carries_on(make_world, kagent_agent):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    assert [kagent_agent.received[0].text.endswith("set up the service")] == [True]
    inputs = {
        block["block_id"]: block["element"]["type"] for block in prompt.blocks if block["type"] == "input"
    }
    assert inputs == {
        "question-0": "radio_buttons",
        "question-1": "checkboxes",
        "question-2": "plain_text_input",
    }
    world.slack.wait_until(lambda: ACK not in world.slack.message(world.channel, ts).reactions, timeout=WAIT)

    submit(world, prompt.ts, choices={"answer-0": "0", "answer-1": ["0", "1"], "answer-2": "Use the backups"})

    world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
    answer = kagent_agent.received[1]
    assert answer.task_id == kagent_agent.received[0].server_task_id  # the same task carries on
    assert answers_received(answer) == {
        "type": "ask_user_response",
        "id": "adk-ask",
        "answers": [
            {"answer": ["PostgreSQL"]},
            {"answer": ["Auth", "Caching"]},
            {"answer": ["Use the backups"]},
        ],
    }
    assert answer.headers.get("authorization") == kagent_agent.received[0].headers.get("authorization")
    world.slack.wait_until(
        lambda: any(m.text == "Thanks, carrying on." for m in bot_messages(world, ts)), timeout=WAIT
    )
    closed = world.slack.message(world.channel, prompt.ts)
    assert not _has_submit(closed.blocks)
    assert f"Answered by <@{defaults.GRACE}>" in json.dumps(closed.blocks)
    [row] = AuditEvent.objects.filter(action="interaction.answered")
    assert row.actor_id == defaults.GRACE
    assert row.details["answers"] == [
        {"question": 1, "choices": 3, "picked": 1},
        {"question": 2, "choices": 3, "picked": 2},
        {"question": 3, "text_length": "1-20"},
    ]
    assert "backups" not in json.dumps(row.details)


def test_without_askuser_a_paused_task_is_cancelled_and_the_thread_told(make_world, kagent_agent):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=False)
    ts = world.mention("set up the service")
    world.slack.wait_until(
        lambda: any(m.text == notices.QUESTION_NOT_ENABLED for m in bot_messages(world, ts)), timeout=WAIT
    )
    world.slack.wait_until(lambda: len(kagent_agent.calls("CancelTask")) == 1, timeout=WAIT)
    assert not Interaction.objects.exists()
    assert not any(_has_submit(m.blocks) for m in bot_messages(world, ts))


def test_a_cancel_the_agent_refuses_still_tells_the_thread_and_the_next_reply_starts_a_new_task(
    make_world, a2a_agent
):
    a2a_agent.on_message(
        lambda received: (
            [input_required("Which environment?")]
            if received.text.endswith("deploy")
            else [text("A fresh start.")]
        )
    )
    # kagent 0.10 answers a cancel of a paused task so.
    a2a_agent.fail_next_call(jsonrpc_error(-32603, "Cancellation is not supported"), method="CancelTask")
    world = make_world(agent_url=a2a_agent.url, ask_user=False)
    ts = world.mention("deploy")
    world.slack.wait_until(
        lambda: any(m.text == notices.QUESTION_NOT_ENABLED for m in bot_messages(world, ts)), timeout=WAIT
    )
    wait_for_turns_to_end(world, 1)
    world.slack.user_says(defaults.ADA, world.channel, "try again please", thread_ts=ts)
    world.slack.wait_until(
        lambda: any(m.text == "A fresh start." for m in bot_messages(world, ts)), timeout=WAIT
    )
    assert a2a_agent.received[1].task_id is None  # not sent to the paused task


class TestTheA2ADialect:
    @pytest.fixture
    def agent(self, a2a_agent):
        def ask_then_deploy(received: ReceivedMessage) -> list[Step]:
            if received.is_continuation:
                return [text(f"Deploying to {received.text.rsplit(': ', 1)[-1]}.")]
            if received.text.endswith("deploy"):
                return [input_required("Which environment?")]
            return [text("Next turn.")]

        a2a_agent.on_message(ask_then_deploy)
        return a2a_agent

    def test_a_typed_reply_is_the_answer_without_a_mention_and_gets_its_own_reaction(self, make_world, agent):
        world = make_world(agent_url=agent.url, ask_user=True, thread_replies="mention")
        ts = world.mention("deploy")
        prompt = wait_for_prompt(world, ts)
        hint = json.dumps(prompt.blocks)
        assert "reply in this thread" in hint
        reply = world.slack.user_says(defaults.GRACE, world.channel, "staging", thread_ts=ts)
        world.slack.wait_until(
            lambda: any(m.text == "Deploying to staging." for m in bot_messages(world, ts)), timeout=WAIT
        )
        assert agent.received[1].task_id == agent.received[0].server_task_id
        assert agent.received[1].text == "Slack: Grace Hopper (U0GRACE): staging"
        adds = [call.args["timestamp"] for call in world.slack.calls("reactions.add")]
        assert adds == [ts, reply]
        world.slack.wait_until(
            lambda: ACK not in world.slack.message(world.channel, reply).reactions, timeout=WAIT
        )
        assert Interaction.objects.get().state == Interaction.State.ANSWERED

    def test_a_typed_reply_whose_author_slack_cannot_check_now_is_not_taken_and_they_are_asked_again(
        self, make_world, agent
    ):
        world = make_world(agent_url=agent.url, ask_user=True)
        ts = world.mention("deploy")
        wait_for_prompt(world, ts)
        world.slack.fail("conversations.members", "http_503", times=None)
        world.slack.user_says(defaults.GRACE, world.channel, "staging", thread_ts=ts)
        [told] = world.slack.ephemerals(defaults.GRACE)  # told before Slack had the event's answer
        assert (told.text, told.thread_ts) == (QUESTION.refusals[Refusal.MEMBERSHIP_UNKNOWN], ts)
        assert Interaction.objects.get().state == Interaction.State.OPEN
        assert Turn.objects.count() == 1  # the reply is not stored: it is sent again
        assert len(agent.received) == 1

        world.slack.clear_faults()
        world.slack.user_says(defaults.GRACE, world.channel, "staging", thread_ts=ts)
        world.slack.wait_until(
            lambda: any(m.text == "Deploying to staging." for m in bot_messages(world, ts)), timeout=WAIT
        )
        assert Interaction.objects.get().answered_by == defaults.GRACE
        assert len(world.slack.ephemerals(defaults.GRACE)) == 1

    def test_the_text_question_can_be_answered_with_submit_too(self, make_world, agent):
        world = make_world(agent_url=agent.url, ask_user=True)
        ts = world.mention("deploy")
        prompt = wait_for_prompt(world, ts)
        submit(world, prompt.ts, choices={"answer-0": "production"})
        world.slack.wait_until(
            lambda: any(m.text == "Deploying to production." for m in bot_messages(world, ts)), timeout=WAIT
        )
        assert Interaction.objects.get().state == Interaction.State.ANSWERED

    def test_a_pause_with_structured_parts_is_cancelled_and_the_thread_told(self, make_world, a2a_agent):
        a2a_agent.script([input_required(None, data_parts=[{"data": {"form": {"env": "string"}}}])])  # a form
        world = make_world(agent_url=a2a_agent.url, ask_user=True)
        ts = world.mention("deploy")
        world.slack.wait_until(
            lambda: any(m.text == notices.QUESTION_UNUSABLE for m in bot_messages(world, ts)), timeout=WAIT
        )
        world.slack.wait_until(lambda: len(a2a_agent.calls("CancelTask")) == 1, timeout=WAIT)
        assert not Interaction.objects.exists()


def test_only_a_member_answers_a_non_member_and_an_incomplete_answer_are_told_privately(
    make_world, kagent_agent
):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True)
    world.slack.add_user("U0EVE", "Eve Outsider")
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)

    submit(world, prompt.ts, user="U0EVE", choices={"answer-0": "0", "answer-1": ["0"], "answer-2": "x"})
    submit(world, prompt.ts, user=defaults.ADA, choices={"answer-0": "0"})
    world.slack.wait_until(
        lambda: world.slack.ephemerals(defaults.ADA) and world.slack.ephemerals("U0EVE"), timeout=WAIT
    )

    [outsider] = world.slack.ephemerals("U0EVE")
    assert outsider.text == "Only members of this channel can answer the agent's questions."
    [incomplete] = world.slack.ephemerals(defaults.ADA)
    assert incomplete.text.startswith("Your answer was not sent: Question 2")
    assert "Question 3" in incomplete.text
    assert len(kagent_agent.received) == 1  # nothing reached the agent
    assert Interaction.objects.get().state == Interaction.State.OPEN
    assert _has_submit(world.slack.message(world.channel, prompt.ts).blocks)


def test_someone_who_left_the_channel_is_refused_at_once_not_a_minute_later(make_world, kagent_agent):
    """Slack tells the app who left (member_left_channel): the members it kept are read again."""
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    submit(world, prompt.ts, user=defaults.GRACE, choices={"answer-0": "0"})  # incomplete: members read
    world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
    world.slack.leave(world.channel, defaults.GRACE)

    submit(
        world, prompt.ts, user=defaults.GRACE, choices={"answer-0": "0", "answer-1": ["0"], "answer-2": "x"}
    )
    world.slack.wait_until(lambda: len(world.slack.ephemerals(defaults.GRACE)) == 2, timeout=WAIT)
    assert world.slack.ephemerals(defaults.GRACE)[-1].text == QUESTION.refusals[Refusal.NOT_A_MEMBER]
    assert Interaction.objects.get().state == Interaction.State.OPEN
    assert len(kagent_agent.received) == 1  # nothing reached the agent
    assert world.slack.count("conversations.members") == 2


def test_a_reply_that_is_not_the_answer_waits_with_its_reaction_and_goes_after_it(make_world, kagent_agent):
    kagent_agent.on_message(
        lambda received: (
            kagent.v1.ask_user_pause(QUESTIONS[2:], request_id="adk-ask")
            if received.text.endswith("set up the service")
            else [text("done" if received.is_continuation else "the reply's turn")]
        )
    )
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    reply = world.slack.user_says(defaults.ADA, world.channel, "also, hurry", thread_ts=ts)
    world.slack.wait_until(lambda: ACK in world.slack.message(world.channel, reply).reactions, timeout=WAIT)
    assert len(kagent_agent.received) == 1  # it waits for the answer

    submit(world, prompt.ts, choices={"answer-0": "nothing"})
    world.slack.wait_until(lambda: len(kagent_agent.received) == 3, timeout=WAIT)
    assert kagent_agent.received[1].is_continuation  # the answer first
    assert kagent_agent.received[2].text.endswith("also, hurry")
    world.slack.wait_until(
        lambda: ACK not in world.slack.message(world.channel, reply).reactions, timeout=WAIT
    )


def test_at_the_deadline_the_task_is_cancelled_the_prompt_closed_and_the_thread_told_once(
    make_world, kagent_agent
):
    world = make_world(
        agent_url=kagent_agent.url,
        dialect="kagent-v1",
        ask_user=True,
        interaction_timeout=timedelta(seconds=1),
        beat=True,
        env={"RECOVERY_INTERVAL_SECONDS": "1"},
    )
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    world.slack.wait_until(
        lambda: any(m.text == notices.QUESTION_TIMED_OUT for m in bot_messages(world, ts)), timeout=WAIT
    )
    world.slack.wait_until(
        lambda: TIMED_OUT_LINE in json.dumps(world.slack.message(world.channel, prompt.ts).blocks),
        timeout=WAIT,
    )
    assert not _has_submit(world.slack.message(world.channel, prompt.ts).blocks)
    assert len(kagent_agent.calls("CancelTask")) == 1
    # Beat runs the sweep every second: once it has run on after closing, the thread was still told once.
    wait_for(lambda: Interaction.objects.get().closed_at is not None, "the prompt closed")
    world.stack.wait_for_log("beat", "sweeps.time-out-interactions", count=3, timeout=WAIT)
    assert [m.text for m in bot_messages(world, ts)].count(notices.QUESTION_TIMED_OUT) == 1
    assert len(kagent_agent.calls("CancelTask")) == 1

    # A client that still shows the old prompt sends its press: too late.
    button = {
        "type": "button",
        "action_id": SUBMIT_ACTION,
        "block_id": "submit",
        "value": str(Interaction.objects.get().pk),
    }
    delivery = world.slack.send_block_actions(defaults.GRACE, world.channel, prompt.ts, [button], {})
    assert delivery.status == 200
    world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
    assert world.slack.ephemerals(defaults.GRACE)[0].text.startswith("This question is closed")
    assert len(kagent_agent.received) == 1


def wait_until_the_session_is_let_go(world) -> None:
    """The runner has released the session's lease (a runner killed holding it leaves it to expire)."""
    wait_for(
        lambda: not Session.objects.exclude(lease_owner="").exists(),
        "the session let go",
    )


def restart(world) -> None:
    """Every process of the product stopped and started again (the web killed, on a new port)."""
    world.stack.kill("worker", signal.SIGTERM)
    world.stack.kill("web", signal.SIGKILL)
    world.stack.start_web()
    world.slack.deliver_events_to(f"{world.stack.base_url}/slack/events", defaults.SIGNING_SECRET)
    world.stack.start_worker(name="worker2")


def test_a_press_on_a_prompt_posted_before_a_restart_is_taken_after_it(make_world, kagent_agent):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    wait_for_turns_to_end(world, 1)
    wait_until_the_session_is_let_go(world)
    restart(world)
    submit(world, prompt.ts, choices={"answer-0": "1", "answer-1": ["2"], "answer-2": "ok"})
    world.slack.wait_until(
        lambda: any(m.text == "Thanks, carrying on." for m in bot_messages(world, ts)), timeout=WAIT
    )
    assert answers_received(kagent_agent.received[1])["answers"][0] == {"answer": ["MySQL"]}


def test_an_answer_taken_while_no_worker_runs_is_sent_once_by_the_next(make_world, kagent_agent):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True, beat=True,
                       env={"RECOVERY_INTERVAL_SECONDS": "1"})  # fmt: skip
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    wait_for_turns_to_end(world, 1)
    wait_until_the_session_is_let_go(world)
    world.stack.kill("worker", signal.SIGKILL)  # killed between taking the answer and sending it
    submit(world, prompt.ts, choices={"answer-0": "2", "answer-1": ["1"], "answer-2": "ok"})
    wait_for(
        lambda: Turn.objects.filter(kind=Turn.Kind.ANSWER).exists(),
        "the answer taken",
    )
    assert len(kagent_agent.received) == 1
    world.stack.start_worker(name="worker2")
    world.slack.wait_until(
        lambda: any(m.text == "Thanks, carrying on." for m in bot_messages(world, ts)), timeout=WAIT
    )
    wait_for_turns_to_end(world, 2)
    world.stack.wait_for_log("beat", "sweeps.recover-sessions", count=3, timeout=WAIT)
    assert len(kagent_agent.received) == 2


def test_a_press_sent_by_another_app_of_the_workspace_is_refused_privately_and_reaches_nothing(
    make_world, kagent_agent
):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True, env=another_app())
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    through_another_app(world)

    submit(world, prompt.ts, choices={"answer-0": "0", "answer-1": ["0"], "answer-2": "no"})

    world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
    [told] = world.slack.ephemerals(defaults.GRACE)
    assert told.text == ANOTHER_APP
    assert len(kagent_agent.received) == 1
    assert Interaction.objects.get().state == Interaction.State.OPEN
    assert not Turn.objects.filter(kind=Turn.Kind.ANSWER).exists()
    assert not AuditEvent.objects.filter(action="interaction.answered").exists()


@pytest.mark.parametrize(
    "press",
    ["closed", "unknown", "another channel", "values that do not match"],
)
def test_a_bad_press_is_turned_away_privately_and_changes_nothing(make_world, kagent_agent, press):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True)
    world.slack.add_channel("C0002", "elsewhere", members=[defaults.ADA, defaults.GRACE])
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    interaction = Interaction.objects.get()
    button = {
        "type": "button",
        "action_id": SUBMIT_ACTION,
        "block_id": "submit",
        "value": str(interaction.pk),
    }
    values = {"question-0": {"answer-0": {"type": "radio_buttons", "selected_option": {"value": "0"}}}}
    channel = world.channel
    if press == "closed":
        Interaction.objects.filter(pk=interaction.pk).update(state=Interaction.State.TIMED_OUT)
    elif press == "unknown":
        button["value"] = "987654"
    else:
        values = {"question-0": {"answer-0": {"type": "radio_buttons", "selected_option": {"value": "7"}}}}
    message_ts = prompt.ts
    if press == "another channel":  # the same button and values, pressed on a message elsewhere
        channel = "C0002"
        message_ts = world.slack.user_says(defaults.ADA, channel, "hello there", deliver="none")
    delivery = world.slack.send_block_actions(defaults.GRACE, channel, message_ts, [button], values)
    assert delivery.status == 200
    world.slack.wait_until(lambda: world.slack.ephemerals(defaults.GRACE), timeout=WAIT)
    assert len(kagent_agent.received) == 1
    assert not Turn.objects.filter(kind__in=[Turn.Kind.ANSWER, Turn.Kind.TYPED_ANSWER]).exists()
    assert not AuditEvent.objects.filter(action="interaction.answered").exists()


def test_long_choice_lists_are_a_select_and_a_numbered_list_whose_numbers_are_checked(
    make_world, make_a2a_agent
):
    many = [f"region-{number}" for number in range(1, 13)]
    huge = [f"host-{number}" for number in range(1, 151)]
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    questions = [kagent.Question("Which region?", many), kagent.Question("Which hosts?", huge, multiple=True)]
    agent.on_message(
        lambda received: (
            [text("ok")]
            if received.is_continuation
            else kagent.v1.ask_user_pause(questions, request_id="adk-long")
        )
    )
    world = make_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("pick for me")
    prompt = wait_for_prompt(world, ts)
    inputs = {
        block["block_id"]: block["element"]["type"] for block in prompt.blocks if block["type"] == "input"
    }
    assert inputs == {"question-0": "static_select", "question-1": "plain_text_input"}
    listed = "\n".join(
        block["text"]["text"] for block in prompt.blocks if block["block_id"].startswith("choices-1-")
    )
    assert listed.splitlines() == [f"{number}. host-{number}" for number in range(1, 151)]

    submit(world, prompt.ts, user=defaults.ADA, choices={"answer-0": "11", "answer-1": "3, 151"})
    submit(world, prompt.ts, user=defaults.GRACE, choices={"answer-0": "11", "answer-1": "3, 3"})
    world.slack.wait_until(
        lambda: world.slack.ephemerals(defaults.ADA) and world.slack.ephemerals(defaults.GRACE), timeout=WAIT
    )
    assert "151 is not on the list (1 to 150)" in world.slack.ephemerals(defaults.ADA)[0].text
    assert "each number may be given once" in world.slack.ephemerals(defaults.GRACE)[0].text
    assert len(agent.received) == 1

    submit(world, prompt.ts, choices={"answer-0": "11", "answer-1": "3, 150"})
    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    assert answers_received(agent.received[1])["answers"] == [
        {"answer": ["region-12"]},
        {"answer": ["host-3", "host-150"]},
    ]


def test_a_sub_agents_question_is_labelled_with_it_and_answered_with_its_ids(make_world, make_a2a_agent):
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    nested = {
        "type": "ask_user_request",
        "id": "adk-parent",
        "questions": [{"question": "Which cluster?", "choices": [], "multiple": False}],
        "nested": {
            "subagent_name": "k8s_agent",
            "task_id": "child-task",
            "context_id": "child-context",
            "tools": [{"id": "adk-child-ask", "call_id": "call_child", "name": "ask_user", "args": {}}],
        },
    }
    agent.on_message(
        lambda received: (
            [text("ok")]
            if received.is_continuation
            else [
                input_required(
                    "Which cluster?", {HITL_EXTENSION: nested}, [HITL_EXTENSION], only_if_requested=True
                )
            ]
        )
    )
    world = make_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True)
    ts = world.mention("scale it")
    prompt = wait_for_prompt(world, ts)
    assert "The sub-agent *k8s_agent* asks" in prompt.blocks[0]["text"]["text"]
    submit(world, prompt.ts, choices={"answer-0": "prod-east"})
    world.slack.wait_until(lambda: len(agent.received) == 2, timeout=WAIT)
    assert answers_received(agent.received[1]) == {
        "type": "ask_user_response",
        "id": "adk-child-ask",
        "answers": [{"answer": ["prod-east"]}],
    }


@pytest.mark.requires_postgres(
    "concurrent claims are settled by PostgreSQL's row locks; SQLite serializes every write"
)
def test_of_twenty_concurrent_answers_one_reaches_the_agent_and_the_others_are_told_privately(
    make_world, kagent_agent
):
    world = make_world(agent_url=kagent_agent.url, dialect="kagent-v1", ask_user=True)
    people = [f"U0P{number:02d}" for number in range(20)]
    for person in people:
        world.slack.add_user(person, f"Person {person}")
        world.slack.join(world.channel, person)
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)
    choices = {"answer-0": "0", "answer-1": ["1"], "answer-2": "ok"}
    start = threading.Barrier(len(people))

    def press(person: str) -> int:
        start.wait()
        return world.slack.press_button(
            person, world.channel, prompt.ts, SUBMIT_ACTION, choices=choices
        ).status

    with ThreadPoolExecutor(len(people)) as pool:
        statuses = list(pool.map(press, people))

    assert statuses == [200] * len(people)
    world.slack.wait_until(
        lambda: sum(len(world.slack.ephemerals(p)) for p in people) == len(people) - 1, timeout=WAIT
    )
    told = [shown.text for person in people for shown in world.slack.ephemerals(person)]
    assert told == ["Someone answered this question already; your answer was not sent."] * (len(people) - 1)
    wait_for_turns_to_end(world, 2)
    assert len(kagent_agent.received) == 2
    assert Turn.objects.filter(kind=Turn.Kind.ANSWER).count() == 1
    assert AuditEvent.objects.filter(action="interaction.answered").count() == 1


class TestAPauseThatIsCancelledEndsTheReplyAsStopped:
    """The agent is silent past the Working… delay, then pauses; nobody can be asked, so the task is
    cancelled and the reply's Working… card ends as Stopped (an error), not as waiting for an answer."""

    @pytest.fixture
    def agent(self, a2a_agent):
        a2a_agent.on_message(lambda received: [sleep(3.5), input_required("Which environment?")])
        return a2a_agent

    def ended_reply(self, world, ts, notice):
        world.slack.wait_until(lambda: any(m.text == notice for m in bot_messages(world, ts)), timeout=WAIT)
        wait_for_turns_to_end(world, 1)
        [reply] = [m for m in bot_messages(world, ts) if m.cards]
        assert not reply.streaming
        return [(card.title, card.status) for card in reply.cards]

    def test_without_askuser(self, make_world, agent):
        world = make_world(agent_url=agent.url, ask_user=False)
        ts = world.mention("deploy")
        assert self.ended_reply(world, ts, notices.QUESTION_NOT_ENABLED) == [(STOPPED, "error")]
        assert len(agent.calls("CancelTask")) == 1

    def test_when_its_prompt_cannot_be_posted(self, make_world, agent):
        world = make_world(agent_url=agent.url, ask_user=True)
        world.slack.fail("chat.postMessage", "invalid_blocks", when=lambda args: SUBMIT_ACTION in str(args))
        ts = world.mention("deploy")
        assert self.ended_reply(world, ts, notices.QUESTION_NOT_POSTED) == [(STOPPED, "error")]
        assert Interaction.objects.get().state == Interaction.State.CANCELLED
        assert len(agent.calls("CancelTask")) == 1

    def test_and_one_that_is_put_to_the_channel_waits_for_an_answer(self, make_world, agent):
        world = make_world(agent_url=agent.url, ask_user=True)
        ts = world.mention("deploy")
        wait_for_prompt(world, ts)
        wait_for_turns_to_end(world, 1)
        [reply] = [m for m in bot_messages(world, ts) if m.cards]
        assert [(card.title, card.status) for card in reply.cards] == [(WAITING_FOR_YOUR_ANSWER, "complete")]


def test_a_prompt_slack_refuses_for_now_is_posted_by_the_sweep_and_answered_as_an_approvals_is(
    make_world, kagent_agent
):
    """The same failure policy as an approval's prompt (tests/e2e/test_approvals.py): the question stays
    open, the reply ends waiting, the task is not cancelled, and beat's sweep posts the prompt."""
    world = make_world(
        agent_url=kagent_agent.url,
        dialect="kagent-v1",
        ask_user=True,
        beat=True,
        env={"RECOVERY_INTERVAL_SECONDS": "1"},
    )
    world.slack.fail("chat.postMessage", "http_503", times=None, when=lambda args: SUBMIT_ACTION in str(args))
    ts = world.mention("set up the service")
    world.stack.wait_for_log("worker", "interaction.prompt_deferred", timeout=WAIT)
    world.slack.wait_until(lambda: Turn.objects.get().outcome == Turn.Outcome.ASKED, timeout=WAIT)
    interaction = Interaction.objects.get()
    assert (interaction.state, interaction.prompt_ts) == (Interaction.State.OPEN, "")
    assert not any(m.text == notices.QUESTION_NOT_POSTED for m in bot_messages(world, ts))
    world.slack.clear_faults()  # Slack takes posts again: the sweep posts the prompt

    prompt = wait_for_prompt(world, ts)
    submit(world, prompt.ts, choices={"answer-0": "1", "answer-1": ["2"], "answer-2": "No"})
    world.slack.wait_until(
        lambda: any(m.text == "Thanks, carrying on." for m in bot_messages(world, ts)), timeout=WAIT
    )
    assert len(kagent_agent.received) == 2
    assert not kagent_agent.calls("CancelTask")


def test_with_approver_groups_any_channel_member_still_answers_a_question(make_world, kagent_agent):
    """Approver groups gate tool approvals only: a member of the channel in none of them answers."""
    world = make_world(
        agent_url=kagent_agent.url,
        dialect="kagent-v1",
        ask_user=True,
        tool_approvals=True,
        approver_groups=["S0APPROVE"],
    )
    world.slack.add_usergroup("S0APPROVE", "approvers", [defaults.ADA])
    ts = world.mention("set up the service")
    prompt = wait_for_prompt(world, ts)

    submit(
        world, prompt.ts, user=defaults.GRACE, choices={"answer-0": "1", "answer-1": ["2"], "answer-2": "No"}
    )

    world.slack.wait_until(lambda: len(kagent_agent.received) == 2, timeout=WAIT)
    assert answers_received(kagent_agent.received[1])["answers"] == [
        {"answer": ["MySQL"]},
        {"answer": ["Search"]},
        {"answer": ["No"]},
    ]
    assert AuditEvent.objects.get(action="interaction.answered").actor_id == defaults.GRACE
    assert not world.slack.ephemerals(defaults.GRACE)
    assert world.slack.count("usergroups.users.list") == 0
