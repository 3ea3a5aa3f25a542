"""Deciding a pending tool approval outside Slack: in the admin or with ``manage.py interactions
decide``, by a Django user with the ``interactions.decide_interaction`` permission (issue 21, point 5).

Beyond the spec, and changing nothing for a Binding whose approvals are decided in Slack: a decision
made here goes through the one take-and-queue path of a press (``services.take``): the same claim
(the first decision wins, whether a press or this), the same audit row (its actor a Django user, and
where), the same decision turn, the same prompt closing, which then says who decided and where.

Bad input decides nothing and says why (``NotDecided``): an unknown id, an interaction that is not a
tool approval, one decided, timed out, cancelled or past its deadline, a tool it does not have, a
tool left undecided or decided twice, a user who may not decide.

The rules of a press hold here as far as Kourier can check them (issue 32, point 3): a tool its rule
denied because nobody asked (``unattended: deny``) stays denied, whatever is chosen, "approve all"
included, and approving it by name is refused. Two cannot be checked, because Kourier cannot tell
which Slack person a Django user is: the approver groups (the Binding's and its tool rules', Slack
user groups) and ``separateApprover`` (four eyes: the person who asked may not approve). For those
the permission stands in: the page says so before the decision (``STANDS_IN_FOR``), and the audit
row names what it stood in for (``stood_in_for``). Who holds the permission is the operator's
choice, and a Binding's deciding groups (``DecidingGroup``) limit it to some of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from bindings.models import Binding
from sessions.identity import is_person

from . import approvals, services
from .audit import decision_shape
from .kinds import Reading, Taken
from .models import DecidingGroup, Interaction

PERMISSION = "interactions.decide_interaction"
ADMIN, CLI = "admin", "cli"  # Interaction.decided_in

# What a decision outside Slack does not check and why: the admin's page and the command's help say it.
STANDS_IN_FOR = (
    f"Outside Slack, the {PERMISSION} permission stands in for the approver groups and for "
    "separateApprover (four eyes): Kourier cannot tell which Slack person a Django user is, so it checks "
    "neither. A tool denied by its rule because nobody asked (unattended: deny) stays denied, whatever "
    "is chosen. A Binding's deciding groups limit who may decide its approvals here."
)
APPROVER_GROUPS, SEPARATE_APPROVER = "approverGroups", "separateApprover"  # the audit's stood_in_for


class NotDecided(Exception):
    """Why nothing was decided, in one line for the person who tried."""


@dataclass(frozen=True)
class Pending:
    """An open tool approval as the admin and the CLI list it."""

    id: int
    binding: str
    channel_id: str
    thread_ts: str
    tools: tuple[str, ...]
    deadline: datetime


def pending(*, now: datetime | None = None) -> list[Pending]:
    """Open tool approvals whose deadline has not passed, the nearest deadline first."""
    now = now or timezone.now()
    interactions = (
        Interaction.objects.filter(
            kind=Interaction.Kind.APPROVAL, state=Interaction.State.OPEN, deadline__gt=now
        )
        .select_related("session__binding")
        .order_by("deadline", "pk")
    )
    return [_pending(interaction) for interaction in interactions]


def _pending(interaction: Interaction) -> Pending:
    binding = interaction.session.binding
    return Pending(
        id=interaction.pk,
        binding=binding.name if binding else "",
        channel_id=interaction.channel_id,
        thread_ts=interaction.session.thread_ts,
        tools=tool_names(interaction),
        deadline=interaction.deadline,
    )


def tool_names(interaction: Interaction) -> tuple[str, ...]:
    return tuple(tool.name for tool in approvals.request_of(interaction).tools)


@dataclass(frozen=True)
class ToolToDecide:
    """A tool of a pending approval (every call of one name) and the rules a press on it would pass."""

    name: str
    denied_by_rule: bool  # unattended: deny, nobody asked: it stays denied
    approver_groups: tuple[str, ...]  # Slack user groups a presser must be in: not checked here
    separate_approver: bool  # a person asked, who may not approve it (four eyes): not checked here


def tools_to_decide(interaction: Interaction) -> list[ToolToDecide]:
    """The approval's tools by name, in their order, with their rules."""
    denied = set(interaction.denied_by_policy)
    asked_by_a_person = is_person(services.requester(interaction))
    found: dict[str, ToolToDecide] = {}
    for index, (name, policy) in enumerate(
        zip(tool_names(interaction), approvals.tool_policies(interaction), strict=True)
    ):
        if name not in found:
            found[name] = ToolToDecide(
                name,
                denied_by_rule=index in denied,
                approver_groups=tuple(policy.approver_groups),
                separate_approver=policy.separate_approver and asked_by_a_person,
            )
    return list(found.values())


def stood_in_for(tools: Sequence[ToolToDecide]) -> list[str]:
    """The rules of a press that the permission stood in for, deciding these tools."""
    rules = []
    if any(tool.approver_groups for tool in tools if not tool.denied_by_rule):
        rules.append(APPROVER_GROUPS)
    if any(tool.separate_approver for tool in tools if not tool.denied_by_rule):
        rules.append(SEPARATE_APPROVER)
    return rules


def verdicts_for(
    tools: Sequence[str],
    *,
    approve: Iterable[str] = (),
    deny: Iterable[str] = (),
    approve_all: bool = False,
    deny_all: bool = False,
    denied: frozenset[int] = frozenset(),
) -> tuple[bool, ...]:
    """One verdict per tool of the request, from names (a name decides every call of that tool), or
    all at once. ``denied``: the tools (by index) the Binding's rules denied because nobody asked,
    which every decision leaves denied and no name may approve. Pure; raises ``NotDecided`` when the
    names do not decide every other tool exactly once."""
    approve, deny = list(approve), list(deny)
    denied_names = {tools[index] for index in denied if index < len(tools)}
    if approve_all or deny_all:
        if (approve_all and deny_all) or approve or deny:
            raise NotDecided("Give either --approve-all, --deny-all, or tools to approve and deny, not both.")
        return tuple(approve_all and index not in denied for index in range(len(tools)))
    unknown = [name for name in (*approve, *deny) if name not in tools]
    if unknown:
        raise NotDecided(
            f"This approval has no tool named {', '.join(sorted(set(unknown)))}; its tools are: {', '.join(tools)}."
        )
    both = sorted(set(approve) & set(deny))
    if both:
        raise NotDecided(f"Decide each tool once: {', '.join(both)} is both approved and denied.")
    ruled_out = sorted(set(approve) & denied_names)
    if ruled_out:
        raise NotDecided(
            f"{', '.join(ruled_out)} was denied by its rule because nobody asked (unattended: deny): "
            "nobody may approve it. Deny it or leave it out: it stays denied."
        )
    undecided = [
        name
        for name in dict.fromkeys(tools)
        if name not in approve and name not in deny and name not in denied_names
    ]
    if undecided:
        raise NotDecided(f"Decide every tool: still undecided: {', '.join(undecided)}.")
    return tuple(name in approve and index not in denied for index, name in enumerate(tools))


def why_not_allowed(user: AbstractBaseUser | AnonymousUser, binding: Binding | None) -> str | None:
    """Why ``user`` may not decide this Binding's tool approvals outside Slack, or None when it may:
    it needs the permission and, when the Binding has deciding groups, to be in one of them."""
    name = user.get_username()
    if not user.is_active or not user.has_perm(PERMISSION):  # type: ignore[attr-defined,union-attr]
        return (
            f"The Django user {name!r} may not decide tool approvals: it takes the {PERMISSION} permission."
        )
    if binding is None or user.is_superuser:  # type: ignore[union-attr,attr-defined]
        return None
    groups = list(
        DecidingGroup.objects.filter(binding=binding)
        .order_by("group__name")
        .values_list("group__name", flat=True)
    )
    if groups and not user.groups.filter(name__in=groups).exists():  # type: ignore[union-attr,attr-defined]
        return (
            f"The Django user {name!r} may not decide the tool approvals of Binding {binding.name!r}: "
            f"only members of its deciding groups may ({', '.join(groups)})."
        )
    return None


def decide(
    interaction_id: int,
    user: AbstractBaseUser | AnonymousUser,  # with PermissionsMixin's has_perm, as Django's User
    *,
    where: str,
    approve: Iterable[str] = (),
    deny: Iterable[str] = (),
    approve_all: bool = False,
    deny_all: bool = False,
    os_user: str = "",
    now: datetime | None = None,
) -> Taken:
    """Decides an open tool approval as ``user``, from ``where`` (``ADMIN`` or ``CLI``). ``os_user``:
    who ran the command (``--as`` names the Django user it acts as), kept in the audit row beside it."""
    now = now or timezone.now()
    refusal = why_not_allowed(user, None)
    if refusal:
        raise NotDecided(refusal)
    interaction = Interaction.objects.select_related("session__binding").filter(pk=interaction_id).first()
    if interaction is None:
        raise NotDecided(f"There is no interaction {interaction_id}.")
    if interaction.kind != Interaction.Kind.APPROVAL:
        raise NotDecided(
            f"Interaction {interaction_id} is a question, not a tool approval: it is answered in Slack."
        )
    refusal = why_not_allowed(user, interaction.session.binding)
    if refusal:
        raise NotDecided(refusal)
    _check_open(interaction, now)
    tools = tool_names(interaction)
    verdicts = verdicts_for(
        tools,
        approve=approve,
        deny=deny,
        approve_all=approve_all,
        deny_all=deny_all,
        denied=frozenset(interaction.denied_by_policy),
    )
    reading = Reading(list(verdicts), decision_shape(list(tools), verdicts))
    details: dict[str, Any] = {"stood_in_for": stood_in_for(tools_to_decide(interaction))}
    if os_user:
        details["os_user"] = os_user
    taken = services.take(
        approvals.APPROVAL,
        interaction,
        reading,
        user.get_username(),
        turn_key=approvals.APPROVAL.answer_turn_key(interaction.pk),
        decided_in=where,
        audit_details=details,
        now=now,
    )
    if not isinstance(taken, Taken):  # a press or another decision won since the read above
        interaction.refresh_from_db()
        _check_open(interaction, now)
        raise NotDecided(f"Interaction {interaction_id} was decided already; this decision was not sent.")
    return taken


def _check_open(interaction: Interaction, now: datetime) -> None:
    if interaction.state == Interaction.State.ANSWERED:
        raise NotDecided(f"Interaction {interaction.pk} was decided already; this decision was not sent.")
    if interaction.state != Interaction.State.OPEN or interaction.deadline <= now:
        raise NotDecided(
            f"Interaction {interaction.pk} is closed: it timed out or was cancelled, so this decision was not sent."
        )
