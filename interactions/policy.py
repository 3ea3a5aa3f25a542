"""Which approval rules a tool is decided under (issue 21, beyond the spec, opt-in per Binding). Pure.

A Binding's ``interactions.tools`` rules are tried in order; the first whose ``match`` fits the tool's
name (the name itself, or a glob: ``*``, ``?``, ``[...]``, case-sensitive) gives the tool its rules,
each field it leaves out taken from the Binding. A tool no rule matches takes the Binding's own rules.
A Binding without rules decides every tool under its own, as the spec says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bindings.manifest import DEFAULT_UNATTENDED, ToolRule, Unattended

BINDING = "binding"  # the policy of a tool no rule matches


@dataclass(frozen=True)
class BindingRules:
    """A Binding's approval rules, as the press path and the pause read them."""

    approver_groups: tuple[str, ...] = ()
    separate_approver: bool = False
    tools: tuple[ToolRule, ...] = ()


@dataclass(frozen=True)
class ToolPolicy:
    """The rules one tool is decided under, and where they came from (``name``, for the audit)."""

    name: str  # "binding", or the rule that matched: "tools[1] match=db_*"
    approver_groups: tuple[str, ...]
    separate_approver: bool
    unattended: Unattended = DEFAULT_UNATTENDED
    own_groups: bool = False  # the groups are the rule's, not the Binding's


def policy_for(tool_name: str, rules: BindingRules) -> ToolPolicy:
    """The first rule that matches ``tool_name`` (its fields over the Binding's), else the Binding's."""
    for index, rule in enumerate(rules.tools):
        if fnmatchcase(tool_name, rule.match):
            return ToolPolicy(
                name=f"tools[{index}] match={rule.match}",
                approver_groups=rules.approver_groups
                if rule.approver_groups is None
                else rule.approver_groups,
                separate_approver=rules.separate_approver
                if rule.separate_approver is None
                else rule.separate_approver,
                unattended=rule.unattended,
                own_groups=rule.approver_groups is not None,
            )
    return ToolPolicy(BINDING, rules.approver_groups, rules.separate_approver)


def policies_for(tool_names: Sequence[str], rules: BindingRules) -> list[ToolPolicy]:
    return [policy_for(name, rules) for name in tool_names]


def needs_someone_else(
    policies: Sequence[ToolPolicy], verdicts: Sequence[bool], *, presser: str, requester: str
) -> list[int]:
    """The tools (by index) the press approves that the person who asked may not approve (four eyes).
    A turn no person started has no requester (the system identity), so it never matches a presser."""
    if presser != requester:
        return []
    return [
        index
        for index, (policy, approved) in enumerate(zip(policies, verdicts, strict=True))
        if approved and policy.separate_approver
    ]


def denied_unattended(policies: Sequence[ToolPolicy]) -> list[int]:
    """The tools (by index) denied at once when no person asked: their rule says ``unattended: deny``."""
    return [index for index, policy in enumerate(policies) if policy.unattended is Unattended.DENY]


@dataclass(frozen=True)
class GroupCheck:
    """Approver groups a presser must be in one of, for the tools (by index) decided under them."""

    groups: tuple[str, ...]
    tools: tuple[int, ...]
    own: bool  # a rule's own groups (else the Binding's)


def group_checks(policies: Sequence[ToolPolicy]) -> list[GroupCheck]:
    """Each distinct list of approver groups among the tools, in the order of their first tool; a tool
    under no groups asks for none. A Binding without rules has one check (its groups) or none."""
    checks: dict[tuple[tuple[str, ...], bool], list[int]] = {}
    for index, policy in enumerate(policies):
        if policy.approver_groups:
            checks.setdefault((policy.approver_groups, policy.own_groups), []).append(index)
    return [GroupCheck(groups, tuple(tools), own) for (groups, own), tools in checks.items()]


def policy_names(tool_names: Sequence[str], policies: Sequence[ToolPolicy]) -> str:
    """The policy the audit names: ``binding`` when every tool was decided under the Binding's rules,
    else each tool's (``add: binding; db_drop: tools[0] match=db_*``)."""
    if all(policy.name == BINDING for policy in policies):
        return BINDING
    return "; ".join(f"{name}: {policy.name}" for name, policy in zip(tool_names, policies, strict=True))


@dataclass(frozen=True)
class ThreadAllowance:
    """A tool an approver allowed for the rest of the thread (issue 33): the approver groups it was
    decided under then, and who allowed it."""

    approver_groups: tuple[str, ...]
    granted_by: str


def allowance_holds(
    policy: ToolPolicy, allowance: ThreadAllowance, *, requester: str, requested_by_person: bool
) -> bool:
    """Whether a call of the tool may run on the allowance, without a prompt, under the rules it is
    decided by now: not when a rule denies it (``unattended: deny`` and nobody asked), nor when it is
    now sent to other approver groups than the ones that allowed it, nor when four eyes
    (``separateApprover``) would refuse the person who allowed it approving their own request."""
    if policy.unattended is Unattended.DENY and not requested_by_person:
        return False
    if tuple(policy.approver_groups) != tuple(allowance.approver_groups):
        return False
    return not (policy.separate_approver and requester == allowance.granted_by)
