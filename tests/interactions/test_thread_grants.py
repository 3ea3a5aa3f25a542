"""Allow for this thread (issue 33, beyond the spec, opt-in): the press that keeps a grant, who may
press it and when, and a later call of the tool in the thread approved by it at once, audited with
the decision it relied on; never for a tool a rule denies or sends to other groups, never once the
Binding stops offering it or the thread expired."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from interactions import approval_prompts, approvals, services
from interactions.kinds import Refusal, Refused, Taken
from interactions.models import Interaction, ThreadGrant
from sessions.identity import SYSTEM_IDENTITY
from sessions.models import Turn
from simulator import defaults
from simulator.blocks import block_problems
from tests.factories import BindingFactory, TurnFactory
from tests.interactions.helpers import PROMPT_TS, opened, request, tool

ALLOW = approval_prompts.ALLOW_FOR_THREAD_ACTION
ADD = request(tool("add_numbers"))
OPS, DBA = "S0000000001", "S0000000002"


def first_turn(*, allow_for_thread=True, user_id=defaults.ADA, **binding_fields):
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        dialect="kagent-v1",
        tool_approvals=True,
        allow_for_thread=allow_for_thread,
        **binding_fields,
    )
    return TurnFactory(
        session__binding=binding, user_id=user_id, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED
    )


def press(interaction, action=ALLOW, user=defaults.GRACE):
    return services.take_allowed_press(
        approvals.APPROVAL,
        interaction.pk,
        channel_id=interaction.channel_id,
        prompt_ts=PROMPT_TS,
        user_id=user,
        action_id=action,
        values={},
    )


def next_call(turn, req=ADD, user_id=defaults.ADA):
    """The agent's next call in the same thread: a new turn of the session that pauses for it."""
    later = TurnFactory(
        session=turn.session, user_id=user_id, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED
    )
    return approvals.open_approval(later.pk, req)


def allowed(turn):
    taken = press(opened(turn, ADD))
    assert isinstance(taken, Taken)
    return taken


@pytest.mark.django_db
class TestThePress:
    def test_it_approves_and_keeps_a_grant_naming_its_decision_and_approver(self):
        turn = first_turn(approver_groups=[OPS])
        interaction = opened(turn, ADD)

        press(interaction)

        interaction.refresh_from_db()
        decision = AuditEvent.objects.get(action="interaction.decided")
        assert interaction.answer_turn.answers == [True]
        assert decision.details["allowed_for_thread"] is True
        grant = ThreadGrant.objects.get()
        assert (grant.session_id, grant.tool_name, grant.granted_in_id, grant.decision_id) == (
            turn.session_id,
            "add_numbers",
            interaction.pk,
            decision.pk,
        )
        assert (grant.granted_by, grant.approver_groups) == (defaults.GRACE, [OPS])

    def test_the_ended_prompt_says_the_tool_now_runs_without_asking(self):
        turn = first_turn()
        interaction = opened(turn, ADD)
        press(interaction)
        interaction.refresh_from_db()

        blocks, _ = approvals.APPROVAL.ended_prompt(interaction)

        assert (
            "Allowed for this thread: add_numbers now runs here without asking until the thread expires."
            in (blocks[-1]["elements"][0]["text"])
        )

    def test_on_a_binding_that_does_not_offer_it_a_forged_press_is_refused_and_nothing_is_stored(self):
        interaction = opened(first_turn(allow_for_thread=False), ADD)

        refused = press(interaction)

        assert isinstance(refused, Refused)
        assert refused.refusal is Refusal.MISMATCH
        assert refused.message == approvals.APPROVAL.refusals[Refusal.MISMATCH]
        assert Interaction.objects.get(pk=interaction.pk).state == Interaction.State.OPEN
        assert not ThreadGrant.objects.exists()
        assert not AuditEvent.objects.filter(action="interaction.decided").exists()

    def test_on_a_prompt_of_several_tools_it_is_not_offered_and_is_refused(self):
        interaction = opened(first_turn(), request(tool("add_numbers"), tool("check_status", n=1)))

        refused = press(interaction)

        assert isinstance(refused, Refused)
        assert refused.refusal is Refusal.MISMATCH
        assert not ThreadGrant.objects.exists()

    def test_after_the_prompt_ended_it_is_refused_and_nothing_is_stored(self):
        interaction = opened(first_turn(), ADD)
        press(interaction, action=approval_prompts.DENY_ACTION)

        refused = press(interaction)

        assert isinstance(refused, Refused)
        assert refused.refusal is Refusal.TAKEN
        assert not ThreadGrant.objects.exists()

    def test_after_a_timeout_it_is_refused(self):
        interaction = opened(first_turn(), ADD)
        Interaction.objects.filter(pk=interaction.pk).update(state=Interaction.State.TIMED_OUT)

        refused = press(interaction)

        assert isinstance(refused, Refused)
        assert refused.refusal is Refusal.CLOSED
        assert not ThreadGrant.objects.exists()

    def test_four_eyes_refuses_the_requester_as_it_refuses_their_approve(self):
        interaction = opened(first_turn(separate_approver=True), ADD)

        refused = press(interaction, user=defaults.ADA)

        assert isinstance(refused, Refused)
        assert refused.refusal is Refusal.SEPARATE_APPROVER
        assert not ThreadGrant.objects.exists()


@pytest.mark.django_db
class TestALaterCall:
    def test_it_is_approved_at_once_without_a_prompt_and_audited_with_the_decision(self):
        turn = first_turn()
        allowed(turn)
        decision = AuditEvent.objects.get(action="interaction.decided")

        later = next_call(turn)

        assert later.state == Interaction.State.ANSWERED
        assert later.prompt_ts == ""
        assert later.answer_turn.answers == [True]
        row = AuditEvent.objects.filter(action="interaction.decided").latest("pk")
        assert (row.actor_kind, row.subject) == ("policy", services.subject(later.pk))
        assert row.details["allowed_by"] == [
            {
                "tool": "add_numbers",
                "decision": decision.pk,
                "granted_in": services.subject(turn.interactions.get().pk),
                "granted_by": defaults.GRACE,
            }
        ]

    def test_another_tool_is_still_asked(self):
        turn = first_turn()
        allowed(turn)

        later = next_call(turn, request(tool("check_status")))

        assert later.state == Interaction.State.OPEN

    def test_a_request_with_a_tool_not_allowed_is_asked_whole(self):
        turn = first_turn()
        allowed(turn)

        later = next_call(turn, request(tool("add_numbers"), tool("check_status", n=1)))

        assert later.state == Interaction.State.OPEN

    def test_it_is_asked_once_the_binding_no_longer_offers_it(self):
        turn = first_turn()
        allowed(turn)
        turn.session.binding.__class__.objects.filter(pk=turn.session.binding_id).update(
            allow_for_thread=False
        )

        assert next_call(turn).state == Interaction.State.OPEN

    def test_it_is_asked_once_the_thread_expired(self):
        turn = first_turn()
        allowed(turn)
        turn.session.__class__.objects.filter(pk=turn.session_id).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )

        assert next_call(turn).state == Interaction.State.OPEN

    def test_it_is_asked_when_a_rule_now_sends_the_tool_to_another_group(self):
        turn = first_turn(approver_groups=[OPS])
        allowed(turn)
        turn.session.binding.__class__.objects.filter(pk=turn.session.binding_id).update(
            tool_rules=[{"match": "add_*", "approverGroups": [DBA]}]
        )

        assert next_call(turn).state == Interaction.State.OPEN

    def test_a_tool_a_rule_denies_when_nobody_asked_is_denied_not_allowed(self):
        turn = first_turn()
        allowed(turn)
        turn.session.binding.__class__.objects.filter(pk=turn.session.binding_id).update(
            tool_rules=[{"match": "add_*", "unattended": "deny"}]
        )

        later = next_call(turn, user_id=SYSTEM_IDENTITY)

        assert later.state == Interaction.State.ANSWERED
        assert later.answer_turn.answers == [False]
        assert (
            "allowed_by" not in AuditEvent.objects.filter(action="interaction.decided").latest("pk").details
        )

    def test_in_another_thread_it_is_asked(self):
        turn = first_turn()
        allowed(turn)
        elsewhere = TurnFactory(session__binding=turn.session.binding, state=Turn.State.DONE)

        assert approvals.open_approval(elsewhere.pk, ADD).state == Interaction.State.OPEN


@pytest.mark.django_db
class TestTheOpenPrompt:
    def test_a_binding_that_offers_it_shows_the_third_button_and_says_what_it_does(self):
        interaction = opened(first_turn(), ADD)

        blocks, _ = approvals.APPROVAL.open_prompt(interaction)

        assert block_problems(blocks) == []
        buttons = [(e["action_id"], e["text"]["text"], e["value"]) for e in blocks[-2]["elements"]]
        assert buttons[-1] == (ALLOW, "Allow for this thread", str(interaction.pk))
        assert blocks[-1]["elements"][0]["text"] == (
            "_Allow for this thread_ approves this call and lets the agent run add_numbers again in this "
            "thread without asking, until the thread expires."
        )

    def test_a_binding_that_does_not_keeps_approve_and_deny(self):
        interaction = opened(first_turn(allow_for_thread=False), ADD)

        blocks, _ = approvals.APPROVAL.open_prompt(interaction)

        assert [e["action_id"] for e in blocks[-1]["elements"]] == [
            approval_prompts.APPROVE_ACTION,
            approval_prompts.DENY_ACTION,
        ]
