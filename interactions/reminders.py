"""A reminder before an approval's deadline (``interactions.remindBefore``, issue 21 point 4): beyond
the spec, opt-in per Binding; a Binding without it is never reminded.

That long before the deadline the thread gets one fixed reminder that names the Binding's approver
groups (user-group mentions) or, without groups, the person who started the turn. Once: the
Interaction's ``reminded_at`` is claimed by a conditional update while it is open and before its
deadline, so sweeps run twice or at once remind once, and never once it is decided or past its
deadline. The post goes through the turn's outbox under its own key, so a post retried after Slack
failed is found rather than repeated; it is never left to the owed-notices sweep, which could post
it after the decision. A worker that dies between the claim and the post leaves that reminder
unsent: once at most, never late.
"""

from __future__ import annotations

import logging
from datetime import datetime

from asgiref.sync import async_to_sync
from django.utils import timezone

from kourier.slack.clients import SlackError, async_web_client, connection_workspace, error_name
from kourier.slack.outbox import Intent, PostKind, notice_key, post_notice
from sessions.identity import is_person
from sessions.outbox import TurnOutbox

from .models import Interaction

logger = logging.getLogger(__name__)

# The fixed reminder (docs/manifests.md, "A reminder before the deadline"): who is asked, then the
# deadline as Slack shows it in each reader's time zone.
REMINDER = (
    "{who}the agent's tool request in this thread still waits for a decision. "
    "If nobody decides by {deadline}, every tool is denied."
)


def reminder_text(approver_groups: tuple[str, ...] | list[str], starter: str, deadline: datetime) -> str:
    """The reminder for these approver groups (mentioned) or, without groups, the person who started
    the turn; nobody is named when the turn had no person (an alert). Pure."""
    if approver_groups:
        who = " ".join(f"<!subteam^{group}>" for group in approver_groups) + " "
    elif is_person(starter):
        who = f"<@{starter}> "
    else:
        who = ""
    epoch = int(deadline.timestamp())
    when = f"<!date^{epoch}^{{time}}|{deadline:%H:%M} UTC>"
    text = REMINDER.format(who=who, deadline=when)
    return text if who else text[0].upper() + text[1:]


def due(*, now: datetime | None = None) -> list[int]:
    """Open, posted approvals of Bindings with remindBefore, not reminded, within their reminder's time."""
    now = now or timezone.now()
    candidates = Interaction.objects.filter(
        kind=Interaction.Kind.APPROVAL,
        state=Interaction.State.OPEN,
        reminded_at=None,
        deadline__gt=now,
        session__binding__remind_before__isnull=False,
    ).exclude(prompt_ts="")
    return [
        pk
        for pk, deadline, remind_before in candidates.values_list(
            "pk", "deadline", "session__binding__remind_before"
        ).order_by("deadline")
        if remind_before is not None and deadline - remind_before <= now
    ]


def claim(interaction_id: int, *, now: datetime | None = None) -> bool:
    """Takes the Interaction's one reminder while it is open and before its deadline."""
    now = now or timezone.now()
    return (
        Interaction.objects.filter(
            pk=interaction_id, state=Interaction.State.OPEN, reminded_at=None, deadline__gt=now
        ).update(reminded_at=now)
        == 1
    )


def release(interaction_id: int, claimed_at: datetime) -> None:
    """Slack refused the post: the next sweep tries again, if the Interaction is still open by then."""
    Interaction.objects.filter(
        pk=interaction_id, state=Interaction.State.OPEN, reminded_at=claimed_at
    ).update(reminded_at=None)


class _ReminderOutbox(TurnOutbox):
    """The turn's outbox, keeping no text with the intent: a reminder is owed only while its approval
    is open, so the owed-notices sweep (which posts a kept text later) must not post it."""

    async def intend(self, key: str, kind: PostKind, notice_text: str = "") -> Intent:
        return await super().intend(key, kind, "")


def remind(interaction_id: int, *, now: datetime | None = None) -> bool:
    """Posts the Interaction's reminder if this call claims it; True when it was posted."""
    now = now or timezone.now()
    if not claim(interaction_id, now=now):
        return False
    interaction = Interaction.objects.select_related("turn", "session__binding", "session__connection").get(
        pk=interaction_id
    )
    binding = interaction.session.binding
    connection = interaction.session.connection
    text = reminder_text(
        binding.approver_groups if binding else (), interaction.turn.user_id, interaction.deadline
    )
    client = async_web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    try:
        async_to_sync(post_notice)(
            client,
            interaction.channel_id,
            interaction.session.thread_ts,
            text,
            key=notice_key(interaction.turn.message_id, "reminder"),
            outbox=_ReminderOutbox(interaction.turn_id),
        )
    except SlackError as exc:
        release(interaction_id, now)
        logger.warning(
            "interaction.reminder_deferred",
            extra={"interaction_id": interaction_id, "error": error_name(exc)},
        )
        return False
    logger.info("interaction.reminded", extra={"interaction_id": interaction_id})
    return True
