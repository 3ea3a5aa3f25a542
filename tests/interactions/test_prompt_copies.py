"""A direct message's approval copied to its Binding's approvalsChannel: where the copy goes, and that
a press on the copy is taken like one on the prompt."""

import pytest

from interactions import prompts, questions, services
from interactions.kinds import Refusal, Taken
from interactions.models import Interaction
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory

from .questions import ONE_OF_THREE, question

pytestmark = pytest.mark.django_db

IM, APPROVALS = "D0000000001", "C0APPROVE"
PROMPT_TS, COPY_TS = "1700000200.000100", "1700000300.000100"
COMPLETE = {"question-0": {"answer-0": {"type": "radio_buttons", "selected_option": {"value": "1"}}}}


def paused(**binding_fields) -> Interaction:
    binding = BindingFactory(channels=[], ask_user=True, **binding_fields)
    turn = TurnFactory(
        session__binding=binding, session__channel_id=IM, channel_id=IM, state=Turn.State.DONE,
        outcome=Turn.Outcome.ASKED, task_id="task-1",
    )  # fmt: skip
    interaction = questions.open_question(turn.pk, question(ONE_OF_THREE))
    services.record_prompt(interaction.pk, PROMPT_TS)
    return interaction


def press(interaction, channel, ts):
    return services.take_allowed_press(
        questions.QUESTION,
        interaction.pk,
        action_id=prompts.SUBMIT_ACTION,
        channel_id=channel,
        prompt_ts=ts,
        user_id=defaults.GRACE,
        values=COMPLETE,
    )


def test_an_approval_of_a_dm_binding_with_approver_groups_is_copied_to_its_approvals_channel():
    interaction = paused(approver_groups=["S0APPROVE"], direct_messages={"approvals_channel": APPROVALS})
    assert services.copy_channel_of(interaction.pk) == (APPROVALS, interaction.turn.user_id)
    services.record_copy(interaction.pk, APPROVALS, COPY_TS)
    assert services.copy_channel_of(interaction.pk) is None  # copied once


@pytest.mark.parametrize(
    "fields",
    [
        {"direct_messages": {"approvals_channel": APPROVALS}},
        {"approver_groups": ["S0APPROVE"], "direct_messages": {}},
    ],
    ids=["no approver groups", "no approvals channel"],
)
def test_no_copy_without_approver_groups_and_an_approvals_channel(fields):
    assert services.copy_channel_of(paused(**fields).pk) is None


def test_a_press_on_the_copy_is_taken_once_it_is_posted():
    interaction = paused(approver_groups=["S0APPROVE"], direct_messages={"approvals_channel": APPROVALS})
    assert press(interaction, APPROVALS, COPY_TS).refusal is Refusal.UNKNOWN

    services.record_copy(interaction.pk, APPROVALS, COPY_TS)

    assert isinstance(press(interaction, APPROVALS, COPY_TS), Taken)
    assert press(interaction, IM, PROMPT_TS).refusal is Refusal.TAKEN  # one decision ends both prompts
    assert press(interaction, APPROVALS, PROMPT_TS).refusal is Refusal.UNKNOWN  # not a prompt of its
