"""The sessions app's sweeps (kourier/sweeps.py): work that a dead runner, a failed Slack call or time
left behind. Beat runs each every ``RECOVERY_INTERVAL_SECONDS`` (deletion hourly); each is safe to run
at any time, twice, and by hand (``manage.py sweep NAME``)."""

from __future__ import annotations

import logging
from datetime import timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.services import record
from kourier import metrics
from kourier.queue import enqueue_after_commit
from kourier.slack.clients import async_web_client, connection_workspace
from kourier.slack.outbox import post_notice
from kourier.sweeps import Swept, sweep

from . import acknowledgments, outbox, pauses
from .models import OPEN_TURN_STATES, Session
from .outbox import TurnOutbox
from .task_names import DRIVE_SESSION

logger = logging.getLogger(__name__)

# Sessions are kept this long after their TTL ran out, so a late reply is told it expired.
DELETE_AFTER_EXPIRY = timedelta(days=90)


def _left_to_its_runner() -> timedelta:
    """How long a runner has to finish what it began before the sweeps take it over."""
    return timedelta(seconds=settings.SESSION_LEASE_SECONDS)


@sweep("recover-sessions")
def recover_sessions() -> Swept:
    """Drives again the sessions that have turns to run but no live runner (a worker died, a Celery
    message was lost)."""
    now = timezone.now()
    stranded = list(
        Session.objects.filter(turns__state__in=OPEN_TURN_STATES)
        .exclude(lease_expires_at__gt=now)
        # Its task waits for people, not a runner; or its turns wait for a kept answer's next try, which
        # the pauses' own sweep (deliver-kept-answers) drives when due.
        .exclude(pk__in=pauses.current().held_sessions())
        .values_list("pk", flat=True)
        .distinct()
    )
    for session_id in stranded:
        enqueue_after_commit(DRIVE_SESSION, session_id)
    metrics.recovered(metrics.Recovery.SESSION, len(stranded))
    return Swept({"sessions driven again": len(stranded)})


@sweep("remove-stale-acknowledgments")
def remove_stale_acknowledgments() -> Swept:
    """Takes off the reactions ended turns left on their messages (a runner died between ending the turn
    and removing it, or Slack failed the removal). A removal Slack fails for a while is tried again on
    the next run."""
    left = acknowledgments.left_on_ended_turns(ended_before=timezone.now() - _left_to_its_runner())

    async def take_off_all() -> int:
        return sum([await acknowledgments.take_off(ack) for ack in left])

    removed = async_to_sync(take_off_all)() if left else 0
    metrics.recovered(metrics.Recovery.REACTION, removed)
    return Swept({"reactions removed": removed, "reactions left for the next run": len(left) - removed})


@sweep("post-owed-notices")
def post_owed_notices() -> Swept:
    """Posts the notices ended turns could not (Slack refused them past the client's retries, or the
    runner died around the post), each found in its thread instead if it was made after all. A notice
    Slack still refuses is tried again on the next run."""
    owed = outbox.owed_notices(intended_before=timezone.now() - _left_to_its_runner())

    async def post_all() -> int:
        posted = 0
        for notice in owed:
            client = async_web_client(notice.bot_token, workspace=connection_workspace(notice.connection_id))
            try:
                await post_notice(
                    client,
                    notice.channel_id,
                    notice.thread_ts,
                    notice.text,
                    key=notice.key,
                    outbox=TurnOutbox(notice.turn_id),
                )
            except Exception as exc:  # a Slack error, a timeout: the next run tries again
                logger.info(
                    "turn.notice_owed", extra={"turn_id": notice.turn_id, "error": type(exc).__name__}
                )
                continue
            logger.info("turn.owed_notice_posted", extra={"turn_id": notice.turn_id})
            posted += 1
        return posted

    posted = async_to_sync(post_all)() if owed else 0
    metrics.recovered(metrics.Recovery.NOTICE, posted)
    return Swept({"notices posted": posted, "notices left for the next run": len(owed) - posted})


@sweep("delete-expired-sessions", every=3600)
def delete_expired_sessions() -> Swept:
    """Deletes the sessions whose TTL ran out ``DELETE_AFTER_EXPIRY`` ago, with everything that belongs
    to them (their turns, notes and posts; an alert thread's alert rows: alerts/models.py); the audit
    keeps how many."""
    cutoff = timezone.now() - DELETE_AFTER_EXPIRY
    deleted = 0
    for session in Session.objects.filter(expires_at__lt=cutoff).only("pk"):
        with transaction.atomic():
            session.delete()
        deleted += 1
    if deleted:
        record("sessions.deleted", details={"count": deleted})
        logger.info("sessions.deleted", extra={"count": deleted})
    return Swept({"sessions deleted": deleted})
