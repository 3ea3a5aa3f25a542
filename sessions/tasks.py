"""Celery tasks of the sessions app: thin edges that load rows by id and call the runner or a service.

Every task is safe to run twice.
"""

import asyncio
import logging
from datetime import timedelta

from asgiref.sync import async_to_sync, sync_to_async
from celery import shared_task
from celery.signals import worker_shutting_down
from django.utils import timezone

from audit.services import record
from kourier.slack.clients import async_web_client
from kourier.slack.writer import add_reaction, post_notice, remove_reaction

from . import notices, services
from .models import Session, Turn

logger = logging.getLogger(__name__)

# Sessions are kept this long after their TTL ran out, so a late reply is told it expired.
DELETE_AFTER_EXPIRY = timedelta(days=90)


@shared_task(acks_late=True)
def drive_session(session_id: int) -> None:
    """Runs the session's queued turns, one at a time, unless another runner holds its lease."""
    from .runner import run_session

    try:
        asyncio.run(run_session(session_id))
    except asyncio.CancelledError:
        # Handed over by a shutting-down worker with its lease released; beat's recovery sweep gives it
        # to another worker. (Enqueued from here, it could come back to this worker before it exits.)
        logger.info("session.handed_over", extra={"session_id": session_id})


@worker_shutting_down.connect
def _hand_over_sessions(**kwargs) -> None:
    """On SIGTERM, running turns stop where they are instead of holding the shutdown for minutes."""
    from .runner import hand_over_running_sessions

    hand_over_running_sessions()


@shared_task(acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def acknowledge_turn(turn_id: int) -> None:
    if not services.claim_acknowledgment(turn_id):
        return
    turn = Turn.objects.select_related("session__binding", "connection").get(pk=turn_id)
    binding = turn.session.binding
    if binding is None:
        return
    emoji = binding.acknowledgment_emoji
    client = async_web_client(turn.connection.bot_token())

    async def react() -> None:
        await add_reaction(client, turn.channel_id, turn.message_ts, emoji)
        # The turn may have ended while the reaction was on its way; its runner then found nothing to remove.
        if await sync_to_async(services.turn_is_over)(turn_id):
            await remove_reaction(client, turn.channel_id, turn.message_ts, emoji)

    async_to_sync(react)()


@shared_task(acks_late=True, autoretry_for=(Exception,), retry_backoff=True, max_retries=5)
def tell_expired(turn_id: int) -> None:
    turn = Turn.objects.select_related("session", "connection").filter(pk=turn_id, outcome="").first()
    if turn is None:
        return
    client = async_web_client(turn.connection.bot_token())
    async_to_sync(post_notice)(client, turn.channel_id, turn.session.thread_ts, notices.EXPIRED)
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
