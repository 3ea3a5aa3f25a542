"""The time-out-interactions sweep against the Slack fake and the scripted A2A agent: at a question's
deadline the paused task is cancelled, the prompt closed and the thread told, once, however often the
sweep runs and wherever a run stopped; a task the agent could not be reached to cancel is cancelled by
a later run."""

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone

from interactions import prompts, questions, services, sweeps
from interactions.models import Interaction
from kourier import queue
from sessions import notices
from sessions.models import Turn
from simulator import defaults
from simulator.blocks import interactive_elements
from tests.factories import BindingFactory, InteractionFactory, TurnFactory
from tests.fakes.a2a_agent.raw_client import RawA2A, task_of
from tests.fakes.a2a_agent.steps import http_status, input_required, jsonrpc_error

from .questions import text_question

# The sweep posts through the database threads async code uses: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = timedelta(minutes=30)
NOTHING_DONE = {"questions timed out": 0, "prompts closed": 0}


@dataclass(frozen=True)
class Asked:
    interaction_id: int
    session_id: int
    task_id: str
    thread_ts: str
    prompt_ts: str


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, tuple]]:
    """The Celery tasks sent, by short name, with their arguments (nothing reaches a broker)."""
    tasks: list[tuple[str, tuple]] = []
    monkeypatch.setattr(queue, "publish", lambda name, *args: tasks.append((name.rsplit(".", 1)[-1], args)))
    return tasks


@pytest.fixture
def ask(slack_fake, slack_client, a2a_agent, settings, monkeypatch):
    """Puts a question to a thread as the runner does: the agent's task paused on it, its prompt posted;
    ``asked_ago`` is how long ago."""
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID], agent_url=a2a_agent.url, ask_user=True, interaction_timeout=TIMEOUT
    )

    def ask(*, asked_ago: timedelta = TIMEOUT + timedelta(seconds=1)) -> Asked:
        a2a_agent.script([input_required("What should the release be called?")])
        with RawA2A(a2a_agent.url, "1.0") as agent:
            task_id = task_of(agent.send("name the release"))["id"]
        a2a_agent.wait_for_task_state(task_id, "input-required")
        root = slack_fake.user_says(
            defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} name the release", deliver="none"
        )
        turn = TurnFactory(
            session__binding=binding,
            session__thread_ts=root,
            message_ts=root,
            state=Turn.State.DONE,
            outcome=Turn.Outcome.ASKED,
            task_id=task_id,
        )
        question = text_question(task_id=task_id)
        interaction = questions.open_question(turn.pk, question, now=timezone.now() - asked_ago)
        prompt_ts = slack_client.chat_postMessage(
            channel=defaults.CHANNEL_ID,
            thread_ts=root,
            blocks=prompts.open_prompt(question, interaction.pk, typed_replies=True),
            text=prompts.fallback_text(question),
        )["ts"]
        services.record_prompt(interaction.pk, prompt_ts)
        return Asked(interaction.pk, turn.session_id, task_id, root, prompt_ts)

    return ask


def notices_in(slack_fake, asked: Asked) -> list[str]:
    """What the bot said in the thread besides the prompt."""
    return [
        message.text
        for message in slack_fake.thread(defaults.CHANNEL_ID, asked.thread_ts)
        if message.bot_id and message.ts != asked.prompt_ts
    ]


def prompt_of(slack_fake, asked: Asked):
    return slack_fake.message(defaults.CHANNEL_ID, asked.prompt_ts)


def test_at_the_deadline_the_task_is_cancelled_the_prompt_closed_and_the_thread_told(
    ask, slack_fake, a2a_agent, sent
):
    asked = ask()
    assert sweeps.time_out_interactions().counts == {"questions timed out": 1, "prompts closed": 1}

    assert len(a2a_agent.calls("CancelTask")) == 1
    assert a2a_agent.wait_for_task_state(asked.task_id, "canceled").state == "canceled"
    prompt = prompt_of(slack_fake, asked)
    assert list(interactive_elements(prompt.blocks)) == []
    assert prompts.TIMED_OUT_LINE in str(prompt.blocks)
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]
    interaction = Interaction.objects.get()
    assert interaction.state == Interaction.State.TIMED_OUT
    assert interaction.closed_at is not None
    assert sent == [("drive_session", (asked.session_id,))]  # the replies that waited run now


def test_run_again_it_does_nothing_more(ask, slack_fake, a2a_agent, sent):
    asked = ask()
    sweeps.time_out_interactions()
    assert sweeps.time_out_interactions().counts == NOTHING_DONE
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]
    assert len(a2a_agent.calls("CancelTask")) == 1
    assert slack_fake.count("chat.update") == 1
    assert len(sent) == 1


def test_after_a_run_that_stopped_half_way_the_next_tells_the_thread_only_once(
    ask, slack_fake, monkeypatch, sent
):
    asked = ask()

    def crash(interaction_id):
        raise RuntimeError("the worker died")

    with monkeypatch.context() as crashing:
        crashing.setattr(services, "mark_closed", crash)
        with pytest.raises(RuntimeError):
            sweeps.time_out_interactions()
    interaction = Interaction.objects.get()
    assert (interaction.state, interaction.closed_at) == (Interaction.State.TIMED_OUT, None)
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]  # told before it stopped

    assert sweeps.time_out_interactions().counts == {"questions timed out": 0, "prompts closed": 1}
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]
    assert list(interactive_elements(prompt_of(slack_fake, asked).blocks)) == []
    assert Interaction.objects.get().closed_at is not None
    assert sent == [("drive_session", (asked.session_id,))]


def test_a_notice_slack_failed_is_posted_by_the_next_run_once(ask, slack_fake, sent):
    asked = ask()
    slack_fake.fail("chat.postMessage", "internal_error", times=None)
    assert sweeps.time_out_interactions().counts == {"questions timed out": 1, "prompts closed": 0}
    assert Interaction.objects.get().closed_at is None
    assert sent == []

    slack_fake.clear_faults()
    assert sweeps.time_out_interactions().counts == {"questions timed out": 0, "prompts closed": 1}
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]
    assert sent == [("drive_session", (asked.session_id,))]


def test_an_agent_that_refuses_the_cancel_still_has_the_prompt_closed_and_the_thread_told(
    ask, slack_fake, a2a_agent, sent
):
    asked = ask()
    a2a_agent.fail_next_call(jsonrpc_error(-32002, "Task cannot be canceled"), method="CancelTask")
    assert sweeps.time_out_interactions().counts == {"questions timed out": 1, "prompts closed": 1}
    assert len(a2a_agent.calls("CancelTask")) == 1
    assert prompts.TIMED_OUT_LINE in str(prompt_of(slack_fake, asked).blocks)
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]


def test_an_agent_out_of_reach_at_the_deadline_has_the_task_cancelled_by_a_later_run_once_back(
    ask, slack_fake, a2a_agent, sent
):
    asked = ask()
    a2a_agent.fail_next_call(http_status(503), method="CancelTask")
    assert sweeps.time_out_interactions().counts == {"questions timed out": 1, "prompts closed": 1}
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]  # told at the deadline
    assert a2a_agent.task(asked.task_id).state == "input-required"  # still paused
    assert Interaction.objects.get().task_cancelled_at is None

    assert sweeps.time_out_interactions().counts == {**NOTHING_DONE, "paused tasks cancelled": 1}
    assert a2a_agent.wait_for_task_state(asked.task_id, "canceled").state == "canceled"
    assert Interaction.objects.get().task_cancelled_at is not None
    assert sweeps.time_out_interactions().counts == NOTHING_DONE
    assert len(a2a_agent.calls("CancelTask")) == 2  # the one that failed, the later run's; no more
    assert notices_in(slack_fake, asked) == [notices.QUESTION_TIMED_OUT]  # told once


def test_a_question_still_in_time_is_left_alone(ask, slack_fake, a2a_agent, sent):
    asked = ask(asked_ago=TIMEOUT - timedelta(minutes=1))
    assert sweeps.time_out_interactions().counts == NOTHING_DONE
    assert Interaction.objects.get().state == Interaction.State.OPEN
    assert a2a_agent.calls("CancelTask") == []
    assert notices_in(slack_fake, asked) == []
    assert slack_fake.count("chat.update") == 0
    assert sent == []


def test_a_question_answered_before_the_sweep_came_is_left_to_its_answer(ask, slack_fake, a2a_agent, sent):
    asked = ask()
    taken = questions.take_typed_answer(
        Interaction.objects.get().session, message_ts="1700009999.000100", user_id=defaults.ADA, text="Orion"
    )
    assert taken is not None
    sent.clear()
    assert sweeps.time_out_interactions().counts == NOTHING_DONE
    assert Interaction.objects.get().state == Interaction.State.ANSWERED
    assert a2a_agent.calls("CancelTask") == []
    assert notices_in(slack_fake, asked) == []
    assert sent == []


@pytest.mark.parametrize(
    ("kind", "answered_by", "told"),
    [
        (Interaction.Kind.QUESTION, "", notices.QUESTION_TIMED_OUT),
        (Interaction.Kind.APPROVAL, "", notices.APPROVAL_TIMED_OUT),
        (Interaction.Kind.QUESTION, defaults.ADA, notices.ANSWER_UNDELIVERED),
        (Interaction.Kind.APPROVAL, defaults.ADA, notices.DECISION_UNDELIVERED),
    ],
)
def test_at_the_deadline_the_thread_is_told_whether_nobody_took_it_or_the_agent_never_got_it(
    kind, answered_by, told
):
    interaction = InteractionFactory(kind=kind, answered_by=answered_by, state=Interaction.State.TIMED_OUT)
    nobody = notices.QUESTION_TIMED_OUT if kind == Interaction.Kind.QUESTION else notices.APPROVAL_TIMED_OUT

    assert sweeps._timed_out_notice(interaction, nobody) == told
