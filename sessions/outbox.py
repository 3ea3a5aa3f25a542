"""The product's intended Slack posts (design invariant 3): recorded before they are sent, confirmed
after, as ``PostIntent`` rows.

The Slack adapter (kourier.slack.outbox, writer) decides what to do with what is recorded; this module
only keeps the record. ``TurnOutbox`` is the ``Outbox`` of one turn's posts (its reply, its notices,
its prompts); ``ThreadOutbox`` of an alert thread's, which no turn makes (its root message, its
notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from kourier.db import in_database_thread, insert_unless_taken
from kourier.slack.outbox import Intent, IntentState, PostKind

from .models import PostIntent, Turn


def intend_post(
    turn_id: int | None, key: str, kind: str, notice_text: str = "", *, session_id: int | None = None
) -> Intent:
    """Records the post as intended, unless it is recorded already; says which it was. One statement
    for a new post (an insert that yields to the key's row), not a transaction and a savepoint.
    A post no turn makes belongs to the thread's session (``session_id``), when it has one."""
    intent = PostIntent(key=key, turn_id=turn_id, session_id=session_id, kind=kind, text=notice_text)
    if insert_unless_taken(intent, ("key",)):
        return Intent(IntentState.NEW)
    earlier = PostIntent.objects.get(key=key)
    if earlier.state == PostIntent.State.CONFIRMED:
        return Intent(IntentState.CONFIRMED, ts=earlier.ts)
    return Intent(IntentState.PENDING, since=earlier.created_at.timestamp())


@transaction.atomic
def confirm_post(key: str, ts: str, *, reply_of: int | None = None) -> None:
    """Confirms the post; with ``reply_of``, the post is that turn's reply, whose ts the turn keeps
    (in the same hand-over: one fewer per turn)."""
    PostIntent.objects.filter(key=key).update(
        state=PostIntent.State.CONFIRMED, ts=ts, confirmed_at=timezone.now()
    )
    if reply_of is not None:
        Turn.objects.filter(pk=reply_of, reply_ts="").update(reply_ts=ts)


class TurnOutbox:
    """The record of one turn's posts, for async callers. ``reply_key``: the key of the turn's reply,
    whose ts the turn keeps once it is confirmed (``Turn.reply_ts``)."""

    def __init__(self, turn_id: int, *, reply_key: str | None = None) -> None:
        self.turn_id = turn_id
        self.reply_key = reply_key

    async def intend(self, key: str, kind: PostKind, notice_text: str = "") -> Intent:
        return await in_database_thread(intend_post)(self.turn_id, key, kind.value, notice_text)

    async def confirm(self, key: str, ts: str) -> None:
        reply_of = self.turn_id if key == self.reply_key else None
        await in_database_thread(confirm_post)(key, ts, reply_of=reply_of)


class ThreadOutbox:
    """The record of the posts the product makes in an alert thread outside any turn: its root message
    (before the thread has a session, so ``session_id`` None; the session takes it over when it
    starts: ``sessions.services.start_alert_thread``) and its notes. For a sync caller (a Celery task,
    through ``async_to_sync``): the record is written on the caller's thread and connection."""

    def __init__(self, session_id: int | None) -> None:
        self.session_id = session_id

    async def intend(self, key: str, kind: PostKind, notice_text: str = "") -> Intent:
        record = sync_to_async(intend_post)
        return await record(None, key, kind.value, notice_text, session_id=self.session_id)

    async def confirm(self, key: str, ts: str) -> None:
        await sync_to_async(confirm_post)(key, ts)


@dataclass(frozen=True)
class OwedNotice:
    turn_id: int
    key: str
    text: str
    connection_id: int
    bot_token: str
    channel_id: str
    thread_ts: str


# How far back the sweep looks, and how many it posts a run.
OWED_NOTICE_HORIZON = timedelta(days=1)
OWED_NOTICE_BATCH = 50


def _owed(*, intended_before: datetime, intended_after: datetime) -> QuerySet[PostIntent]:
    return (
        PostIntent.objects.filter(
            kind=PostKind.NOTICE,
            state=PostIntent.State.INTENDED,
            created_at__lt=intended_before,
            created_at__gte=intended_after,
        )
        .exclude(text="")
        .filter(turn__isnull=False)  # a notice is a turn's (a post no turn makes is an alert's note)
        .exclude(turn__state__in=[Turn.State.QUEUED, Turn.State.RUNNING])
    )


def owed_notices(*, intended_before: datetime) -> list[OwedNotice]:
    """Notices of ended turns that were intended and never confirmed: Slack refused them past the
    client's retries, or the runner died around the post. Oldest first."""
    intents = (
        _owed(intended_before=intended_before, intended_after=intended_before - OWED_NOTICE_HORIZON)
        .select_related("turn__session", "turn__connection")
        .order_by("created_at")[:OWED_NOTICE_BATCH]
    )
    owed = []
    for intent in intents:
        turn = intent.turn
        assert turn is not None  # _owed reads a turn's notices only
        owed.append(
            OwedNotice(
                turn_id=turn.pk,
                key=intent.key,
                text=intent.text,
                connection_id=turn.connection_id,
                bot_token=turn.connection.bot_token(),
                channel_id=turn.channel_id,
                thread_ts=turn.session.thread_ts,
            )
        )
    return owed


def count_owed_notices(*, now: datetime | None = None) -> int:
    """How many notices of ended turns are intended within the sweep's horizon and not confirmed: what
    post-owed-notices still has to post (one being posted at this moment counts until Slack answers)."""
    now = now or timezone.now()
    return _owed(intended_before=now, intended_after=now - OWED_NOTICE_HORIZON).count()
