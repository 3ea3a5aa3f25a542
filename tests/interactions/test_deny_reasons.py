"""A reason with a denial (denyReasons): which presses ask it, the modal within Slack's limits, the
press kept in its metadata and read back (a forged one refused), the reason checked, redacted and
cut, taken with the decision and audited, and decided nothing for a closed prompt."""

import json

import pytest

from audit.models import AuditEvent
from interactions import approval_prompts, approvals, deny_reasons, services
from interactions.kinds import Refusal, Refused, Taken
from interactions.models import Interaction
from kourier.slack.incoming import ModalSubmission, SubmitPress
from sessions.models import Turn
from simulator import defaults
from simulator.modals import view_problems
from tests.factories import BindingFactory, TurnFactory
from tests.interactions.helpers import PROMPT_TS, SECRET, opened, request, tool

pytestmark = pytest.mark.django_db

TWO_TOOLS = request(tool(n=0), tool("check_status", n=1))
APPROVE_FIRST = {
    "tool-0": {
        "verdict-0": {"type": "radio_buttons", "selected_option": {"value": approval_prompts.APPROVED}}
    },
    "tool-1": {"verdict-1": {"type": "radio_buttons", "selected_option": {"value": approval_prompts.DENIED}}},
}


def a_turn(*, deny_reasons_on: bool):
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID], dialect="kagent-v1", tool_approvals=True, deny_reasons=deny_reasons_on
    )
    return TurnFactory(session__binding=binding, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED)


def a_press(interaction: Interaction, action: str = approval_prompts.DENY_ACTION, values=None) -> SubmitPress:
    return SubmitPress(
        value=str(interaction.pk),
        team_id=defaults.TEAM_ID,
        channel_id=interaction.channel_id,
        message_ts=PROMPT_TS,
        thread_ts="1700000000.000100",
        user_id=defaults.GRACE,
        values=values or {},
        response_url="https://hooks.slack.com/actions/T1/1/x",
        action_id=action,
        trigger_id="1.2.abc",
    )


def submitted(metadata: str, typed: str, user: str = defaults.ADA) -> ModalSubmission:
    values = {
        deny_reasons.REASON_BLOCK: {deny_reasons.REASON_ACTION: {"type": "plain_text_input", "value": typed}}
    }
    return ModalSubmission(user, defaults.TEAM_ID, deny_reasons.CALLBACK_ID, metadata, values)


class TestWhichPressesAskWhy:
    def test_a_denial_on_a_binding_with_deny_reasons_names_the_tools_it_denies(self):
        interaction = opened(a_turn(deny_reasons_on=True), TWO_TOOLS)
        assert deny_reasons.denied_tools(interaction.pk, approval_prompts.DENY_ACTION, {}) == [
            "add_numbers",
            "check_status",
        ]
        assert deny_reasons.denied_tools(interaction.pk, approval_prompts.DECIDE_ACTION, APPROVE_FIRST) == [
            "check_status"
        ]

    def test_an_approval_a_binding_without_it_and_a_closed_prompt_decide_as_they_are(self):
        asking = opened(a_turn(deny_reasons_on=True), TWO_TOOLS)
        assert deny_reasons.denied_tools(asking.pk, approval_prompts.APPROVE_ACTION, {}) is None
        without = opened(a_turn(deny_reasons_on=False), TWO_TOOLS)
        assert deny_reasons.denied_tools(without.pk, approval_prompts.DENY_ACTION, {}) is None
        Interaction.objects.filter(pk=asking.pk).update(state=Interaction.State.TIMED_OUT)
        assert deny_reasons.denied_tools(asking.pk, approval_prompts.DENY_ACTION, {}) is None


class TestTheModal:
    def test_it_fits_slacks_limits_and_keeps_the_press(self):
        interaction = opened(a_turn(deny_reasons_on=True), TWO_TOOLS)
        press = a_press(interaction, approval_prompts.DECIDE_ACTION, APPROVE_FIRST)
        view = deny_reasons.reason_modal(press, ["check_status"])
        assert view is not None
        assert view_problems(view) == []
        assert view["notify_on_close"] is True
        assert "`check_status`" in view["blocks"][0]["text"]["text"]

        back = deny_reasons.press_of(submitted(view["private_metadata"], "  not today  "), "  not today  ")

        assert back is not None
        assert (back.value, back.channel_id, back.message_ts, back.action_id) == (
            press.value, press.channel_id, press.message_ts, press.action_id,
        )  # fmt: skip
        assert back.user_id == defaults.ADA  # whoever submits is who decides
        assert back.values == {
            "tool-0": {"verdict-0": {"selected_option": {"value": approval_prompts.APPROVED}}},
            "tool-1": {"verdict-1": {"selected_option": {"value": approval_prompts.DENIED}}},
        }
        assert back.reason == "not today"

    def test_a_press_too_large_for_private_metadata_is_not_asked(self):
        interaction = opened(a_turn(deny_reasons_on=True), TWO_TOOLS)
        huge = {f"tool-{n}": {f"verdict-{n}": {"selected_option": {"value": "deny" * 20}}} for n in range(40)}
        assert deny_reasons.reason_modal(a_press(interaction, values=huge), ["x"]) is None

    @pytest.mark.parametrize("metadata", ["", "not json", "[]", json.dumps({"v": "1"}), json.dumps({"v": 1})])
    def test_metadata_we_did_not_write_is_no_press(self, metadata):
        assert deny_reasons.press_of(submitted(metadata, "why"), "why") is None


class TestTheReason:
    def test_a_blank_or_too_long_reason_is_to_be_fixed_in_the_modal(self):
        assert deny_reasons.reason_problem("   ") == deny_reasons.REASON_BLANK
        assert deny_reasons.reason_problem("x" * 501) == deny_reasons.REASON_TOO_LONG
        assert deny_reasons.reason_problem("x" * 500) is None

    def test_it_is_redacted_like_arguments_and_at_most_500_characters(self):
        assert deny_reasons.cleaned(f"token={SECRET}") == "token=[redacted]"
        assert len(deny_reasons.cleaned("y" * 700)) == deny_reasons.MAX_REASON

    def test_the_fixed_wordings(self):
        assert deny_reasons.TITLE == "Deny tool call"
        assert deny_reasons.REASON_BLANK == "Write a reason, or close this form to decide nothing."
        assert deny_reasons.REASON_TOO_LONG == "A reason can be at most 500 characters."
        assert deny_reasons.FORM_UNAVAILABLE == (
            "I could not open the form for your reason in time, so nothing was decided. Press Deny again."
        )


def take(interaction, action=approval_prompts.DENY_ACTION, values=None, reason="the db is down"):
    return services.take_allowed_press(
        approvals.APPROVAL,
        interaction.pk,
        channel_id=interaction.channel_id,
        prompt_ts=PROMPT_TS,
        user_id=defaults.ADA,
        action_id=action,
        values=values or {},
        reason=reason,
    )


class TestTaken:
    def test_the_reason_is_kept_audited_and_carried_to_the_decision(self):
        interaction = opened(a_turn(deny_reasons_on=True), TWO_TOOLS)
        taken = take(interaction, approval_prompts.DECIDE_ACTION, APPROVE_FIRST)
        assert isinstance(taken, Taken)
        [row] = AuditEvent.objects.filter(action=approvals.DECIDED)
        assert row.details["reason"] == "the db is down"
        decision = approvals.decision_of(taken.turn_id)
        assert decision is not None
        assert (decision.verdicts, decision.reason) == ((True, False), "the db is down")

    def test_a_decision_that_approves_everything_carries_no_reason(self):
        interaction = opened(a_turn(deny_reasons_on=True), TWO_TOOLS)
        taken = take(interaction, approval_prompts.APPROVE_ACTION)
        assert isinstance(taken, Taken)
        assert Interaction.objects.get(pk=interaction.pk).deny_reason == ""
        assert "reason" not in AuditEvent.objects.get(action=approvals.DECIDED).details

    def test_a_submission_for_a_closed_prompt_decides_nothing(self):
        interaction = opened(a_turn(deny_reasons_on=True), TWO_TOOLS)
        Interaction.objects.filter(pk=interaction.pk).update(state=Interaction.State.TIMED_OUT)
        refused = take(interaction)
        assert isinstance(refused, Refused)
        assert refused.refusal is Refusal.CLOSED
        assert Interaction.objects.get(pk=interaction.pk).deny_reason == ""
        assert not AuditEvent.objects.filter(action=approvals.DECIDED).exists()
