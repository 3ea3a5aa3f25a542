"""A turn's intended Slack posts (design invariant 3): recorded before they are sent, confirmed after.

The writer (kourier.slack.writer) decides what to do with what is recorded; this module only keeps
the record. ``TurnOutbox`` is the writer's ``Outbox`` for one turn.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from kourier.db import in_database_thread
from kourier.slack.writer import Intent, IntentState, PostKind

from .models import PostIntent


@transaction.atomic
def intend_post(turn_id: int, key: str, kind: str) -> Intent:
    """Records the post as intended, unless it is recorded already; says which it was."""
    try:
        with transaction.atomic():
            PostIntent.objects.create(key=key, turn_id=turn_id, kind=kind)
        return Intent(IntentState.NEW)
    except IntegrityError:
        pass
    earlier = PostIntent.objects.get(key=key)
    if earlier.state == PostIntent.State.CONFIRMED:
        return Intent(IntentState.CONFIRMED, ts=earlier.ts)
    return Intent(IntentState.PENDING, since=earlier.created_at.timestamp())


@transaction.atomic
def confirm_post(key: str, ts: str) -> None:
    PostIntent.objects.filter(key=key).update(
        state=PostIntent.State.CONFIRMED, ts=ts, confirmed_at=timezone.now()
    )


class TurnOutbox:
    """The record of one turn's posts, for async callers."""

    def __init__(self, turn_id: int) -> None:
        self.turn_id = turn_id

    async def intend(self, key: str, kind: PostKind) -> Intent:
        return await in_database_thread(intend_post)(self.turn_id, key, kind.value)

    async def confirm(self, key: str, ts: str) -> None:
        await in_database_thread(confirm_post)(key, ts)
