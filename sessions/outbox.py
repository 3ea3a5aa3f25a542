"""A turn's intended Slack posts (design invariant 3): recorded before they are sent, confirmed after.

The writer (kourier.slack.writer) decides what to do with what is recorded; this module only keeps
the record. ``TurnOutbox`` is the writer's ``Outbox`` for one turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from kourier.db import in_database_thread, insert_unless_taken
from kourier.slack.outbox import Intent, IntentState, PostKind

from .models import PostIntent, Turn


def intend_post(turn_id: int, key: str, kind: str, notice_text: str = "") -> Intent:
    """Records the post as intended, unless it is recorded already; says which it was. One statement
    for a new post (an insert that yields to the key's row), not a transaction and a savepoint."""
    if insert_unless_taken(PostIntent(key=key, turn_id=turn_id, kind=kind, text=notice_text), ("key",)):
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
    return [
        OwedNotice(
            turn_id=intent.turn_id,
            key=intent.key,
            text=intent.text,
            connection_id=intent.turn.connection_id,
            bot_token=intent.turn.connection.bot_token(),
            channel_id=intent.turn.channel_id,
            thread_ts=intent.turn.session.thread_ts,
        )
        for intent in intents
    ]


def count_owed_notices(*, now: datetime | None = None) -> int:
    """How many notices of ended turns are intended within the sweep's horizon and not confirmed: what
    post-owed-notices still has to post (one being posted at this moment counts until Slack answers)."""
    now = now or timezone.now()
    return _owed(intended_before=now, intended_after=now - OWED_NOTICE_HORIZON).count()
