"""Deciding a pending tool approval outside Slack: in the admin or with ``manage.py interactions
decide``, by a Django user with the ``interactions.decide_interaction`` permission (issue 21, point 5).

Beyond the spec, and changing nothing for a Binding whose approvals are decided in Slack: a decision
made here goes through the one take-and-queue path of a press (``services.take``): the same claim
(the first decision wins, whether a press or this), the same audit row (its actor a Django user, and
where), the same decision turn, the same prompt closing, which then says who decided and where.

Bad input decides nothing and says why (``NotDecided``): an unknown id, an interaction that is not a
tool approval, one decided, timed out, cancelled or past its deadline, a tool it does not have, a
tool left undecided or decided twice, a user who may not decide.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from . import approvals, services
from .audit import decision_shape
from .kinds import Reading, Taken
from .models import Interaction

PERMISSION = "interactions.decide_interaction"
ADMIN, CLI = "admin", "cli"  # Interaction.decided_in


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


def verdicts_for(
    tools: Sequence[str],
    *,
    approve: Iterable[str] = (),
    deny: Iterable[str] = (),
    approve_all: bool = False,
    deny_all: bool = False,
) -> tuple[bool, ...]:
    """One verdict per tool of the request, from names (a name decides every call of that tool), or
    all at once. Pure; raises ``NotDecided`` when they do not decide every tool exactly once."""
    approve, deny = list(approve), list(deny)
    if approve_all or deny_all:
        if (approve_all and deny_all) or approve or deny:
            raise NotDecided("Give either --approve-all, --deny-all, or tools to approve and deny, not both.")
        return (approve_all,) * len(tools)
    unknown = [name for name in (*approve, *deny) if name not in tools]
    if unknown:
        raise NotDecided(
            f"This approval has no tool named {', '.join(sorted(set(unknown)))}; its tools are: {', '.join(tools)}."
        )
    both = sorted(set(approve) & set(deny))
    if both:
        raise NotDecided(f"Decide each tool once: {', '.join(both)} is both approved and denied.")
    undecided = [name for name in dict.fromkeys(tools) if name not in approve and name not in deny]
    if undecided:
        raise NotDecided(f"Decide every tool: still undecided: {', '.join(undecided)}.")
    return tuple(name in approve for name in tools)


def decide(
    interaction_id: int,
    user: AbstractBaseUser | AnonymousUser,  # with PermissionsMixin's has_perm, as Django's User
    *,
    where: str,
    approve: Iterable[str] = (),
    deny: Iterable[str] = (),
    approve_all: bool = False,
    deny_all: bool = False,
    now: datetime | None = None,
) -> Taken:
    """Decides an open tool approval as ``user``, from ``where`` (``ADMIN`` or ``CLI``)."""
    now = now or timezone.now()
    if not user.is_active or not user.has_perm(PERMISSION):  # type: ignore[attr-defined,union-attr]
        raise NotDecided(
            f"The Django user {user.get_username()!r} may not decide tool approvals: "
            f"it takes the {PERMISSION} permission."
        )
    interaction = Interaction.objects.select_related("session__binding").filter(pk=interaction_id).first()
    if interaction is None:
        raise NotDecided(f"There is no interaction {interaction_id}.")
    if interaction.kind != Interaction.Kind.APPROVAL:
        raise NotDecided(
            f"Interaction {interaction_id} is a question, not a tool approval: it is answered in Slack."
        )
    _check_open(interaction, now)
    tools = tool_names(interaction)
    verdicts = verdicts_for(tools, approve=approve, deny=deny, approve_all=approve_all, deny_all=deny_all)
    reading = Reading(list(verdicts), decision_shape(list(tools), verdicts))
    taken = services.take(
        approvals.APPROVAL,
        interaction,
        reading,
        user.get_username(),
        turn_key=approvals.APPROVAL.answer_turn_key(interaction.pk),
        decided_in=where,
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
