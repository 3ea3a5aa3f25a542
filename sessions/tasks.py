"""Celery tasks of the sessions app: thin edges that load rows by id and call the runner or a service.

Every task is safe to run twice.
"""

import logging
from datetime import timedelta

from asgiref.sync import async_to_sync
from celery import shared_task
from celery.signals import worker_shutting_down
from django.conf import settings
from django.utils import timezone
from slack_sdk.errors import SlackApiError

from audit.services import record
from kourier.slack.clients import async_web_client, connection_workspace, error_name, may_pass, web_client
from kourier.slack.outbox import notice_key, post_notice

from . import notices, outbox, services
from .models import Session, Turn
from .outbox import TurnOutbox
from .turn_loop import LoopFull, hand_over_running_sessions, turn_loop

logger = logging.getLogger(__name__)

# Sessions are kept this long after their TTL ran out, so a late reply is told it expired.
DELETE_AFTER_EXPIRY = timedelta(days=90)


# How long a full worker waits before it gives a session back to the queue for any worker.
LOOP_FULL_RETRY_SECONDS = 2


@shared_task(bind=True, acks_late=True, max_retries=None)
def drive_session(self, session_id: int) -> None:
    """Hands the session to this process's turn loop, which runs its queued turns one at a time
    unless another runner holds its lease. Returns at once (see turn_loop.py)."""
    try:
        turn_loop().drive(session_id)
    except LoopFull:
        raise self.retry(countdown=LOOP_FULL_RETRY_SECONDS) from None


@worker_shutting_down.connect
def _hand_over_sessions(**kwargs) -> None:
    """On SIGTERM, running turns stop where they are, leases released, instead of holding the
    shutdown for minutes; beat's recovery sweep gives them to another worker."""
    hand_over_running_sessions()


@shared_task(acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def tell_expired(turn_id: int) -> None:
    turn = Turn.objects.select_related("session", "connection").filter(pk=turn_id, outcome="").first()
    if turn is None:
        return
    client = async_web_client(turn.connection.bot_token(), workspace=connection_workspace(turn.connection_id))
    async_to_sync(post_notice)(
        client,
        turn.channel_id,
        turn.session.thread_ts,
        notices.EXPIRED,
        key=notice_key(turn.message_id, "expired"),
        outbox=TurnOutbox(turn_id),
    )
    Turn.objects.filter(pk=turn_id).update(outcome="expired", ended_at=timezone.now())


@shared_task
def delete_expired_sessions() -> None:
    deleted = services.delete_sessions_expired_before(timezone.now() - DELETE_AFTER_EXPIRY)
    if deleted:
        record("sessions.deleted", details={"count": deleted})
        logger.info("sessions.deleted", extra={"count": deleted})


@shared_task
def recover_sessions() -> None:
    """Re-drives sessions that have turns to run but no live runner (a worker died, a task was lost)."""
    now = timezone.now()
    stranded = (
        Session.objects.filter(turns__state__in=[Turn.State.QUEUED, Turn.State.RUNNING])
        .exclude(lease_expires_at__gt=now)
        .values_list("pk", flat=True)
        .distinct()
    )
    for session_id in stranded:
        drive_session.delay(session_id)
    remove_stale_acknowledgments(now=now)
    post_owed_notices(now=now)


def post_owed_notices(*, now) -> None:
    """Posts the notices ended turns could not (Slack refused them past the client's retries, or the
    runner died around the post), each found in its thread instead if it was made after all. A notice
    Slack still refuses is tried again on the next sweep."""
    intended_before = now - timedelta(seconds=settings.SESSION_LEASE_SECONDS)
    for owed in outbox.owed_notices(intended_before=intended_before):
        client = async_web_client(owed.bot_token, workspace=connection_workspace(owed.connection_id))
        try:
            async_to_sync(post_notice)(
                client,
                owed.channel_id,
                owed.thread_ts,
                owed.text,
                key=owed.key,
                outbox=TurnOutbox(owed.turn_id),
            )
        except Exception as exc:  # a Slack error, a timeout: the next sweep tries again
            logger.info("turn.notice_owed", extra={"turn_id": owed.turn_id, "error": type(exc).__name__})
            continue
        logger.info("turn.owed_notice_posted", extra={"turn_id": owed.turn_id})


def remove_stale_acknowledgments(*, now) -> None:
    """Removes the reactions ended turns left on their messages (a runner died between ending the turn
    and removing it, or Slack failed the removal). A turn is left to its runner for a lease's time;
    a removal Slack fails for a while (5xx, 429, timeout) is tried again on the next sweep, and one it
    refuses for good (the message is gone) leaves nothing to remove."""
    ended_before = now - timedelta(seconds=settings.SESSION_LEASE_SECONDS)
    for ack in services.stale_acknowledgments(ended_before=ended_before):
        client = web_client(ack.bot_token, workspace=connection_workspace(ack.connection_id))
        try:
            client.reactions_remove(channel=ack.channel_id, timestamp=ack.message_ts, name=ack.emoji)
        except Exception as exc:
            if not (isinstance(exc, SlackApiError) and exc.response.get("error") == "no_reaction"):
                logger.info(
                    "turn.acknowledgment_not_removed",
                    extra={"turn_id": ack.turn_id, "error": error_name(exc)},
                )
                if may_pass(exc):
                    continue
        services.acknowledgment_removed(ack.turn_id)
