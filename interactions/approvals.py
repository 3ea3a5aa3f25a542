"""Tool approvals (toolApprovals): the kind plugged into the one press path, and what only an
approval does: opening one when a task pauses for it, who may decide it, timing one out, refusing
one that cannot be shown.

The same Interaction, take-and-queue path, outbox and sweep as questions (services.py): a decision
becomes an answer turn (``Turn.Kind.ANSWER``, its ``answers`` one verdict per tool) queued ahead of
the replies that wait, and it is sent as the dialect's decision message. A timeout is the same turn,
every tool denied with the dialect's timeout reason.

The pause is stored redacted (kourier/redaction.py): an argument's secret never reaches the
database, the prompt, the audit or the logs. The decision message needs only the approval ids.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.services import record
from bindings.models import Binding
from kourier import metrics
from kourier.a2a.events import ApprovalRequest
from kourier.redaction import redact, redact_text
from kourier.slack.mrkdwn import escape
from sessions import notices
from sessions.identity import is_person
from sessions.models import Turn

from . import approval_prompts, kept_answers, services, thread_grants
from .audit import clean_tool_name, decision_shape
from .decisions import NotADecision, Undecided, read_decision
from .kinds import PauseKind, Reading, Refusal, Refused, ShownPrompt, Taken, Unfit
from .models import Interaction
from .policy import (
    BindingRules,
    ToolPolicy,
    denied_unattended,
    needs_someone_else,
    policies_for,
    policy_names,
)
from .services import subject

logger = logging.getLogger(__name__)

DECIDED = "interaction.decided"
TIMED_OUT = "interaction.timed_out"
SUPERSEDED = "interaction.timeout_superseded"


def cleaned(request: ApprovalRequest) -> ApprovalRequest:
    """The request as it may be stored and shown: names and arguments redacted."""
    tools = tuple(
        replace(tool, name=redact_text(tool.name), args=redact(dict(tool.args))) for tool in request.tools
    )
    return replace(request, tools=tools)


def open_approval(turn_id: int, request: ApprovalRequest, *, now: datetime | None = None) -> Interaction:
    """Opens the Interaction of a turn whose task paused for approval; the same one when called again.
    When no person asked (an alert thread's own turn), the tools whose rule says ``unattended: deny``
    are denied at once: all of them, and the request is decided by policy, audited so; some, and the
    prompt puts the others to people, those denied whatever they decide."""
    interaction = services.open_interaction(
        turn_id, Interaction.Kind.APPROVAL, cleaned(request).to_dict(), now=now
    )
    if interaction.state != Interaction.State.OPEN:
        return interaction
    if _allow_by_grants(interaction, now=now):
        interaction.refresh_from_db()
        return interaction
    if is_person(interaction.requested_by):
        return interaction
    denied = denied_unattended(tool_policies(interaction))
    if not denied:
        return interaction
    if interaction.denied_by_policy != denied:
        Interaction.objects.filter(pk=interaction.pk).update(denied_by_policy=denied)
        interaction.denied_by_policy = denied
    if len(denied) == len(interaction.pause.get("tools", [])):
        _deny_by_policy(interaction, now=now)
        interaction.refresh_from_db()
    return interaction


def _deny_by_policy(interaction: Interaction, *, now: datetime | None) -> None:
    tools = [tool.name for tool in request_of(interaction).tools]
    verdicts = [False] * len(tools)
    taken = services.take(
        APPROVAL,
        interaction,
        Reading(verdicts, decision_shape(tools, verdicts)),
        "",
        turn_key=APPROVAL.answer_turn_key(interaction.pk),
        by_policy=True,
        now=now,
    )
    logger.info(
        "interaction.denied_by_policy",
        extra={"interaction_id": interaction.pk, "taken": isinstance(taken, Taken), "tools": len(tools)},
    )


def _allow_by_grants(interaction: Interaction, *, now: datetime | None) -> bool:
    """Approves at once, nobody asked, a request whose every tool an approver allowed for this thread
    (thread_grants.py), audited with the decisions it relied on. True when the request was decided so."""
    tools = [tool.name for tool in request_of(interaction).tools]
    grants = thread_grants.holding_grants(
        interaction, tools, tool_policies(interaction), now=now or timezone.now()
    )
    if not grants:
        return False
    verdicts = [True] * len(tools)
    taken = services.take(
        APPROVAL,
        interaction,
        Reading(verdicts, decision_shape(tools, verdicts)),
        "",
        turn_key=APPROVAL.answer_turn_key(interaction.pk),
        audit_details={thread_grants.ALLOWED_BY: thread_grants.allowed_by(grants)},
        by_policy=True,
        now=now,
    )
    logger.info(
        "interaction.approved_by_thread_grant",
        extra={"interaction_id": interaction.pk, "taken": isinstance(taken, Taken), "tools": len(tools)},
    )
    return True


def denied_whole_by_policy(interaction: Interaction) -> bool:
    """Whether the Binding's rules denied every tool of the request at once (nobody decided)."""
    return (
        interaction.kind == Interaction.Kind.APPROVAL
        and interaction.state == Interaction.State.ANSWERED
        and not interaction.answered_by
        and len(interaction.denied_by_policy) == len(interaction.pause.get("tools", []))
    )


def request_of(interaction: Interaction) -> ApprovalRequest:
    return ApprovalRequest.from_dict(interaction.pause)


def rules_of(binding: Binding) -> BindingRules:
    return BindingRules(
        approver_groups=tuple(binding.approver_groups or ()),
        separate_approver=binding.separate_approver,
        tools=binding.tool_rule_specs(),
    )


def tool_policies(interaction: Interaction) -> list[ToolPolicy]:
    """The rules each tool of the Interaction's request is decided under, by the Binding's rules now."""
    binding = interaction.session.binding
    rules = rules_of(binding) if binding is not None else BindingRules()
    return policies_for([tool.name for tool in request_of(interaction).tools], rules)


# Beyond the spec (issue 21): what a presser the Binding's rules refuse is told, privately. Fixed
# wordings (docs/manifests.md, "Approval rules"); a prompt of several tools names the tools concerned.
SEPARATE_APPROVER = "You asked for this, so someone else must approve it. You can still deny it."
NOT_A_TOOL_APPROVER = "Only members of the approver groups set for {tools} can decide on this request; your decision was not sent."


def tools_named(request: ApprovalRequest, indexes: list[int] | tuple[int, ...]) -> str:
    return ", ".join(escape(request.tools[index].name) for index in indexes)


def separate_approver_refusal(request: ApprovalRequest, indexes: list[int]) -> str:
    if len(request.tools) == 1:
        return SEPARATE_APPROVER
    return f"{SEPARATE_APPROVER} (Someone else must approve: {tools_named(request, indexes)}.)"


def _read(interaction: Interaction, action_id: str, values: Mapping[str, Any]) -> Reading | Unfit:
    request = request_of(interaction)
    binding = interaction.session.binding
    offered = binding is not None and binding.allow_for_thread
    verdicts = read_decision(
        request,
        action_id,
        values,
        denied=frozenset(interaction.denied_by_policy),
        allow_for_thread=offered,
    )
    if isinstance(verdicts, NotADecision):
        return Unfit(Refusal.MISMATCH, reason=verdicts.reason)
    if isinstance(verdicts, Undecided):
        return Unfit(Refusal.INCOMPLETE, message=verdicts.message)
    audit = decision_shape([tool.name for tool in request.tools], verdicts)
    if action_id == approval_prompts.ALLOW_FOR_THREAD_ACTION:
        audit[thread_grants.ALLOWED_FOR_THREAD] = True
    return Reading(list(verdicts), audit)


def _keep_grants(interaction: Interaction, reading: Reading, user_id: str, decision_id: int) -> None:
    tools = [tool.name for tool in request_of(interaction).tools]
    thread_grants.keep_grants(interaction, reading, user_id, decision_id, tools, tool_policies(interaction))


def _four_eyes(interaction: Interaction, reading: Reading, user_id: str) -> Refused | None:
    """The person whose message started the turn may deny, not approve, a tool under separateApprover:
    checked on every press, as the groups are; nothing is decided."""
    refused = needs_someone_else(
        tool_policies(interaction),
        [bool(verdict) for verdict in reading.answers],
        presser=user_id,
        requester=services.requester(interaction),
    )
    if not refused:
        return None
    return APPROVAL.refused(
        Refusal.SEPARATE_APPROVER, separate_approver_refusal(request_of(interaction), refused)
    )


def policy_name(interaction: Interaction) -> str:
    """The rules the audit says the approval was decided under."""
    names = [clean_tool_name(tool.name) for tool in request_of(interaction).tools]
    return policy_names(names, tool_policies(interaction))


def _open_prompt(interaction: Interaction) -> ShownPrompt | approval_prompts.Unshowable:
    """The request as it waits for a decision, its tools denied by policy shown so; a request the
    Binding's rules denied whole is shown decided (the thread is told, nobody is asked)."""
    request = request_of(interaction)
    if denied_whole_by_policy(interaction):
        blocks: list[dict[str, Any]] | approval_prompts.Unshowable = approval_prompts.denied_by_policy_prompt(
            request
        )
    else:
        binding = interaction.session.binding
        blocks = approval_prompts.open_prompt(
            request,
            interaction.pk,
            denied=frozenset(interaction.denied_by_policy),
            allow_for_thread=binding is not None and binding.allow_for_thread,
        )
    if isinstance(blocks, approval_prompts.Unshowable):
        return blocks
    return blocks, approval_prompts.fallback_text(request)


def _ended_prompt(interaction: Interaction) -> ShownPrompt:
    """Each tool's verdict, or the timed-out ending."""
    request = request_of(interaction)
    if denied_whole_by_policy(interaction):
        blocks = approval_prompts.denied_by_policy_prompt(request)
    elif interaction.state == Interaction.State.ANSWERED and interaction.answered_at is not None:
        turn = interaction.answer_turn
        verdicts = [bool(verdict) for verdict in (turn.answers if turn is not None else None) or []]
        at = interaction.answered_at
        epoch, at_text = int(at.timestamp()), f"{at:%Y-%m-%d %H:%M}"
        line = (
            approval_prompts.decided_outside_line(
                interaction.answered_by, interaction.decided_in, epoch, at_text
            )
            if interaction.decided_in
            else approval_prompts.decided_line(interaction.answered_by, epoch, at_text)
        )
        if allowed := thread_grants.allowed_tools(interaction):
            line += " " + approval_prompts.allowed_for_thread_line(allowed)
        blocks = approval_prompts.decided_prompt(request, verdicts, line + kept_answers.waiting(interaction))
    else:
        blocks = approval_prompts.timed_out_prompt(request)
    return blocks, approval_prompts.fallback_text(request)


def _taken(interaction_id: int, now: datetime) -> None:
    # A timeout audited before this decision won, by a sweep that died before its claim: no sweep is
    # left to append the superseded row, so the decision's own transaction does (once, by its mark).
    _supersede_if_audited(interaction_id, now=now)


APPROVAL = PauseKind(
    kind=Interaction.Kind.APPROVAL,
    actions=approval_prompts.ACTIONS,
    taken=DECIDED,
    turn_key="decision",
    refusals={
        Refusal.UNKNOWN: "This is not an approval request I can take a decision for.",
        Refusal.CLOSED: "This approval request is closed: it timed out or was cancelled, so your decision was not sent.",
        Refusal.TAKEN: "Someone already decided on this approval request; your decision was not sent.",
        Refusal.MISMATCH: "This decision does not fit the request as it was asked, so it was not sent.",
        Refusal.NOT_A_MEMBER: "Only members of this channel can decide on the agent's tool requests.",
        Refusal.NOT_AN_APPROVER: (
            "Only members of this channel's approver groups can decide on the agent's tool requests; "
            "your decision was not sent."
        ),
        Refusal.GROUPS_UNREADABLE: (
            "I could not read the approver groups of this channel, so your decision was not sent and the "
            "request is still pending. Ask whoever runs Agent Kourier to check its approver groups and Slack permissions."
        ),
        Refusal.GROUPS_UNAVAILABLE: (
            "Slack did not let me check the approver groups in time, so your decision was not sent and the "
            "request is still pending. Try again in a moment."
        ),
        Refusal.SEPARATE_APPROVER: SEPARATE_APPROVER,
        Refusal.MEMBERSHIP_UNKNOWN: (
            "I could not check that you are a member of this channel, so your decision was not sent. "
            "Try again in a moment."
        ),
    },
    read=_read,
    open_prompt=_open_prompt,
    ended_prompt=_ended_prompt,
    unusable_notice=notices.APPROVAL_UNUSABLE,
    approvers=True,
    taken_in_transaction=_taken,
    vet=_four_eyes,
    recorded=_keep_grants,
    policy=policy_name,
)


@dataclass(frozen=True)
class DecisionWork:
    """What a decision turn carries to the agent's paused task: one verdict per tool, and whether
    nobody decided (the denials then carry the dialect's timeout reason)."""

    request: ApprovalRequest
    verdicts: tuple[bool, ...]
    timed_out: bool
    reason: str = ""  # the person's reason for the denials (denyReasons), redacted; "" for none
    denied_by_policy: frozenset[int] = frozenset()  # their denials carry the dialect's policy reason


def decision_of(turn_id: int) -> DecisionWork | None:
    interaction = (
        Interaction.objects.filter(answer_turn_id=turn_id, kind=Interaction.Kind.APPROVAL)
        .select_related("answer_turn")
        .first()
    )
    if interaction is None or interaction.answer_turn is None:
        return None
    return DecisionWork(
        request_of(interaction),
        tuple(bool(verdict) for verdict in interaction.answer_turn.answers or []),
        timed_out=interaction.state == Interaction.State.TIMED_OUT,
        reason=interaction.deny_reason,
        denied_by_policy=frozenset(interaction.denied_by_policy),
    )


# -- timeouts --------------------------------------------------------------------------------------------


def open_approvals_past_deadline(*, now: datetime | None = None) -> list[int]:
    now = now or timezone.now()
    return list(
        Interaction.objects.filter(
            kind=Interaction.Kind.APPROVAL, state=Interaction.State.OPEN, deadline__lte=now
        ).values_list("pk", flat=True)
    )


def audit_timeout(interaction_id: int, *, now: datetime | None = None) -> bool:
    """Writes the timeout's audit row unless it is written already (recovery reuses it). True when
    this call wrote it. The Interaction's mark is taken by a conditional update in the same
    transaction, so two sweeps at once write one row (the second waits for the first's commit)."""
    now = now or timezone.now()
    with transaction.atomic():
        if not Interaction.objects.filter(pk=interaction_id, timeout_audited_at=None).update(
            timeout_audited_at=now
        ):
            return False
        interaction = Interaction.objects.select_related("session__binding").get(pk=interaction_id)
        binding = interaction.session.binding
        tools = [tool["name"] for tool in interaction.pause.get("tools", [])]
        record(
            TIMED_OUT,
            binding_name=binding.name if binding else "",
            subject=subject(interaction_id),
            details=decision_shape(tools, [False] * len(tools)),
            requester=services.requester(interaction),
            policy=policy_name(interaction),
        )
    return True


def claim_timeout(interaction_id: int) -> bool:
    """OPEN → TIMED_OUT, a conditional update: a person's decision that won keeps the Interaction."""
    claimed = (
        Interaction.objects.filter(pk=interaction_id, state=Interaction.State.OPEN).update(
            state=Interaction.State.TIMED_OUT
        )
        == 1
    )
    if claimed:
        metrics.interactions_timed_out(Interaction.Kind.APPROVAL.value)
    return claimed


def supersede_timeout(interaction_id: int) -> bool:
    """A person's decision won the race after the timeout's audit: the audit says so, appended. True
    when this call wrote it; nothing when no timeout was audited, no person decided, or it is written."""
    return _supersede_if_audited(interaction_id)


def _supersede_if_audited(interaction_id: int, *, now: datetime | None = None) -> bool:
    # The decision's own transaction calls it too (take_decision): a sweep that died between its audit
    # and its claim leaves no sweep to append it. The mark makes it once, whoever comes first.
    now = now or timezone.now()
    with transaction.atomic():
        if not Interaction.objects.filter(
            pk=interaction_id,
            state=Interaction.State.ANSWERED,
            timeout_audited_at__isnull=False,
            timeout_superseded_at=None,
        ).update(timeout_superseded_at=now):
            return False
        interaction = Interaction.objects.select_related("session__binding").get(pk=interaction_id)
        binding = interaction.session.binding
        record(
            SUPERSEDED,
            binding_name=binding.name if binding else "",
            subject=subject(interaction_id),
            details={"decided_by": interaction.answered_by},
        )
    return True


def timed_out_to_close() -> list[Interaction]:
    return list(
        Interaction.objects.filter(
            kind=Interaction.Kind.APPROVAL, state=Interaction.State.TIMED_OUT, closed_at=None
        )
        .select_related("turn", "session__binding", "session__connection")
        .order_by("deadline")
    )


def queue_timeout_denial(interaction_id: int) -> Turn:
    """The denial of every tool, queued as the Interaction's answer turn (once)."""
    with transaction.atomic():
        interaction = Interaction.objects.select_related("session").get(pk=interaction_id)
        if interaction.answer_turn_id is not None:
            return Turn.objects.get(pk=interaction.answer_turn_id)
        denials = [False] * len(interaction.pause.get("tools", []))
        return services.queue_answer_turn(interaction, denials, "", APPROVAL.answer_turn_key(interaction.pk))
