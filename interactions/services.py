"""The one take-and-queue path of every kind of pause (kinds.py): a press or a typed reply is read
against the pause, the first complete one wins by a conditional update, is audited, and becomes a
turn of the session (``Turn.Kind.ANSWER`` or ``TYPED_ANSWER``) queued ahead of the replies that
wait; it then goes through the same lease, outbox, reply and recovery as any turn. And the prompt's
life around it: recorded once posted, given up when it cannot be, rewritten once its pause ended.

What differs by kind is in questions.py and approvals.py (opening one, timing it out); every kind
by its name is in registry.py.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.services import DJANGO_USER, record
from kourier import metrics, tracing
from kourier.queue import enqueue_after_commit
from kourier.slack.clients import connection_workspace, web_client
from sessions import activity
from sessions.identity import filed_under
from sessions.models import Turn
from sessions.task_names import DRIVE_SESSION
from sessions.turns import message_id_for

from . import closings, home_refresh
from .kinds import PauseKind, Reading, Refusal, Refused, Taken, Unfit
from .models import Interaction, KeptPress

logger = logging.getLogger(__name__)


def subject(interaction_id: int) -> str:
    """How the audit names an Interaction."""
    return f"interaction {interaction_id}"


def requester_of(turn: Turn) -> str:
    """Whose message started the task that paused at ``turn``: the person's Slack ID, or the system
    identity (an alert thread's own turn). An answer or decision turn carries on the task an earlier
    turn started, so the requester is that turn's, however many pauses lie between."""
    while turn.kind != Turn.Kind.MESSAGE:
        answered = Interaction.objects.filter(answer_turn=turn).select_related("turn").first()
        if answered is None:
            break
        if answered.requested_by:
            return answered.requested_by
        turn = answered.turn
    return filed_under(turn.user_id)


def requester(interaction: Interaction) -> str:
    """An Interaction's requester (one opened before it was kept: found again from its turn)."""
    return interaction.requested_by or requester_of(interaction.turn)


def open_interaction(
    turn_id: int,
    kind: Interaction.Kind,
    pause: dict[str, Any],
    *,
    typed_replies: bool = False,
    now: datetime | None = None,
) -> Interaction:
    """Opens the Interaction of a turn whose task paused for people; the same one when called again
    (a turn pauses once: its Interaction is unique)."""
    now = now or timezone.now()
    turn = Turn.objects.select_related("session__binding").get(pk=turn_id)
    binding = turn.session.binding
    assert binding is not None, "a turn that runs has its Binding"
    interaction, _ = Interaction.objects.get_or_create(
        turn=turn,
        defaults={
            "session": turn.session,
            "kind": kind,
            "pause": pause,
            "typed_replies": typed_replies,
            "deadline": now + binding.interaction_timeout,
            "channel_id": turn.channel_id,
            "requested_by": requester_of(turn),
        },
    )
    return interaction


def take_allowed_press(
    kind: PauseKind,
    interaction_id: int,
    *,
    channel_id: str,
    prompt_ts: str,
    user_id: str,
    action_id: str,
    values: dict[str, Any],
    kept_press_id: int | None = None,
    reason: str = "",
    now: datetime | None = None,
) -> Taken | Refused:
    """Takes an allowed press on a prompt of ``kind``: the first complete one wins (a conditional
    update). A kept press (kept_presses.py) is forgotten with it, so no later try is told it lost."""
    interaction = Interaction.objects.select_related("session__binding").filter(pk=interaction_id).first()
    if interaction is None or interaction.kind != kind.kind:
        return kind.refused(Refusal.UNKNOWN)
    prompts = {(interaction.channel_id, interaction.prompt_ts)}
    if interaction.copy_ts:  # a direct message's approval, also put to the approvals channel
        prompts.add((interaction.copy_channel_id, interaction.copy_ts))
    if (channel_id, prompt_ts) not in prompts:
        return kind.refused(Refusal.UNKNOWN)
    if interaction.state == Interaction.State.ANSWERED:
        return kind.refused(Refusal.TAKEN)
    if interaction.state != Interaction.State.OPEN:
        return kind.refused(Refusal.CLOSED)
    reading = kind.read(interaction, action_id, values)
    if isinstance(reading, Unfit):
        if reading.reason:
            logger.info(
                "interaction.press_unfit",
                extra={"interaction_id": interaction_id, "kind": kind.kind.value, "reason": reading.reason},
            )
        return kind.refused(reading.refusal, reading.message)
    if kind.vet is not None and (refused := kind.vet(interaction, reading, user_id)) is not None:
        return refused
    return take(
        kind,
        interaction,
        reading,
        user_id,
        turn_key=kind.answer_turn_key(interaction.pk),
        kept_press_id=kept_press_id,
        reason=reason if not all(reading.answers) else "",
        now=now,
    )


def take(
    kind: PauseKind,
    interaction: Interaction,
    reading: Reading,
    user_id: str,
    *,
    turn_key: str,
    turn_kind: Turn.Kind = Turn.Kind.ANSWER,
    text: str = "",
    kept_press_id: int | None = None,
    reason: str = "",
    decided_in: str = "",
    audit_details: Mapping[str, Any] | None = None,
    by_policy: bool = False,
    now: datetime | None = None,
) -> Taken | Refused:
    """The Interaction answered by ``user_id`` (or, ``by_policy``, by the Binding's rules) if it is
    still open, audited, and its answer turn queued: one transaction. ``decided_in`` names where a
    decision was made outside Slack (outside.py); then ``user_id`` is a Django username, and the audit
    says so, with ``audit_details`` (who ran the command, the rules the permission stood in for)."""
    now = now or timezone.now()
    session = interaction.session
    with transaction.atomic():
        won = (
            Interaction.objects.filter(pk=interaction.pk, state=Interaction.State.OPEN).update(
                state=Interaction.State.ANSWERED,
                answered_by=user_id,
                answered_at=now,
                deny_reason=reason,
                decided_in=decided_in,
            )
            == 1
        )
        if not won:
            return kind.refused(Refusal.TAKEN)
        if session.binding is not None:  # an answer or a decision is the thread's activity, as a message is
            activity.touch(session, session.binding.thread_ttl, now)
        # Audited first: the answer reaches the agent only by the turn this transaction queues.
        event = record(
            kind.taken,
            binding_name=session.binding.name if session.binding else "",
            actor_id=user_id,
            actor_kind=DJANGO_USER if decided_in else None,
            subject=subject(interaction.pk),
            details={
                **reading.audit,
                **({"reason": reason} if reason else {}),
                **({"decided_in": decided_in} if decided_in else {}),
                **(audit_details or {}),
            },
            requester=requester(interaction),
            policy=kind.policy(interaction) if kind.policy is not None else "",
            by_policy=by_policy,
        )
        if kind.recorded is not None:
            kind.recorded(interaction, reading, user_id, event.pk)
        # A Django user is nobody in the channel: the turn carries no Slack user of theirs.
        turn = queue_answer_turn(
            interaction, reading.answers, "" if decided_in else user_id, turn_key, kind=turn_kind, text=text
        )
        if kind.taken_in_transaction is not None:
            kind.taken_in_transaction(interaction.pk, now)
        if kept_press_id is not None:
            KeptPress.objects.filter(pk=kept_press_id).delete()
        closings.intend(interaction.pk, now=now)  # the prompt's rewrite, kept as a row until made
    logger.info(kind.taken, extra={"interaction_id": interaction.pk, "turn_id": turn.pk})
    metrics.interactions_decided(kind.kind.value)
    return Taken(interaction.pk, turn.pk)


def queue_answer_turn(
    interaction: Interaction,
    answers: list[Any],
    user_id: str,
    key: str,
    *,
    kind: Turn.Kind = Turn.Kind.ANSWER,
    text: str = "",
) -> Turn:
    """The Interaction's answer turn (once), queued ahead of the replies that wait."""
    session = interaction.session
    turn, _ = Turn.objects.get_or_create(
        message_id=message_id_for(session.connection_id, session.channel_id, key),
        defaults={
            "session": session,
            "connection_id": session.connection_id,
            "channel_id": session.channel_id,
            "message_ts": key,
            "kind": kind,
            "user_id": user_id,
            "text": text,
            "answers": answers,
            "state": Turn.State.QUEUED,
            "traceparent": tracing.current_traceparent(),  # the press's (or reply's) trace
        },
    )
    Interaction.objects.filter(pk=interaction.pk).update(answer_turn=turn)
    enqueue_after_commit(DRIVE_SESSION, session.pk)
    return turn


def record_prompt(interaction_id: int, prompt_ts: str) -> None:
    if Interaction.objects.filter(pk=interaction_id, prompt_ts="").update(prompt_ts=prompt_ts):
        home_refresh.approvals_changed(interaction_id)  # the approvers' Home tabs list it


def record_copy(interaction_id: int, channel_id: str, ts: str) -> None:
    Interaction.objects.filter(pk=interaction_id, copy_ts="").update(copy_channel_id=channel_id, copy_ts=ts)


def copy_channel_of(interaction_id: int) -> tuple[str, str] | None:
    """Where an approval of a direct message is also put, and whose conversation it is: the Binding's
    approvalsChannel, when it has approver groups (who may not be in the conversation); else None."""
    interaction = Interaction.objects.select_related("session__binding", "turn").get(pk=interaction_id)
    binding = interaction.session.binding
    if binding is None or not binding.approver_groups or interaction.copy_ts:
        return None
    spec = binding.direct_messages_spec()
    if spec is None or spec.approvals_channel is None:
        return None
    return spec.approvals_channel, interaction.turn.user_id


REFUSED = "interaction.refused"  # the audit's action and the log's event


def refuse(interaction_id: int, reason: str) -> bool:
    """Closes a pause that cannot be put to people (its prompt unshowable, or refused by Slack for
    good), audited, before its task is cancelled: a restart then retries only the cancellation
    (cancellations.py). ``reason`` is a fixed token. True when this call closed it."""
    with transaction.atomic():
        closed = (
            Interaction.objects.filter(pk=interaction_id, state=Interaction.State.OPEN).update(
                state=Interaction.State.CANCELLED, closed_at=timezone.now()
            )
            == 1
        )
        if closed:
            interaction = Interaction.objects.select_related("session__binding").get(pk=interaction_id)
            binding = interaction.session.binding
            if interaction.kind == Interaction.Kind.APPROVAL:
                size = {"tools": len(interaction.pause.get("tools", []))}
            else:
                size = {"questions": len(interaction.pause.get("questions", []))}
            record(
                REFUSED,
                binding_name=binding.name if binding else "",
                subject=subject(interaction_id),
                details={"reason": reason, **size},
            )
    logger.info(REFUSED, extra={"interaction_id": interaction_id, "reason": reason})
    return closed


# An Interaction this young may still be having its prompt posted by the turn that opened it.
UNPOSTED_GRACE = timedelta(seconds=5)


def unposted_prompts(*, now: datetime | None = None) -> list[Interaction]:
    """Open pauses of either kind whose prompt a transient Slack failure kept from being posted: the
    sweep posts them (asking.post_prompt)."""
    now = now or timezone.now()
    return list(
        Interaction.objects.filter(
            state=Interaction.State.OPEN, prompt_ts="", created_at__lte=now - UNPOSTED_GRACE
        )
        .select_related("turn", "session__connection")
        .order_by("pk")
    )


def rewrite_prompt(interaction: Interaction, kind: PauseKind) -> None:
    """The prompt, once its Interaction ended: what was asked, and how it ended."""
    if not interaction.prompt_ts:
        return  # never posted
    blocks, text = kind.ended_prompt(interaction)
    connection = interaction.session.connection
    client = web_client(connection.bot_token(), workspace=connection_workspace(connection.pk))
    client.chat_update(channel=interaction.channel_id, ts=interaction.prompt_ts, blocks=blocks, text=text)
    if interaction.copy_ts:  # the decision ends both prompts
        client.chat_update(
            channel=interaction.copy_channel_id, ts=interaction.copy_ts, blocks=blocks, text=text
        )


def mark_closed(interaction_id: int) -> None:
    Interaction.objects.filter(pk=interaction_id).update(closed_at=timezone.now())
