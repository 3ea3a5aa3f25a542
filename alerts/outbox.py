"""An alert's intended posts (``AlertPost``), as the Slack adapter's ``Outbox`` protocol reads them.

The service records each post when the alert arrives; the first worker to send it marks it
attempted, so a later worker knows to look for it in Slack before sending it again.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.utils import timezone

from kourier.slack.outbox import Intent, IntentState, PostKind

from .models import AlertPost


class AlertOutbox:
    def __init__(self, alert_id: int) -> None:
        self.alert_id = alert_id

    async def intend(self, key: str, kind: PostKind, notice_text: str = "") -> Intent:
        return await sync_to_async(self._intend)(key)

    def _intend(self, key: str) -> Intent:
        post = AlertPost.objects.get(alert_id=self.alert_id, key=key)
        if post.state == AlertPost.State.CONFIRMED:
            return Intent(IntentState.CONFIRMED, ts=post.ts)
        if post.attempted_at is None:
            AlertPost.objects.filter(pk=post.pk, attempted_at=None).update(attempted_at=timezone.now())
            return Intent(IntentState.NEW)
        return Intent(IntentState.PENDING, since=post.attempted_at.timestamp())

    async def confirm(self, key: str, ts: str) -> None:
        await sync_to_async(AlertPost.objects.filter(alert_id=self.alert_id, key=key).update)(
            state=AlertPost.State.CONFIRMED, ts=ts
        )
