"""Reading ``spec.interactions``: questions, tool approvals and who may decide them, their deadline
and reminder, and the per-tool approval rules (``tools``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from .checker import MISSING, Checker, show, value_at
from .durations import format_duration
from .limits import MAX_APPROVER_GROUPS, MAX_TOOL_RULES, TOOL_MATCH_MAX_LENGTH, USER_GROUP_ID_RE
from .specs import (
    DEFAULT_ASK_USER,
    DEFAULT_INTERACTION_TIMEOUT,
    DEFAULT_SEPARATE_APPROVER,
    DEFAULT_TOOL_APPROVALS,
    DEFAULT_UNATTENDED,
    InteractionsSpec,
    ToolRule,
    Unattended,
)

INTERACTIONS_FIELDS = (
    "askUser", "toolApprovals", "approverGroups", "timeout", "separateApprover", "tools", "denyReasons", "remindBefore",
    "allowForThread",
)  # fmt: skip
TOOL_RULE_FIELDS = ("match", "approverGroups", "separateApprover", "unattended")


def read_interactions(check: Checker, value: Any) -> InteractionsSpec | None:
    section = check.mapping(value, "spec.interactions", INTERACTIONS_FIELDS)
    if section is None:
        return None
    ask_user = check.boolean(value_at(section, "askUser"), "spec.interactions.askUser", DEFAULT_ASK_USER)
    tool_approvals = check.boolean(
        value_at(section, "toolApprovals"), "spec.interactions.toolApprovals", DEFAULT_TOOL_APPROVALS
    )
    timeout = check.duration(
        value_at(section, "timeout"), "spec.interactions.timeout", DEFAULT_INTERACTION_TIMEOUT
    )
    groups_value = value_at(section, "approverGroups")
    groups: tuple[str, ...] = ()
    if groups_value is not MISSING:
        path = "spec.interactions.approverGroups"
        read = _read_groups(check, groups_value, path)
        if read is None:
            return None
        groups = read
        if groups_value and value_at(section, "toolApprovals") is not True:
            check.error(path, "approver groups need toolApprovals: true")
    deny_reasons = check.boolean(value_at(section, "denyReasons"), "spec.interactions.denyReasons", False)
    if deny_reasons and value_at(section, "toolApprovals") is not True:
        check.error("spec.interactions.denyReasons", "a reason with a denial needs toolApprovals: true")
    allow_for_thread = check.boolean(
        value_at(section, "allowForThread"), "spec.interactions.allowForThread", False
    )
    if allow_for_thread and value_at(section, "toolApprovals") is not True:
        check.error("spec.interactions.allowForThread", "allowForThread needs toolApprovals: true")
    remind_before = _read_remind_before(check, section, timeout)
    separate_approver = check.boolean(
        value_at(section, "separateApprover"), "spec.interactions.separateApprover", DEFAULT_SEPARATE_APPROVER
    )
    if separate_approver and value_at(section, "toolApprovals") is not True:
        check.error("spec.interactions.separateApprover", "separateApprover needs toolApprovals: true")
    tools = _read_tool_rules(check, value_at(section, "tools"))
    if tools is None:
        return None
    if tools and value_at(section, "toolApprovals") is not True:
        check.error("spec.interactions.tools", "tool rules need toolApprovals: true")
    return InteractionsSpec(
        ask_user=ask_user,
        tool_approvals=tool_approvals,
        approver_groups=groups,
        timeout=timeout,
        separate_approver=separate_approver,
        tools=tools,
        deny_reasons=deny_reasons,
        remind_before=remind_before,
        allow_for_thread=allow_for_thread,
    )


def _read_remind_before(check: Checker, section: dict[str, Any], timeout: timedelta) -> timedelta | None:
    value = value_at(section, "remindBefore")
    if value is MISSING:
        return None
    path = "spec.interactions.remindBefore"
    remind_before = check.duration(value, path, timedelta(0))  # refused: the zero is never used
    if value_at(section, "toolApprovals") is not True:
        check.error(path, "a reminder needs toolApprovals: true")
    elif remind_before >= timeout:
        check.error(
            path,
            f"must be shorter than spec.interactions.timeout ({format_duration(timeout)}) (got {show(value)})",
        )
    return remind_before


def _read_groups(check: Checker, value: Any, path: str) -> tuple[str, ...] | None:
    if isinstance(value, list) and len(value) > MAX_APPROVER_GROUPS:
        check.error(path, f"at most {MAX_APPROVER_GROUPS} entries are allowed (got {len(value)})")
    read = check.id_list(value, path, USER_GROUP_ID_RE, "user group", "S0123456789")
    return None if read is None else tuple(group for _, group in read)


def _read_tool_rules(check: Checker, value: Any) -> tuple[ToolRule, ...] | None:
    """``spec.interactions.tools``: each rule a mapping with a ``match``; refused whole on any fault."""
    path = "spec.interactions.tools"
    if value is MISSING:
        return ()
    if not isinstance(value, list):
        check.error(
            path,
            f"must be a list of rules such as {{match: db_*, separateApprover: true}} (got {show(value)})",
        )
        return None
    if len(value) > MAX_TOOL_RULES:
        check.error(path, f"at most {MAX_TOOL_RULES} rules are allowed (got {len(value)})")
    rules: list[ToolRule] = []
    errors = len(check.errors)
    for index, entry in enumerate(value):
        rule_path = f"{path}[{index}]"
        section = check.mapping(entry, rule_path, TOOL_RULE_FIELDS)
        if section is None:
            continue
        match_value = value_at(section, "match")
        match = None
        if check.required(match_value, f"{rule_path}.match"):
            match = check.string(match_value, f"{rule_path}.match")
        if match is not None and (not match.strip() or len(match) > TOOL_MATCH_MAX_LENGTH):
            check.error(
                f"{rule_path}.match",
                f"must be a tool name or a glob such as db_*, at most {TOOL_MATCH_MAX_LENGTH} characters "
                f"(got {show(match)})",
            )
            match = None
        groups_value = value_at(section, "approverGroups")
        groups = None
        if groups_value is not MISSING:
            groups = _read_groups(check, groups_value, f"{rule_path}.approverGroups")
        separate_value = value_at(section, "separateApprover")
        separate = (
            None
            if separate_value is MISSING
            else check.boolean(separate_value, f"{rule_path}.separateApprover", DEFAULT_SEPARATE_APPROVER)
        )
        unattended = check.choice(
            value_at(section, "unattended"), f"{rule_path}.unattended", Unattended, DEFAULT_UNATTENDED
        )
        if match is not None:
            rules.append(ToolRule(match, groups, separate, unattended))
    return tuple(rules) if len(check.errors) == errors else None
