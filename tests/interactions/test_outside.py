"""Deciding a pending tool approval outside Slack, in the admin or by manage.py, as a Django user:
the press's own path (one claim, one audit row naming the Django user, one decision turn, one prompt
closing that says who and where), and bad input that decides nothing and says why."""

import threading
from datetime import timedelta
from io import StringIO

import pytest
from django import db
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from interactions import approval_prompts, approvals, outside, services
from interactions.kinds import Refused, Taken
from interactions.models import DecidingGroup, Interaction, PromptClosing
from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove
from sessions.identity import SYSTEM_IDENTITY
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, StaffUserFactory, TurnFactory

PROMPT_TS = "1700000000.000900"
DECIDER = ["interactions.decide_interaction"]
VIEWER = ["interactions.view_interaction"]


def tool(name, n):
    return ToolToApprove(approval_id=f"adk-{n}", call_id=f"call-{n}", name=name, args={"n": n})


def opened(*names: str, user_id: str = defaults.ADA, **binding_fields) -> Interaction:
    """An open approval of these tools (add_numbers and check_status), asked by ``user_id``."""
    binding = BindingFactory(
        channels=[defaults.CHANNEL_ID], dialect="kagent-v1", tool_approvals=True, **binding_fields
    )
    turn = TurnFactory(
        session__binding=binding, user_id=user_id, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED
    )
    request = ApprovalRequest(
        tools=tuple(tool(name, n) for n, name in enumerate(names or ("add_numbers", "check_status"))),
        task_id="task-1",
        context_id="ctx-1",
        answer_format=AnswerFormat.HITL_V1,
        agent=None,
    )
    interaction = approvals.open_approval(turn.pk, request)
    Interaction.objects.filter(pk=interaction.pk).update(prompt_ts=PROMPT_TS)
    interaction.refresh_from_db()
    return interaction


def press(interaction, user=defaults.ADA):
    return services.take_allowed_press(
        approvals.APPROVAL,
        interaction.pk,
        channel_id=interaction.channel_id,
        prompt_ts=PROMPT_TS,
        user_id=user,
        action_id=approval_prompts.APPROVE_ACTION,
        values={},
    )


@pytest.fixture
def ada(db):
    return StaffUserFactory(username="ada", permissions=[*DECIDER, *VIEWER])


@pytest.mark.django_db
class TestADecisionOutsideSlack:
    def test_it_takes_the_press_path_audited_as_the_django_user_and_where(self, ada):
        interaction = opened()
        taken = outside.decide(
            interaction.pk, ada, where=outside.CLI, approve=["add_numbers"], deny=["check_status"]
        )
        assert isinstance(taken, Taken)
        row = AuditEvent.objects.get(action=approvals.DECIDED)
        assert (row.actor_kind, row.actor_id) == ("django-user", "ada")
        assert row.details["decided_in"] == "cli"
        assert (row.details["approved_tools"], row.details["denied_tools"]) == (
            ["add_numbers"],
            ["check_status"],
        )
        turn = Turn.objects.get(pk=taken.turn_id)
        assert (turn.kind, turn.answers, turn.user_id) == (Turn.Kind.ANSWER, [True, False], "")
        assert PromptClosing.objects.filter(interaction=interaction).exists()

    def test_the_ended_prompt_says_who_decided_and_where(self, ada):
        interaction = opened("add_numbers")
        outside.decide(interaction.pk, ada, where=outside.ADMIN, approve_all=True)
        interaction.refresh_from_db()
        blocks, _ = approvals.APPROVAL.ended_prompt(interaction)
        at = interaction.answered_at
        assert blocks[-1]["elements"][0]["text"] == (
            f"Decided by ada in the admin <!date^{int(at.timestamp())}^{{date_short_pretty}} at {{time}}"
            f"|at {at:%Y-%m-%d %H:%M} UTC>."
        )
        assert "Approved: add_numbers" in str(blocks)

    def test_the_command_line_is_named_and_a_name_is_escaped(self):
        line = approval_prompts.decided_outside_line("<b&d>", "cli", 1700000000, "2023-11-14 22:13")
        assert line.startswith("Decided by &lt;b&amp;d&gt; from the command line <!date^1700000000^")

    def test_a_press_after_it_is_told_someone_decided_first(self, ada):
        interaction = opened()
        outside.decide(interaction.pk, ada, where=outside.ADMIN, deny_all=True)
        refused = press(interaction)
        assert isinstance(refused, Refused)
        assert (
            refused.message == "Someone already decided on this approval request; your decision was not sent."
        )


@pytest.mark.django_db
class TestBadInputDecidesNothing:
    def refused(self, interaction_id, user, **choices) -> str:
        with pytest.raises(outside.NotDecided) as raised:
            outside.decide(interaction_id, user, where=outside.CLI, **choices)
        assert not AuditEvent.objects.filter(action=approvals.DECIDED, actor_kind="django-user").exists()
        return str(raised.value)

    def test_an_unknown_id(self, ada):
        assert self.refused(999, ada, approve_all=True) == "There is no interaction 999."

    def test_a_tool_the_approval_does_not_have(self, ada):
        interaction = opened()
        assert self.refused(interaction.pk, ada, approve=["rm_rf"], deny=["check_status"]) == (
            "This approval has no tool named rm_rf; its tools are: add_numbers, check_status."
        )

    def test_a_tool_left_undecided_or_decided_twice(self, ada):
        interaction = opened()
        assert self.refused(interaction.pk, ada, approve=["add_numbers"]) == (
            "Decide every tool: still undecided: check_status."
        )
        assert self.refused(
            interaction.pk, ada, approve=["add_numbers", "check_status"], deny=["check_status"]
        ) == ("Decide each tool once: check_status is both approved and denied.")
        assert self.refused(interaction.pk, ada, approve_all=True, deny=["check_status"]) == (
            "Give either --approve-all, --deny-all, or tools to approve and deny, not both."
        )

    def test_a_decided_interaction(self, ada):
        interaction = opened()
        press(interaction)
        assert self.refused(interaction.pk, ada, deny_all=True) == (
            f"Interaction {interaction.pk} was decided already; this decision was not sent."
        )

    def test_an_expired_or_timed_out_interaction(self, ada):
        expired = opened()
        Interaction.objects.filter(pk=expired.pk).update(deadline=timezone.now() - timedelta(seconds=1))
        closed = f"Interaction {expired.pk} is closed: it timed out or was cancelled, so this decision was not sent."
        assert self.refused(expired.pk, ada, approve_all=True) == closed
        Interaction.objects.filter(pk=expired.pk).update(state=Interaction.State.TIMED_OUT)
        assert self.refused(expired.pk, ada, approve_all=True) == closed

    def test_a_question(self, ada):
        interaction = opened()
        Interaction.objects.filter(pk=interaction.pk).update(kind=Interaction.Kind.QUESTION)
        assert self.refused(interaction.pk, ada, approve_all=True) == (
            f"Interaction {interaction.pk} is a question, not a tool approval: it is answered in Slack."
        )

    def test_a_user_without_the_permission(self):
        interaction = opened()
        grace = StaffUserFactory(username="grace", permissions=VIEWER)
        assert self.refused(interaction.pk, grace, approve_all=True) == (
            "The Django user 'grace' may not decide tool approvals: it takes the "
            "interactions.decide_interaction permission."
        )
        assert Interaction.objects.get().state == Interaction.State.OPEN


@pytest.mark.django_db
class TestTheCommand:
    def test_list_pending_prints_id_binding_thread_tools_and_deadline(self, ada):
        interaction = opened()
        Interaction.objects.create(
            turn=TurnFactory(session=interaction.session),
            session=interaction.session,
            kind=Interaction.Kind.APPROVAL,
            pause=interaction.pause,
            channel_id=interaction.channel_id,
            state=Interaction.State.ANSWERED,
            deadline=interaction.deadline,
        )
        out = StringIO()
        call_command("interactions", "list", "--pending", stdout=out)
        session = interaction.session
        assert out.getvalue().splitlines() == [
            "ID\tBINDING\tTHREAD\tTOOLS\tDEADLINE",
            f"{interaction.pk}\t{session.binding.name}\t{interaction.channel_id}/{session.thread_ts}\t"
            f"add_numbers, check_status\t{interaction.deadline:%Y-%m-%d %H:%M:%S} UTC",
        ]

    def test_a_tools_name_cannot_act_on_the_terminal(self, ada):
        interaction = opened("\x1b]0;pwned\x07add", "\x1b[2Jwipe\rcheck")
        out = StringIO()

        call_command("interactions", "list", "--pending", stdout=out)
        with pytest.raises(CommandError) as refused:
            call_command("interactions", "decide", str(interaction.pk), "--deny", "nope", "--as", "ada")

        for printed in (out.getvalue(), str(refused.value)):
            assert not set(printed) & {"\x1b", "\x07", "\r"}
            assert "\\x1b]0;pwned\\x07add" in printed

    def test_decide_approves_and_denies_as_the_user(self, ada):
        interaction = opened()
        out = StringIO()
        call_command(
            "interactions", "decide", str(interaction.pk), "--approve", "check_status",
            "--deny", "add_numbers", "--as", "ada", stdout=out,
        )  # fmt: skip
        assert (
            out.getvalue()
            == f"Interaction {interaction.pk} decided as ada; the agent is sent the decision.\n"
        )
        interaction.refresh_from_db()
        assert (interaction.answered_by, interaction.decided_in) == ("ada", "cli")
        assert interaction.answer_turn.answers == [False, True]

    def test_bad_input_is_a_clear_error_that_decides_nothing(self, ada):
        interaction = opened()
        with pytest.raises(CommandError, match=r"^There is no Django user 'nobody'; nothing was decided\.$"):
            call_command("interactions", "decide", str(interaction.pk), "--approve-all", "--as", "nobody")
        with pytest.raises(CommandError, match="has no tool named nope"):
            call_command("interactions", "decide", str(interaction.pk), "--deny", "nope", "--as", "ada")
        assert Interaction.objects.get().state == Interaction.State.OPEN


@pytest.mark.django_db
class TestTheAdmin:
    def page(self, interaction):
        return reverse("admin:interactions_interaction_change", args=[interaction.pk])

    def decide_url(self, interaction):
        return reverse("admin:interactions_interaction_decide", args=[interaction.pk])

    def test_a_pending_approval_offers_approve_and_deny_per_tool(self, client, ada):
        interaction = opened()
        client.force_login(ada)
        page = client.get(self.page(interaction)).content.decode()
        assert page.count('value="approve"') == 2
        assert page.count('value="deny"') == 2
        assert self.decide_url(interaction) in page
        assert "csrfmiddlewaretoken" in page

    def test_a_post_decides_per_tool_and_says_so(self, client, ada):
        interaction = opened()
        client.force_login(ada)
        response = client.post(
            self.decide_url(interaction),
            {"decide": "submit", "verdict-0": "deny", "verdict-1": "approve"},
            follow=True,
        )
        assert (
            f"Interaction {interaction.pk} decided: the agent is sent the decision."
            in response.content.decode()
        )
        interaction.refresh_from_db()
        assert (interaction.answered_by, interaction.decided_in) == ("ada", "admin")
        assert interaction.answer_turn.answers == [False, True]

    def test_already_decided_is_said_and_nothing_more_is_decided(self, client, ada):
        interaction = opened()
        press(interaction)
        client.force_login(ada)
        response = client.post(self.decide_url(interaction), {"decide": "deny-all"}, follow=True)
        assert f"Interaction {interaction.pk} was decided already" in response.content.decode()
        assert AuditEvent.objects.filter(action=approvals.DECIDED).count() == 1

    def test_without_the_permission_it_is_refused_clearly(self, client):
        interaction = opened()
        grace = StaffUserFactory(username="grace", permissions=VIEWER)
        client.force_login(grace)
        page = client.get(self.page(interaction)).content.decode()
        assert (
            "The Django user &#x27;grace&#x27; may not decide tool approvals: it takes the "
            "interactions.decide_interaction permission." in page
        )
        assert self.decide_url(interaction) not in page
        response = client.post(self.decide_url(interaction), {"decide": "approve-all"}, follow=True)
        assert "The Django user &#x27;grace&#x27; may not decide tool approvals" in response.content.decode()
        assert Interaction.objects.get().state == Interaction.State.OPEN

    def test_a_get_decides_nothing(self, client, ada):
        interaction = opened()
        client.force_login(ada)
        assert client.get(self.decide_url(interaction)).status_code == 405
        assert Interaction.objects.get().state == Interaction.State.OPEN

    def test_a_post_without_the_csrf_token_is_refused(self, ada):
        from django.test import Client

        interaction = opened()
        client = Client(enforce_csrf_checks=True)
        client.force_login(ada)
        assert client.post(self.decide_url(interaction), {"decide": "approve-all"}).status_code == 403
        assert Interaction.objects.get().state == Interaction.State.OPEN


CHECKS_DENIED = [{"match": "check_*", "unattended": "deny"}]


def nobody_asked_with_checks_denied() -> Interaction:
    """An alert thread's own approval: check_status denied by its rule, add_numbers put to people."""
    interaction = opened(user_id=SYSTEM_IDENTITY, tool_rules=CHECKS_DENIED)
    assert interaction.denied_by_policy == [1]
    return interaction


@pytest.mark.django_db
class TestThePressRulesThatHoldOutsideSlack:
    """A rule's unattended: deny holds whoever decides, wherever; the approver groups and four eyes,
    which Kourier cannot check for a Django user, are said to be stood in for, on the page and in
    the audit."""

    @pytest.mark.parametrize("where", ["service", "command", "admin"])
    def test_approve_all_leaves_a_tool_denied_by_its_rule_denied(self, client, ada, where):
        interaction = nobody_asked_with_checks_denied()

        if where == "service":
            outside.decide(interaction.pk, ada, where=outside.CLI, approve_all=True)
        elif where == "command":
            call_command(
                "interactions",
                "decide",
                str(interaction.pk),
                "--approve-all",
                "--as",
                "ada",
                stdout=StringIO(),
            )
        else:
            client.force_login(ada)
            url = reverse("admin:interactions_interaction_decide", args=[interaction.pk])
            client.post(url, {"decide": "approve-all"})

        interaction.refresh_from_db()
        assert interaction.answer_turn.answers == [True, False]
        row = AuditEvent.objects.get(action=approvals.DECIDED, actor_kind="django-user")
        assert (row.details["approved_tools"], row.details["denied_tools"]) == (
            ["add_numbers"],
            ["check_status"],
        )

    def test_approving_by_name_a_tool_denied_by_its_rule_is_refused_and_decides_nothing(self, ada):
        interaction = nobody_asked_with_checks_denied()

        with pytest.raises(outside.NotDecided) as refused:
            outside.decide(interaction.pk, ada, where=outside.CLI, approve=["add_numbers", "check_status"])

        assert str(refused.value) == (
            "check_status was denied by its rule because nobody asked (unattended: deny): nobody may "
            "approve it. Deny it or leave it out: it stays denied."
        )
        assert Interaction.objects.get().state == Interaction.State.OPEN

    def test_a_tool_denied_by_its_rule_needs_no_verdict(self, ada):
        interaction = nobody_asked_with_checks_denied()

        outside.decide(interaction.pk, ada, where=outside.CLI, approve=["add_numbers"])

        interaction.refresh_from_db()
        assert interaction.answer_turn.answers == [True, False]

    def test_the_page_offers_no_choice_for_a_denied_tool_and_says_what_the_permission_stands_in_for(
        self, client, ada
    ):
        interaction = opened(
            approver_groups=["S0ONCALL"],
            user_id=SYSTEM_IDENTITY,
            tool_rules=[*CHECKS_DENIED, {"match": "add_*", "approverGroups": ["S0DBA"]}],
        )
        client.force_login(ada)

        page = client.get(reverse("admin:interactions_interaction_change", args=[interaction.pk]))

        content = page.content.decode()
        assert outside.STANDS_IN_FOR.replace("'", "&#x27;") in content
        assert content.count('value="approve"') == 1  # add_numbers alone
        assert "Denied by its rule: nobody asked (unattended: deny)." in content
        assert "A press needs a member of S0DBA: not checked here." in content

    def test_the_audit_row_names_the_press_rules_the_permission_stood_in_for(self, ada):
        interaction = opened(approver_groups=["S0ONCALL"], separate_approver=True)

        outside.decide(interaction.pk, ada, where=outside.ADMIN, deny_all=True)

        row = AuditEvent.objects.get(action=approvals.DECIDED)
        assert row.details["stood_in_for"] == ["approverGroups", "separateApprover"]

    def test_four_eyes_is_no_rule_to_stand_in_for_when_nobody_asked(self, ada):
        interaction = opened(user_id=SYSTEM_IDENTITY, separate_approver=True)

        outside.decide(interaction.pk, ada, where=outside.ADMIN, deny_all=True)

        assert AuditEvent.objects.get(action=approvals.DECIDED).details["stood_in_for"] == []


@pytest.mark.django_db
class TestABindingsDecidingGroups:
    """A Binding with deciding groups is decided outside Slack by the permission's holders in one of them."""

    @pytest.fixture
    def limited(self):
        interaction = opened()
        oncall = Group.objects.create(name="oncall-admins")
        DecidingGroup.objects.create(binding=interaction.session.binding, group=oncall)
        return interaction, oncall

    def test_a_holder_of_the_permission_outside_them_is_refused(self, limited, ada):
        interaction, _ = limited

        with pytest.raises(outside.NotDecided) as refused:
            outside.decide(interaction.pk, ada, where=outside.CLI, deny_all=True)

        binding = interaction.session.binding.name
        assert str(refused.value) == (
            f"The Django user 'ada' may not decide the tool approvals of Binding '{binding}': only members "
            "of its deciding groups may (oncall-admins)."
        )
        assert Interaction.objects.get().state == Interaction.State.OPEN

    def test_a_holder_in_one_of_them_decides(self, limited, ada):
        interaction, oncall = limited
        ada.groups.add(oncall)

        assert isinstance(outside.decide(interaction.pk, ada, where=outside.CLI, deny_all=True), Taken)

    def test_a_member_without_the_permission_is_refused(self, limited):
        interaction, oncall = limited
        grace = StaffUserFactory(username="grace", permissions=VIEWER)
        grace.groups.add(oncall)

        with pytest.raises(
            outside.NotDecided, match=r"takes the interactions\.decide_interaction permission"
        ):
            outside.decide(interaction.pk, grace, where=outside.CLI, deny_all=True)

    def test_another_bindings_approvals_are_not_limited(self, limited, ada):
        other = opened("add_numbers")

        assert isinstance(outside.decide(other.pk, ada, where=outside.CLI, deny_all=True), Taken)

    def test_the_page_says_why_and_offers_no_form(self, limited, client, ada):
        interaction, _ = limited
        client.force_login(ada)

        page = client.get(
            reverse("admin:interactions_interaction_change", args=[interaction.pk])
        ).content.decode()

        assert "only members of its deciding groups may (oncall-admins)." in page
        assert reverse("admin:interactions_interaction_decide", args=[interaction.pk]) not in page


@pytest.mark.django_db
def test_decide_as_keeps_the_operating_system_user_beside_the_django_user_in_the_audit(ada, monkeypatch):
    monkeypatch.setattr("getpass.getuser", lambda: "root")
    interaction = opened()

    call_command(
        "interactions", "decide", str(interaction.pk), "--deny-all", "--as", "ada", stdout=StringIO()
    )

    row = AuditEvent.objects.get(action=approvals.DECIDED)
    assert (row.actor_kind, row.actor_id, row.details["os_user"]) == ("django-user", "ada", "root")
    assert row.details["decided_in"] == "cli"


@pytest.mark.requires_postgres("SQLite serializes every write")
@pytest.mark.django_db(transaction=True)
def test_a_decision_from_the_admin_and_a_press_at_once_make_one_decision():
    ada = StaffUserFactory(username="ada", permissions=DECIDER)
    for _ in range(5):  # each round a fresh approval, both deciders released together
        interaction = opened()
        start = threading.Barrier(2)
        results: list[object] = []

        def from_admin(interaction=interaction, start=start, results=results):
            try:
                start.wait()
                results.append(outside.decide(interaction.pk, ada, where=outside.ADMIN, deny_all=True))
            except outside.NotDecided as exc:
                results.append(exc)
            finally:
                db.connection.close()

        def from_slack(interaction=interaction, start=start, results=results):
            try:
                start.wait()
                results.append(press(interaction, user=defaults.GRACE))
            finally:
                db.connection.close()

        threads = [threading.Thread(target=from_admin), threading.Thread(target=from_slack)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len([r for r in results if isinstance(r, Taken)]) == 1, results
        assert len(results) == 2
        assert (
            AuditEvent.objects.filter(
                action=approvals.DECIDED, subject=services.subject(interaction.pk)
            ).count()
            == 1
        )
        assert Turn.objects.filter(kind=Turn.Kind.ANSWER, session=interaction.session).count() == 1


@pytest.mark.django_db
def test_every_refusal_is_written_in_the_docs_word_for_word(ada):
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "manifests.md").read_text()
    interaction = opened("A", "B")

    def said(interaction_id=interaction.pk, user=ada, **choices) -> str:
        with pytest.raises(outside.NotDecided) as raised:
            outside.decide(interaction_id, user, where=outside.CLI, **choices)
        return str(raised.value).replace(str(interaction_id), "ID")

    refusals = [
        said(998, approve_all=True),
        said(approve=["TOOL"]),
        said(approve=["A", "B"], deny=["B"]).replace("B is both", "TOOL is both"),
        said(approve=["A"]).replace("undecided: B", "undecided: TOOL"),
        said(approve_all=True, deny=["A"]),
        said(user=StaffUserFactory(username="NAME"), approve_all=True),
    ]
    Interaction.objects.filter(pk=interaction.pk).update(kind=Interaction.Kind.QUESTION)
    refusals.append(said(approve_all=True))
    Interaction.objects.filter(pk=interaction.pk).update(kind=Interaction.Kind.APPROVAL)
    press(interaction)
    refusals.append(said(approve_all=True))
    Interaction.objects.filter(pk=interaction.pk).update(state=Interaction.State.TIMED_OUT)
    refusals.append(said(approve_all=True))
    for refusal in refusals:
        assert f"`{refusal}`" in docs, refusal
