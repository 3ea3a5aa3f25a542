"""A pause put to the thread one way, whatever its kind (interactions/asking.py), as the runner hands it
over, against the scripted A2A agent and the Slack fake. One failure policy for a question and an
approval alike: a prompt Slack refuses for now is kept, the task waiting, and the sweep posts it; one
Slack refuses for good is refused (audited, the thread told) and its task cancelled, by the sweep
when the agent cannot be reached at once."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from interactions import services, sweeps
from interactions.models import Interaction
from interactions.registry import KINDS
from interactions.services import UNPOSTED_GRACE
from sessions import runner
from sessions.models import Turn
from simulator import defaults
from simulator.blocks import interactive_elements
from tests.fakes.a2a_agent.steps import http_status
from tests.support.turn_loop import run, thread_texts

from .paused_turns import pausing_for, said

# The runner reaches the database from its threads: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slack(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return slack_fake


@pytest.fixture(params=[Interaction.Kind.QUESTION, Interaction.Kind.APPROVAL])
def pausing(request, make_a2a_agent):
    return pausing_for(request.param, make_a2a_agent)


def past_the_grace() -> None:
    """The Interaction is older than a prompt the turn that opened it may still be posting."""
    Interaction.objects.update(created_at=timezone.now() - UNPOSTED_GRACE - timedelta(seconds=1))


def test_a_prompt_slack_refuses_for_now_is_kept_and_posted_by_the_sweep_the_task_waiting(pausing, slack):
    slack.fail("chat.postMessage", "http_503", times=None, when=pausing.is_the_prompt)
    turn = said(slack, pausing.agent, **pausing.asked)
    run(runner.run_turn(turn.pk))

    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.DONE, Turn.Outcome.ASKED)
    interaction = Interaction.objects.get()
    assert (interaction.kind, interaction.state, interaction.prompt_ts) == (
        pausing.kind,
        Interaction.State.OPEN,
        "",
    )
    assert KINDS[pausing.kind].unusable_notice not in thread_texts(slack, turn)
    assert pausing.agent.calls("CancelTask") == []

    slack.clear_faults()
    past_the_grace()
    assert sweeps.time_out_interactions().counts["prompts posted"] == 1
    interaction.refresh_from_db()
    assert interaction.state == Interaction.State.OPEN
    prompt = slack.message(defaults.CHANNEL_ID, interaction.prompt_ts)
    assert prompt.thread_ts == turn.session.thread_ts
    assert list(interactive_elements(prompt.blocks))
    assert pausing.agent.calls("CancelTask") == []
    assert "prompts posted" not in sweeps.time_out_interactions().counts  # posted once


def test_a_prompt_slack_refuses_for_good_is_refused_the_thread_told_and_the_task_cancelled(pausing, slack):
    slack.fail("chat.postMessage", "invalid_blocks", when=pausing.is_the_prompt)
    turn = said(slack, pausing.agent, **pausing.asked)
    run(runner.run_turn(turn.pk))

    turn.refresh_from_db()
    assert (turn.state, turn.outcome) == (Turn.State.FAILED, Turn.Outcome.QUESTION_UNUSABLE)
    assert thread_texts(slack, turn).count(KINDS[pausing.kind].unusable_notice) == 1
    interaction = Interaction.objects.get()
    assert (interaction.state, interaction.prompt_ts) == (Interaction.State.CANCELLED, "")
    assert interaction.task_cancelled_at is not None
    assert len(pausing.agent.calls("CancelTask")) == 1
    [refused] = AuditEvent.objects.filter(action=services.REFUSED)
    assert refused.details["reason"] == "prompt-refused"


def test_a_refused_prompt_whose_agent_cannot_be_reached_has_its_task_cancelled_by_the_sweep(pausing, slack):
    slack.fail("chat.postMessage", "invalid_blocks", when=pausing.is_the_prompt)
    pausing.agent.fail_next_call(http_status(503), method="CancelTask")
    turn = said(slack, pausing.agent, **pausing.asked)
    run(runner.run_turn(turn.pk))
    assert Interaction.objects.get().task_cancelled_at is None  # the agent could not be reached: owed

    assert sweeps.time_out_interactions().counts["paused tasks cancelled"] == 1
    task_id = Turn.objects.get().task_id
    assert pausing.agent.wait_for_task_state(task_id, "canceled").state == "canceled"
    assert Interaction.objects.get().task_cancelled_at is not None
    sweeps.time_out_interactions()
    assert len(pausing.agent.calls("CancelTask")) == 2  # the one that failed, the sweep's; no more
    assert thread_texts(slack, turn).count(KINDS[pausing.kind].unusable_notice) == 1
