"""What waits for one person, for the slash command's ``status`` and ``help`` and the Home tab (issue 33):
their open sessions, the tool approvals they may decide, the alert threads open in their channels.

Who may decide an approval is read as a press's presser is checked (``presses.standing_of``, the
approver groups of ``presses.policy_of``): a member of the channel, never a bot, in one of the groups
of every tool when there are groups. An approval Slack cannot check just now is left out, never shown
to someone who may not decide it. The texts are built by pure functions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from bindings.models import Binding
from kourier.db import in_database_thread
from kourier.progress import ThreadKind
from kourier.slack.clients import SlackError, error_name
from kourier.slack.links import thread_url
from kourier.slack.people import usergroup_members
from sessions.models import Session

from . import approvals
from .models import Interaction
from .presses import Standing, policy_of, standing_of

logger = logging.getLogger(__name__)

LISTED_AT_MOST = 10  # of each kind, the most recent first: a Slack message and a Home tab stay short
RECENT_SESSIONS_SHOWN = 10


@dataclass(frozen=True)
class ThreadLine:
    """A thread as a list shows it: where it is and what it is about."""

    channel_id: str
    thread_ts: str
    url: str
    open: bool = True
    last_activity_at: datetime | None = None


@dataclass(frozen=True)
class WaitingApproval:
    interaction_id: int
    channel_id: str
    thread_ts: str
    prompt_ts: str
    url: str
    tools: tuple[str, ...]
    deadline: datetime


def sessions_of(connection_id: int, user_id: str, *, now: datetime | None = None) -> list[ThreadLine]:
    """The person's recent sessions on the Connection (a turn of theirs), the latest activity first."""
    now = now or timezone.now()
    sessions = (
        Session.objects.filter(connection_id=connection_id, turns__user_id=user_id)
        .select_related("connection")
        .distinct()
        .order_by("-last_activity_at", "-pk")[:RECENT_SESSIONS_SHOWN]
    )
    return [
        ThreadLine(
            channel_id=session.channel_id,
            thread_ts=session.thread_ts,
            url=thread_url(session.connection.team_id, session.channel_id, session.thread_ts),
            open=session.expires_at > now,
            last_activity_at=session.last_activity_at,
        )
        for session in sessions
    ]


def open_alert_threads(
    connection_id: int, channel_ids: set[str], *, now: datetime | None = None
) -> list[ThreadLine]:
    """Alert threads not expired in ``channel_ids``, the latest activity first."""
    now = now or timezone.now()
    sessions = (
        Session.objects.filter(
            connection_id=connection_id,
            channel_id__in=channel_ids,
            kind=ThreadKind.ALERT,
            expires_at__gt=now,
        )
        .select_related("connection")
        .order_by("-last_activity_at", "-pk")[:LISTED_AT_MOST]
    )
    return [
        ThreadLine(
            s.channel_id,
            s.thread_ts,
            thread_url(s.connection.team_id, s.channel_id, s.thread_ts),
            True,
            s.last_activity_at,
        )
        for s in sessions
    ]


def _open_approvals(connection_id: int, now: datetime) -> list[WaitingApproval]:
    interactions = (
        Interaction.objects.filter(
            session__connection_id=connection_id,
            kind=Interaction.Kind.APPROVAL,
            state=Interaction.State.OPEN,
            deadline__gt=now,
        )
        .exclude(prompt_ts="")
        .select_related("session__connection")
        .order_by("deadline", "pk")
    )
    return [
        WaitingApproval(
            interaction_id=interaction.pk,
            channel_id=interaction.channel_id,
            thread_ts=interaction.session.thread_ts,
            prompt_ts=interaction.prompt_ts,
            url=thread_url(
                interaction.session.connection.team_id, interaction.channel_id, interaction.session.thread_ts
            ),
            tools=tuple(tool.name for tool in approvals.request_of(interaction).tools),
            deadline=interaction.deadline,
        )
        for interaction in interactions
    ]


async def approvals_waiting_for(slack, connection_id: int, user_id: str) -> list[WaitingApproval]:
    """The open tool approvals ``user_id`` may decide, the nearest deadline first."""
    found = await in_database_thread(_open_approvals)(connection_id, timezone.now())
    waiting: list[WaitingApproval] = []
    groups_read: dict[str, frozenset[str]] = {}
    for approval in found:
        if len(waiting) >= LISTED_AT_MOST:
            break
        if await standing_of(slack, approval.channel_id, user_id) is not Standing.MEMBER:
            continue
        policy = await in_database_thread(policy_of)(approval.interaction_id, Interaction.Kind.APPROVAL)
        if policy is None:
            continue
        try:
            for check in policy.checks:
                for group_id in check.groups:
                    if group_id not in groups_read:
                        groups_read[group_id] = await usergroup_members(slack, group_id)
            if all(any(user_id in groups_read[group] for group in check.groups) for check in policy.checks):
                waiting.append(approval)
        except SlackError as exc:
            logger.warning(
                "surface.approver_group_unreadable",
                extra={"interaction_id": approval.interaction_id, "error": error_name(exc)},
            )
    return waiting


# The slash command's private answers (fixed wordings).
STATUS_NOTHING = "You have no open conversations with me, and no approvals are waiting for your decision."
STATUS_SESSIONS = "*Your open conversations*"
STATUS_APPROVALS = "*Approvals waiting for your decision*"


def _link(line_url: str, channel_id: str, label: str) -> str:
    return (
        f"<{line_url}|{label}> in <#{channel_id}>"
        if line_url.startswith("http")
        else f"{label} in <#{channel_id}>"
    )


def status_text(sessions: list[ThreadLine], waiting: list[WaitingApproval]) -> str:
    """``/kourier status``: the person's open sessions and the approvals waiting for them. Pure."""
    open_sessions = [session for session in sessions if session.open]
    if not open_sessions and not waiting:
        return STATUS_NOTHING
    parts: list[str] = []
    if open_sessions:
        parts.append(STATUS_SESSIONS)
        parts += [f"• {_link(s.url, s.channel_id, 'a thread')}" for s in open_sessions]
    if waiting:
        parts.append(STATUS_APPROVALS)
        parts += [
            f"• {', '.join(a.tools) or 'a tool'}: {_link(a.url, a.channel_id, 'the prompt')}"
            f" (until <!date^{int(a.deadline.timestamp())}^{{date_short_pretty}} {{time}}|{a.deadline:%Y-%m-%d %H:%M} UTC>)"
            for a in waiting
        ]
    return "\n".join(parts)


def help_text(binding: Binding, command: str) -> str:
    """``/kourier help`` in a bound channel: what its Binding allows here. Pure."""
    replies = (
        "every reply in the thread reaches the agent"
        if binding.thread_replies == "all"
        else "replies in the thread reach the agent when they mention me"
    )
    lines = [
        f"Here I pass questions to the agent of *{binding.name}*.",
        f"• `{command} <question>` starts a thread, as mentioning me does; {replies}.",
        "• On any message here, the message menu's *Ask Agent Kourier about this message* starts a thread on it.",
        f"• `{command} status` shows your open conversations and the approvals waiting for you.",
        f"• A thread stays open for {_days(binding.thread_ttl.total_seconds())} after its last message.",
    ]
    if binding.ask_user:
        lines.append("• The agent may ask questions; any member of the channel may answer.")
    if binding.tool_approvals:
        groups = " ".join(f"<!subteam^{group}>" for group in binding.approver_groups or [])
        who = f"members of {groups}" if groups else "any member of the channel"
        four_eyes = ", not the person who asked" if binding.separate_approver else ""
        lines.append(f"• The agent asks before it uses some tools; {who} may decide{four_eyes}.")
    return "\n".join(lines)


def _days(seconds: float) -> str:
    if seconds >= 86400 and seconds % 86400 == 0:
        days = int(seconds // 86400)
        return f"{days} day{'s' if days != 1 else ''}"
    hours = max(1, round(seconds / 3600))
    return f"{hours} hour{'s' if hours != 1 else ''}"
