"""Which approval rules a tool is decided under: the first tool rule whose match fits its name, the
Binding's own for what a rule leaves out and for a tool no rule matches."""

from bindings.manifest import ToolRule, Unattended
from interactions.policy import (
    BINDING,
    BindingRules,
    GroupCheck,
    ThreadAllowance,
    allowance_holds,
    denied_unattended,
    group_checks,
    needs_someone_else,
    policies_for,
    policy_for,
    policy_names,
)

OPS, DBA = "S0OPS", "S0DBA"
RULES = BindingRules(
    approver_groups=(OPS,),
    separate_approver=False,
    tools=(
        ToolRule("db_drop", approver_groups=(DBA,), separate_approver=True),
        ToolRule("db_*", separate_approver=True, unattended=Unattended.DENY),
        ToolRule("restart_?", approver_groups=()),
    ),
)


def test_a_tool_no_rule_matches_takes_the_bindings_rules():
    policy = policy_for("add_numbers", RULES)

    assert (policy.name, policy.approver_groups, policy.separate_approver) == (BINDING, (OPS,), False)
    assert policy.unattended is Unattended.ASK


def test_the_first_rule_that_matches_wins():
    assert policy_for("db_drop", RULES).name == "tools[0] match=db_drop"
    assert policy_for("db_drop", RULES).approver_groups == (DBA,)
    assert policy_for("db_query", RULES).name == "tools[1] match=db_*"


def test_a_field_a_rule_leaves_out_is_the_bindings():
    policy = policy_for("db_query", RULES)

    assert policy.approver_groups == (OPS,)
    assert not policy.own_groups
    assert policy.separate_approver is True
    assert policy.unattended is Unattended.DENY


def test_a_rules_empty_groups_let_any_member_decide():
    assert policy_for("restart_a", RULES).approver_groups == ()
    assert policy_for("restart_api", RULES).name == BINDING  # ? is one character


def test_a_match_is_case_sensitive():
    assert policy_for("DB_QUERY", RULES).name == BINDING


def test_a_binding_without_rules_decides_every_tool_under_its_own():
    rules = BindingRules(approver_groups=(OPS,), separate_approver=True)

    assert {policy.name for policy in policies_for(["a", "db_drop"], rules)} == {BINDING}
    assert group_checks(policies_for(["a", "b"], rules)) == [GroupCheck((OPS,), (0, 1), own=False)]


def test_four_eyes_refuses_only_the_requesters_approvals_of_tools_under_it():
    policies = policies_for(["add", "db_query"], RULES)

    assert needs_someone_else(policies, [True, True], presser="U1", requester="U1") == [1]
    assert needs_someone_else(policies, [True, False], presser="U1", requester="U1") == []
    assert needs_someone_else(policies, [True, True], presser="U2", requester="U1") == []


def test_a_turn_no_person_started_has_no_requester_to_refuse():
    policies = policies_for(["db_query"], RULES)

    assert needs_someone_else(policies, [True], presser="U1", requester="kourier-system") == []


def test_unattended_deny_names_its_tools():
    assert denied_unattended(policies_for(["add", "db_query", "db_drop"], RULES)) == [1]


def test_each_distinct_group_list_is_one_check_in_the_order_of_its_first_tool():
    checks = group_checks(policies_for(["db_drop", "add", "restart_a", "db_query"], RULES))

    assert checks == [GroupCheck((DBA,), (0,), own=True), GroupCheck((OPS,), (1, 3), own=False)]


def test_the_audit_names_binding_or_each_tools_rule():
    assert policy_names(["add"], policies_for(["add"], RULES)) == BINDING
    assert (
        policy_names(["add", "db_drop"], policies_for(["add", "db_drop"], RULES))
        == "add: binding; db_drop: tools[0] match=db_drop"
    )


# -- beyond the spec, opt-in (issue 33): a tool allowed for the rest of the thread --------------------

ALLOWED_BY_OPS = ThreadAllowance(approver_groups=(OPS,), granted_by="U0GRACE")


def test_an_allowance_holds_under_the_groups_that_gave_it():
    policy = policy_for("add_numbers", RULES)
    assert allowance_holds(policy, ALLOWED_BY_OPS, requester="U0ADA", requested_by_person=True)


def test_an_allowance_does_not_hold_for_a_tool_now_sent_to_another_group():
    policy = policy_for("db_drop", RULES)
    assert not allowance_holds(policy, ALLOWED_BY_OPS, requester="U0ADA", requested_by_person=True)


def test_an_allowance_does_not_hold_for_a_tool_a_rule_denies_when_nobody_asked():
    policy = policy_for("db_read", RULES)
    assert not allowance_holds(policy, ALLOWED_BY_OPS, requester="system", requested_by_person=False)


def test_an_allowance_does_not_let_its_giver_approve_their_own_request_under_four_eyes():
    policy = policy_for("db_read", RULES)
    assert not allowance_holds(policy, ALLOWED_BY_OPS, requester="U0GRACE", requested_by_person=True)
    assert allowance_holds(policy, ALLOWED_BY_OPS, requester="U0ADA", requested_by_person=True)
