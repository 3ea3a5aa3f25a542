"""Tool approvals below the door: the prompt (Block Kit limits, refused never truncated), reading a
decision, the first decision winning (20 presses at once on PostgreSQL), and the sweep's timeout
steps, each failure forced with an injected fault."""

import logging
import math
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django import db
from django.utils import timezone

from audit.models import AppendOnly, AuditEvent
from interactions import approval_prompts, approvals, services, sweeps
from interactions.decisions import NotADecision, Undecided, read_decision
from interactions.kinds import Refusal, Refused, Taken
from interactions.models import Interaction
from kourier.a2a.dialects.kagent import POLICY_DENIAL_REASON
from kourier.a2a.events import ApprovalRequest
from kourier.a2a.follow import Cancelled
from sessions.identity import SYSTEM_IDENTITY
from sessions.models import Turn
from simulator import defaults
from simulator.blocks import block_problems
from tests.factories import BindingFactory, TurnFactory
from tests.interactions.helpers import PROMPT_TS, SECRET, opened, request, tool


def shown(req: ApprovalRequest) -> list:
    blocks = approval_prompts.open_prompt(req, 7)
    assert isinstance(blocks, list)
    return blocks


class TestThePrompt:
    def test_one_tool_shows_its_name_arguments_and_approve_and_deny(self):
        blocks = shown(request(tool(args={"a": 2, "b": 3})))
        assert block_problems(blocks) == []
        assert '"a": 2' in blocks[1]["text"]["text"]
        assert [(e["action_id"], e["value"]) for e in blocks[-1]["elements"]] == [
            (approval_prompts.APPROVE_ACTION, "7"),
            (approval_prompts.DENY_ACTION, "7"),
        ]

    def test_several_tools_have_a_choice_each_and_submit_approve_all_deny_all(self):
        blocks = shown(request(tool(n=0), tool("check_status", n=1)))
        assert block_problems(blocks) == []
        assert [b["block_id"] for b in blocks if b["type"] == "input"] == ["tool-0", "tool-1"]
        assert [e["text"]["text"] for e in blocks[-1]["elements"]] == ["Submit", "Approve all", "Deny all"]

    @pytest.mark.parametrize(
        ("tools", "reason"),
        [
            ((tool("bad\u0007name"),), "tool-name"),
            ((tool(""),), "tool-name"),
            ((tool(args={"x": math.nan}),), "unsupported-value"),
            ((tool(args={"x": object()}),), "unsupported-value"),
            ((tool(args={"x": "right\u202eto left"}),), "unshowable-argument"),
            ((tool(args={"x": "y" * 3001}),), "too-long"),
            (tuple(tool(f"tool_{n}", n=n) for n in range(25)), "too-many-tools"),
        ],
    )
    def test_what_cannot_be_shown_exactly_or_does_not_fit_is_refused_not_truncated(self, tools, reason):
        assert approval_prompts.open_prompt(request(*tools), 7) == approval_prompts.Unshowable(reason)

    def test_the_most_tools_that_fit_still_pass_slacks_block_kit_check(self):
        blocks = approval_prompts.open_prompt(request(*(tool(f"tool_{n}", n=n) for n in range(24))), 7)
        assert block_problems(blocks) == []


class TestTheEndedPrompt:
    """An ended prompt shows every tool's verdict, whole, however many tools and however long their
    names: the most a shown prompt can hold is 24 tools of 200-character names."""

    longest = request(*(tool(f"{n:02d}_" + "x" * 197, n=n) for n in range(24)))

    def test_a_decision_shows_each_verdict_in_sections_slack_takes(self):
        verdicts = [n % 2 == 0 for n in range(24)]
        blocks = approval_prompts.decided_prompt(self.longest, verdicts, "Decided.")
        assert block_problems(blocks) == []
        assert self.verdict_lines(blocks) == [
            f"{'Approved' if approved else 'Denied'}: {shown_tool.name}"
            for shown_tool, approved in zip(self.longest.tools, verdicts, strict=True)
        ]

    def test_a_timeout_shows_each_tool_denied_in_sections_slack_takes(self):
        blocks = approval_prompts.timed_out_prompt(self.longest)
        assert block_problems(blocks) == []
        assert self.verdict_lines(blocks) == [
            f"Denied (timed out): {shown_tool.name}" for shown_tool in self.longest.tools
        ]

    @staticmethod
    def verdict_lines(blocks) -> list[str]:
        sections = [block for block in blocks if block["block_id"].startswith("verdicts")]
        assert len({block["block_id"] for block in sections}) == len(sections) > 1
        return [line for block in sections for line in block["text"]["text"].split("\n")]


class TestReadingADecision:
    two = request(tool(n=0), tool("check_status", n=1))

    def test_submit_with_a_tool_undecided_is_incomplete_and_names_it(self):
        values = {"tool-0": {"verdict-0": {"type": "radio_buttons", "selected_option": {"value": "approve"}}}}
        read = read_decision(self.two, approval_prompts.DECIDE_ACTION, values)
        assert isinstance(read, Undecided)
        assert "check_status" in read.message

    def test_approve_all_and_deny_all_decide_every_tool(self):
        assert read_decision(self.two, approval_prompts.APPROVE_ACTION, {}) == (True, True)
        assert read_decision(self.two, approval_prompts.DENY_ACTION, {}) == (False, False)

    def test_a_choice_that_is_not_offered_is_not_a_decision(self):
        values = {"tool-0": {"verdict-0": {"selected_option": {"value": "maybe"}}}}
        assert isinstance(read_decision(self.two, approval_prompts.DECIDE_ACTION, values), NotADecision)


@pytest.fixture
def asking_turn():
    return a_turn_that_asked()


def a_turn_that_asked():
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        dialect="kagent-v1",
        tool_approvals=True,
        interaction_timeout=timedelta(minutes=30),
    )
    return TurnFactory(
        session__binding=binding, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED, task_id="task-1"
    )


def decide(interaction, user=defaults.ADA, action=approval_prompts.DENY_ACTION):
    return services.take_allowed_press(
        approvals.APPROVAL,
        interaction.pk,
        channel_id=interaction.channel_id,
        prompt_ts=PROMPT_TS,
        user_id=user,
        action_id=action,
        values={},
    )


@pytest.mark.django_db
class TestTakingADecision:
    def test_the_pause_is_stored_redacted(self, asking_turn):
        assert SECRET not in str(opened(asking_turn).pause)

    def test_the_decision_is_audited_with_counts_and_names_and_queued_as_an_answer_turn(self, asking_turn):
        taken = decide(opened(asking_turn))
        assert isinstance(taken, Taken)
        row = AuditEvent.objects.get(action="interaction.decided")
        assert row.details == {
            "tools": 2,
            "approved": 0,
            "denied": 2,
            "approved_tools": [],
            "denied_tools": ["add_numbers", "check_status"],
        }
        turn = Turn.objects.get(pk=taken.turn_id)
        assert (turn.kind, turn.answers) == (Turn.Kind.ANSWER, [False, False])
        assert approvals.decision_of(turn.pk).timed_out is False

    def test_a_second_decision_is_refused(self, asking_turn):
        interaction = opened(asking_turn)
        decide(interaction)
        assert decide(interaction, user=defaults.GRACE).refusal is Refusal.TAKEN
        assert AuditEvent.objects.count() == 1

    def test_audit_rows_refuse_updates_and_deletes(self, asking_turn):
        decide(opened(asking_turn))
        row = AuditEvent.objects.get()
        with pytest.raises(AppendOnly):
            row.save()
        with pytest.raises(AppendOnly):
            row.delete()
        with pytest.raises(AppendOnly):
            AuditEvent.objects.all().update(actor_id="x")
        with pytest.raises(AppendOnly):
            AuditEvent.objects.all().delete()


@pytest.mark.django_db
class TestADecisionIsActivity:
    """A decision keeps the thread's session for threadTTL after it, as a message does."""

    def test_it_moves_the_threads_expiry_forward(self, asking_turn):
        interaction = opened(asking_turn)
        decided_at = timezone.now() + timedelta(days=3)
        taken = services.take_allowed_press(
            approvals.APPROVAL,
            interaction.pk,
            channel_id=interaction.channel_id,
            prompt_ts=PROMPT_TS,
            user_id=defaults.ADA,
            action_id=approval_prompts.APPROVE_ACTION,
            values={},
            now=decided_at,
        )
        assert isinstance(taken, Taken)
        session = interaction.session
        session.refresh_from_db()
        assert session.last_activity_at == decided_at
        assert session.expires_at == decided_at + session.binding.thread_ttl


@pytest.mark.requires_postgres("SQLite serializes every write")
@pytest.mark.django_db(transaction=True)
def test_of_twenty_presses_at_once_exactly_one_decision_is_taken(asking_turn):
    interaction = opened(asking_turn)
    start = threading.Barrier(20)
    results = []

    def press(user):
        try:
            start.wait()
            results.append(decide(interaction, user=user, action=approval_prompts.APPROVE_ACTION))
        finally:
            db.connection.close()

    threads = [threading.Thread(target=press, args=(f"U{n:08d}",)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len([r for r in results if isinstance(r, Taken)]) == 1
    assert {r.refusal for r in results if isinstance(r, Refused)} == {Refusal.TAKEN}
    assert len(results) == 20
    assert AuditEvent.objects.filter(action="interaction.decided").count() == 1
    assert Turn.objects.filter(kind=Turn.Kind.ANSWER).count() == 1


@pytest.mark.requires_postgres("SQLite serializes every write")
@pytest.mark.django_db(transaction=True)
def test_two_sweeps_at_once_over_expired_approvals_audit_each_timeout_once_and_supersede_none(
    monkeypatch,
):
    monkeypatch.setattr(sweeps, "_tell_thread", lambda interaction, text: None)
    monkeypatch.setattr(sweeps.services, "rewrite_prompt", lambda interaction: None)
    expired = []
    for _ in range(4):
        interaction = opened(a_turn_that_asked())
        Interaction.objects.filter(pk=interaction.pk).update(deadline=timezone.now() - timedelta(seconds=1))
        expired.append(interaction.pk)
    # Both sweeps read the same four approvals before either audits one: the race the check-then-insert lost.
    both_have_read = threading.Barrier(2)
    open_approvals_past_deadline = approvals.open_approvals_past_deadline

    def read_then_wait(**kwargs):
        found = open_approvals_past_deadline(**kwargs)
        both_have_read.wait(timeout=30)
        return found

    monkeypatch.setattr(approvals, "open_approvals_past_deadline", read_then_wait)
    failures = []

    def sweep():
        try:
            sweeps.time_out_interactions()
        except Exception as exc:  # reported by the assertion below
            failures.append(exc)
        finally:
            db.connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    timed_out = list(
        AuditEvent.objects.filter(action="interaction.timed_out").values_list("subject", flat=True)
    )
    assert sorted(timed_out) == sorted(approvals.subject(pk) for pk in expired)
    assert not AuditEvent.objects.filter(action="interaction.timeout_superseded").exists()
    assert set(Interaction.objects.values_list("state", flat=True)) == {Interaction.State.TIMED_OUT}


@pytest.mark.django_db
class TestTheTimeoutSweep:
    """The approval steps of the sweep, with Slack's part (prompt, notice) recorded instead of sent."""

    @pytest.fixture(autouse=True)
    def told(self, monkeypatch):
        told = []
        monkeypatch.setattr(sweeps, "_tell_thread", lambda interaction, text: told.append(text))
        monkeypatch.setattr(sweeps.services, "rewrite_prompt", lambda interaction, kind: None)
        return told

    def past_deadline(self, turn):
        interaction = opened(turn)
        Interaction.objects.filter(pk=interaction.pk).update(deadline=timezone.now() - timedelta(seconds=1))
        return interaction

    def test_it_audits_then_denies_every_tool_with_the_timeout_reason_once(self, asking_turn, told):
        interaction = self.past_deadline(asking_turn)
        sweeps.time_out_interactions()
        sweeps.time_out_interactions()
        interaction.refresh_from_db()
        assert interaction.state == Interaction.State.TIMED_OUT
        assert interaction.closed_at is not None
        assert AuditEvent.objects.filter(action="interaction.timed_out").count() == 1
        work = approvals.decision_of(interaction.answer_turn_id)
        assert (work.verdicts, work.timed_out) == ((False, False), True)
        assert len(told) == 1

    def test_a_sweep_killed_after_its_audit_is_recovered_reusing_the_audit(self, asking_turn, monkeypatch):
        interaction = self.past_deadline(asking_turn)
        queue_timeout_denial = approvals.queue_timeout_denial
        monkeypatch.setattr(approvals, "queue_timeout_denial", _raise)
        sweeps.time_out_interactions()
        assert Interaction.objects.get().answer_turn_id is None
        monkeypatch.setattr(approvals, "queue_timeout_denial", queue_timeout_denial)
        sweeps.time_out_interactions()
        assert AuditEvent.objects.filter(action="interaction.timed_out").count() == 1
        assert Interaction.objects.get(pk=interaction.pk).answer_turn_id is not None

    def test_recovery_writes_a_missing_timeout_audit_before_the_denial(self, asking_turn):
        interaction = opened(asking_turn)
        Interaction.objects.filter(pk=interaction.pk).update(
            state=Interaction.State.TIMED_OUT
        )  # killed before its audit
        sweeps.time_out_interactions()
        audit = AuditEvent.objects.get(action="interaction.timed_out")
        denial = Turn.objects.get(pk=Interaction.objects.get().answer_turn_id)
        assert audit.at <= denial.created_at

    def test_a_decision_that_wins_after_the_timeout_audit_is_superseded_in_the_audit(
        self, asking_turn, monkeypatch
    ):
        interaction = self.past_deadline(asking_turn)
        audit_timeout = approvals.audit_timeout

        def audit_then_a_person_decides(interaction_id):
            audit_timeout(interaction_id)
            decide(interaction, user=defaults.GRACE)

        monkeypatch.setattr(approvals, "audit_timeout", audit_then_a_person_decides)
        sweeps.time_out_interactions()
        actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
        assert actions == ["interaction.timed_out", "interaction.decided", "interaction.timeout_superseded"]
        assert Interaction.objects.get().state == Interaction.State.ANSWERED

    def test_a_sweep_that_died_between_its_audit_and_its_claim_then_a_decision_is_superseded_once(
        self, asking_turn, monkeypatch
    ):
        interaction = self.past_deadline(asking_turn)
        monkeypatch.setattr(approvals, "claim_timeout", _raise)
        with pytest.raises(RuntimeError):
            sweeps.time_out_interactions()  # the sweep's process dies after its audit
        monkeypatch.undo()
        assert isinstance(decide(interaction, user=defaults.GRACE), Taken)
        sweeps.time_out_interactions()
        actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
        assert actions == ["interaction.timed_out", "interaction.decided", "interaction.timeout_superseded"]
        assert AuditEvent.objects.get(action="interaction.timeout_superseded").details == {
            "decided_by": defaults.GRACE
        }

    def test_a_second_sweep_that_finds_the_approval_timed_out_by_the_first_supersedes_nothing(
        self, asking_turn
    ):
        interaction = self.past_deadline(asking_turn)
        assert approvals.audit_timeout(interaction.pk)
        assert not approvals.audit_timeout(interaction.pk)  # the second sweep, after the first's audit
        assert approvals.claim_timeout(interaction.pk)
        assert not approvals.claim_timeout(interaction.pk)
        assert not approvals.supersede_timeout(interaction.pk)  # nobody decided: the timeout stands
        assert list(AuditEvent.objects.values_list("action", flat=True)) == ["interaction.timed_out"]

    def test_a_failure_to_write_the_compensation_is_logged(self, asking_turn, monkeypatch, caplog):
        interaction = self.past_deadline(asking_turn)
        audit_timeout = approvals.audit_timeout
        monkeypatch.setattr(approvals, "audit_timeout", lambda pk: (audit_timeout(pk), decide(interaction)))
        monkeypatch.setattr(approvals, "supersede_timeout", _raise)
        with caplog.at_level(logging.ERROR):
            sweeps.time_out_interactions()
        assert [r.message for r in caplog.records if r.levelno == logging.ERROR] == [
            "interaction.supersede_not_audited"
        ]

    def test_a_denial_the_agent_did_not_take_gets_the_task_cancelled_on_a_later_sweep(
        self, asking_turn, monkeypatch
    ):
        interaction = self.past_deadline(asking_turn)
        sweeps.time_out_interactions()
        Turn.objects.filter(pk=Interaction.objects.get().answer_turn_id).update(
            state=Turn.State.DONE, outcome=Turn.Outcome.UNREACHABLE
        )
        cancelled: list[int] = []
        monkeypatch.setattr(sweeps, "_cancel", lambda interaction: _cancelled(cancelled, interaction))
        sweeps.time_out_interactions()
        sweeps.time_out_interactions()
        assert cancelled == [interaction.pk]
        assert Interaction.objects.get().task_cancelled_at is not None

    def test_a_refused_approval_is_cancelled_by_the_sweep_once_the_agent_answers_without_another_timeout(
        self, asking_turn, monkeypatch, told
    ):
        interaction = self.past_deadline(asking_turn)
        services.refuse(interaction.pk, "too-long")
        monkeypatch.setattr(sweeps, "_cancel", _unreachable)
        sweeps.time_out_interactions()
        assert Interaction.objects.get().task_cancelled_at is None  # the agent could not be reached: kept
        monkeypatch.setattr(sweeps, "_cancel", lambda interaction: Cancelled(settled=True))
        sweeps.time_out_interactions()
        assert Interaction.objects.get().task_cancelled_at is not None
        assert not AuditEvent.objects.filter(action="interaction.timed_out").exists()
        assert told == []


def _raise(*args, **kwargs):
    raise RuntimeError("killed here")


def _unreachable(*args, **kwargs):
    return Cancelled(settled=False, error="AgentUnreachable")


def _cancelled(cancelled, interaction):
    cancelled.append(interaction.pk)
    return Cancelled(settled=True)


# -- beyond the spec, opt-in (issue 21): who asked, the rules per tool, nobody asked ----------------


def ruled_turn(*, user_id=defaults.ADA, tools=(), **binding_fields):
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID],
        dialect="kagent-v1",
        tool_approvals=True,
        tool_rules=list(tools),
        **binding_fields,
    )
    return TurnFactory(
        session__binding=binding,
        user_id=user_id,
        state=Turn.State.DONE,
        outcome=Turn.Outcome.ASKED,
        task_id="task-1",
    )


TWO = request(tool("add_numbers"), tool("check_status", n=1))
CHECKS_DENIED = [{"match": "check_*", "unattended": "deny"}]


@pytest.mark.django_db
class TestTheDecisionsAuditRow:
    def test_it_names_the_requester_beside_the_decider_and_each_tools_rule(self):
        turn = ruled_turn(tools=[{"match": "check_*", "separateApprover": True}])

        decide(opened(turn, TWO), user=defaults.GRACE)

        row = AuditEvent.objects.get(action="interaction.decided")
        assert (row.actor_kind, row.actor_id, row.requester) == ("user", defaults.GRACE, defaults.ADA)
        assert row.policy == "add_numbers: binding; check_status: tools[0] match=check_*"

    def test_under_the_bindings_own_rules_the_policy_is_binding(self, asking_turn):
        decide(opened(asking_turn))

        row = AuditEvent.objects.get(action="interaction.decided")
        assert (row.requester, row.policy) == (asking_turn.user_id, "binding")

    def test_a_timeout_names_the_requester_and_the_policy_too(self):
        interaction = opened(ruled_turn(tools=[{"match": "add_*", "approverGroups": []}]), TWO)

        assert approvals.audit_timeout(interaction.pk)

        row = AuditEvent.objects.get(action="interaction.timed_out")
        assert (row.actor_kind, row.requester) == ("system", defaults.ADA)
        assert row.policy == "add_numbers: tools[0] match=add_*; check_status: binding"

    def test_a_decision_that_pauses_again_keeps_the_person_who_first_asked(self):
        first = opened(ruled_turn())
        taken = decide(first, user=defaults.GRACE)
        assert isinstance(taken, Taken)

        again = approvals.open_approval(taken.turn_id, TWO)

        assert again.requested_by == defaults.ADA


@pytest.mark.django_db
class TestNobodyAsked:
    """An alert thread's own turn is filed under the system identity: no person asked for its tools."""

    def test_every_tool_denied_by_its_rule_is_decided_at_once_by_policy_and_audited_so(self):
        turn = ruled_turn(user_id=SYSTEM_IDENTITY, tools=[{"match": "*", "unattended": "deny"}])

        interaction = approvals.open_approval(turn.pk, TWO)

        assert interaction.state == Interaction.State.ANSWERED
        row = AuditEvent.objects.get(action="interaction.decided")
        assert (row.actor_kind, row.actor_id, row.requester) == ("policy", "", SYSTEM_IDENTITY)
        assert row.policy == "add_numbers: tools[0] match=*; check_status: tools[0] match=*"
        assert row.details["denied_tools"] == ["add_numbers", "check_status"]
        decision = approvals.decision_of(interaction.answer_turn_id)
        assert decision.verdicts == (False, False)
        assert decision.denied_by_policy == {0, 1}
        assert approvals.denied_whole_by_policy(interaction)

    def test_a_tool_denied_by_its_rule_leaves_the_others_to_people_and_stays_denied(self):
        turn = ruled_turn(user_id=SYSTEM_IDENTITY, tools=CHECKS_DENIED)

        interaction = opened(turn, TWO)

        assert (interaction.state, interaction.denied_by_policy) == (Interaction.State.OPEN, [1])
        blocks = approval_prompts.open_prompt(TWO, interaction.pk, denied=frozenset([1]))
        assert block_problems(blocks) == []
        assert approval_prompts.DENIED_BY_POLICY_LINE in str(blocks)
        assert "verdict-1" not in str(blocks)  # no choice for it
        assert isinstance(
            decide(interaction, user=defaults.GRACE, action=approval_prompts.APPROVE_ACTION), Taken
        )
        assert Turn.objects.get(kind=Turn.Kind.ANSWER).answers == [True, False]
        assert approvals.decision_of(Interaction.objects.get().answer_turn_id).denied_by_policy == {1}

    def test_a_submit_needs_no_choice_for_the_tool_denied_by_its_rule(self):
        values = {"tool-0": {"verdict-0": {"selected_option": {"value": "approve"}}}}

        verdicts = read_decision(TWO, approval_prompts.DECIDE_ACTION, values, denied=frozenset([1]))

        assert verdicts == (True, False)

    def test_a_persons_turn_is_put_to_people_whatever_unattended_says(self):
        turn = ruled_turn(user_id=defaults.ADA, tools=[{"match": "*", "unattended": "deny"}])

        interaction = opened(turn, TWO)

        assert (interaction.state, interaction.denied_by_policy) == (Interaction.State.OPEN, [])


def test_the_approval_rules_fixed_wordings_read_as_docs_manifests_md_and_the_readme_show_them():
    root = Path(__file__).resolve().parents[2]
    documented = (root / "docs" / "manifests.md").read_text()
    readme = " ".join((root / "README.md").read_text().split())

    for wording in (
        approvals.SEPARATE_APPROVER,
        approvals.NOT_A_TOOL_APPROVER.format(tools="NAMES"),
        approval_prompts.DENIED_BY_POLICY_LINE,
        approval_prompts.DENIED_BY_POLICY_ENDING,
        POLICY_DENIAL_REASON,
    ):
        assert f"`{wording}`" in documented
    assert "`(Someone else must approve: NAMES.)`" in documented
    assert f"> {approvals.SEPARATE_APPROVER}" in readme
    assert f"> {approvals.NOT_A_TOOL_APPROVER.format(tools='db_drop')}" in readme
    assert f"*{POLICY_DENIAL_REASON}*" in readme
    assert approvals.separate_approver_refusal(TWO, [1]) == (
        f"{approvals.SEPARATE_APPROVER} (Someone else must approve: check_status.)"
    )
