"""Paused tasks owed a cancellation (interactions/cancellations.py): whatever the pause's kind, a task
the agent could not be reached to cancel is cancelled by a later sweep, once, and never left paused
for good. A pause nobody is asked (askUser or toolApprovals off) included."""

import pytest
from django.utils import timezone

from interactions import cancellations, sweeps
from interactions.models import Interaction
from sessions import notices, runner
from sessions.models import Turn
from tests.factories import InteractionFactory, TurnFactory
from tests.fakes.a2a_agent.steps import http_status
from tests.support.turn_loop import run, thread_texts

from .paused_turns import pausing_for, said

# The runner reaches the database from its threads: they must see the test's rows.
pytestmark = pytest.mark.django_db(transaction=True)

NOT_ENABLED = {
    Interaction.Kind.QUESTION: notices.QUESTION_NOT_ENABLED,
    Interaction.Kind.APPROVAL: notices.APPROVAL_NOT_ENABLED,
}


@pytest.fixture
def slack(slack_fake, settings, monkeypatch):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    return slack_fake


@pytest.fixture(params=[Interaction.Kind.QUESTION, Interaction.Kind.APPROVAL])
def pausing(request, make_a2a_agent):
    return pausing_for(request.param, make_a2a_agent)


class TestAPauseNobodyIsAsked:
    """askUser off for a question, toolApprovals off for an approval: the task is cancelled, the thread
    told."""

    def test_whose_task_is_cancelled_leaves_nothing_behind(self, pausing, slack):
        turn = said(slack, pausing.agent, **pausing.not_asked)
        run(runner.run_turn(turn.pk))
        assert len(pausing.agent.calls("CancelTask")) == 1
        assert thread_texts(slack, turn)[-1] == NOT_ENABLED[pausing.kind]
        assert not Interaction.objects.exists()

    def test_whose_agent_cannot_be_reached_is_cancelled_by_the_sweep_once_it_can(self, pausing, slack):
        pausing.agent.fail_next_call(http_status(503), method="CancelTask")
        turn = said(slack, pausing.agent, **pausing.not_asked)
        run(runner.run_turn(turn.pk))
        turn.refresh_from_db()
        assert (turn.state, turn.outcome) == (Turn.State.FAILED, Turn.Outcome.QUESTION_CANCELED)
        assert thread_texts(slack, turn)[-1] == NOT_ENABLED[pausing.kind]
        assert pausing.agent.task(turn.task_id).state == "input-required"  # still paused
        kept = Interaction.objects.get()
        assert (kept.kind, kept.state, kept.pause, kept.task_cancelled_at) == (
            pausing.kind,
            Interaction.State.CANCELLED,
            {"task_id": turn.task_id},  # nothing the agent asked is stored
            None,
        )

        assert sweeps.time_out_interactions().counts["paused tasks cancelled"] == 1
        assert pausing.agent.wait_for_task_state(turn.task_id, "canceled").state == "canceled"
        assert Interaction.objects.get().task_cancelled_at is not None
        sweeps.time_out_interactions()
        assert len(pausing.agent.calls("CancelTask")) == 2  # the one that failed, the sweep's; no more
        assert thread_texts(slack, turn).count(NOT_ENABLED[pausing.kind]) == 1  # told once


def test_a_pause_kept_twice_for_one_turn_is_one_interaction():
    turn = TurnFactory(state=Turn.State.DONE, outcome=Turn.Outcome.QUESTION_CANCELED)
    first = cancellations.keep_unasked(turn.pk, Interaction.Kind.QUESTION, "task-1")
    assert cancellations.keep_unasked(turn.pk, Interaction.Kind.QUESTION, "task-1").pk == first.pk


NOT_TAKEN = {"answer_turn__state": Turn.State.DONE, "answer_turn__outcome": Turn.Outcome.UNREACHABLE}
TAKEN = {"answer_turn__state": Turn.State.DONE, "answer_turn__outcome": Turn.Outcome.COMPLETED}


def interaction(kind: Interaction.Kind, state: Interaction.State, **fields) -> Interaction:
    answer_turn = {key.removeprefix("answer_turn__"): value for key, value in fields.items() if "__" in key}
    made = InteractionFactory.create(
        kind=kind, state=state, **{key: value for key, value in fields.items() if "__" not in key}
    )
    if answer_turn:
        Interaction.objects.filter(pk=made.pk).update(
            answer_turn=TurnFactory(session=made.session, kind=Turn.Kind.ANSWER, **answer_turn)
        )
    return made


CLOSED = {"closed_at": timezone.now()}


@pytest.mark.parametrize(
    ("kind", "state", "fields", "owed"),
    [
        (Interaction.Kind.QUESTION, Interaction.State.CANCELLED, CLOSED, True),
        (Interaction.Kind.APPROVAL, Interaction.State.CANCELLED, CLOSED, True),
        (Interaction.Kind.QUESTION, Interaction.State.TIMED_OUT, CLOSED, True),
        (Interaction.Kind.QUESTION, Interaction.State.TIMED_OUT, {}, False),  # its timeout run tries first
        (Interaction.Kind.APPROVAL, Interaction.State.TIMED_OUT, {**CLOSED, **NOT_TAKEN}, True),
        (Interaction.Kind.APPROVAL, Interaction.State.TIMED_OUT, {**CLOSED, **TAKEN}, False),
        (Interaction.Kind.APPROVAL, Interaction.State.TIMED_OUT, CLOSED, False),  # its denial is on its way
        (Interaction.Kind.QUESTION, Interaction.State.ANSWERED, CLOSED, False),
        (Interaction.Kind.QUESTION, Interaction.State.OPEN, {}, False),
        (
            Interaction.Kind.QUESTION,
            Interaction.State.CANCELLED,
            {**CLOSED, "task_cancelled_at": timezone.now()},
            False,
        ),
    ],
)
def test_a_paused_task_is_owed_its_cancellation_until_the_agent_settled_it(kind, state, fields, owed):
    made = interaction(kind, state, **fields)
    assert [owing.pk for owing in cancellations.owed()] == ([made.pk] if owed else [])
