""" "Allow for this thread" (issue 33, beyond the spec, opt-in per Binding: ``spec.interactions.allowForThread``).

An approver who presses it approves the call, and the decision's own transaction keeps a grant per
tool (``ThreadGrant``: the session, the tool, the decision's audit row, who, and the approver groups
the tool was decided under). When the agent calls the tool again in that session, the approval is
decided by the grant at once, nobody asked, no prompt posted, audited with the decision it relied on;
only while the session lives, the Binding still offers it, and every tool of the request has a grant
its rules still let hold (policy.allowance_holds: no rule denies it, nor sends it to other groups).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from sessions.identity import is_person

from . import services
from .kinds import Reading
from .models import Interaction, ThreadGrant
from .policy import ThreadAllowance, ToolPolicy, allowance_holds

logger = logging.getLogger(__name__)

ALLOWED_FOR_THREAD = "allowed_for_thread"  # the decision's audit detail: it allowed its tools for the thread
ALLOWED_BY = "allowed_by"  # the audit detail of a call run on grants: the decisions it relied on


def keep_grants(
    interaction: Interaction,
    reading: Reading,
    user_id: str,
    decision_id: int,
    tool_names: Sequence[str],
    policies: Sequence[ToolPolicy],
) -> None:
    """In the decision's transaction, once audited: a press of "Allow for this thread" keeps a grant
    for each tool it approved (a later grant of the same tool in the session replaces the earlier)."""
    if not reading.audit.get(ALLOWED_FOR_THREAD):
        return
    for name, policy, approved in zip(tool_names, policies, reading.answers, strict=True):
        if not approved:
            continue
        ThreadGrant.objects.update_or_create(
            session_id=interaction.session_id,
            tool_name=name,
            defaults={
                "granted_in": interaction,
                "decision_id": decision_id,
                "granted_by": user_id,
                "approver_groups": list(policy.approver_groups),
            },
        )
    logger.info("interaction.allowed_for_thread", extra={"interaction_id": interaction.pk})


def holding_grants(
    interaction: Interaction, tool_names: Sequence[str], policies: Sequence[ToolPolicy], *, now: datetime
) -> list[ThreadGrant] | None:
    """The grants the request may run on, one per tool, or None when any tool must be asked about:
    the Binding no longer offers it, the session expired, a tool has no grant, or its rules no longer
    let the grant hold."""
    session = interaction.session
    binding = session.binding
    if binding is None or not binding.allow_for_thread or session.expires_at <= now:
        return None
    grants = {
        grant.tool_name: grant
        for grant in ThreadGrant.objects.filter(session=session, tool_name__in=list(tool_names))
    }
    requester = services.requester(interaction)
    found = []
    for name, policy in zip(tool_names, policies, strict=True):
        grant = grants.get(name)
        if grant is None or not allowance_holds(
            policy,
            ThreadAllowance(tuple(grant.approver_groups), grant.granted_by),
            requester=requester,
            requested_by_person=is_person(requester),
        ):
            return None
        found.append(grant)
    return found


def allowed_by(grants: Sequence[ThreadGrant]) -> list[dict[str, object]]:
    """The audit's account of the grants a call ran on: each tool's decision (its audit row and its
    approval) and who allowed it."""
    return [
        {
            "tool": grant.tool_name,
            "decision": grant.decision_id,
            "granted_in": services.subject(grant.granted_in_id),
            "granted_by": grant.granted_by,
        }
        for grant in grants
    ]


def allowed_tools(interaction: Interaction) -> list[str]:
    """The tools this approval's decision allowed for the thread (its ended prompt says so)."""
    return list(
        ThreadGrant.objects.filter(granted_in=interaction).order_by("pk").values_list("tool_name", flat=True)
    )
