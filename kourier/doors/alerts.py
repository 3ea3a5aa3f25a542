"""The alerts' door: POST /triggers/<binding>/<trigger>, where alert sources deliver their alerts (a
*trigger* is the manifest's entry for one such door: its kind, token and channel).

A Channels consumer that kourier/http_routes.py serves ahead of Django, as Slack's door is. It answers
405 for another method, 413 for a body over DATA_UPLOAD_MAX_MEMORY_SIZE (read no further), 404 for
a Binding or trigger it does not know, 401 without the trigger's bearer token (compared in constant
time), 503 when the token's variable is not set, 400 with the reason for a body the trigger's kind
does not send (for threads per group: no groupKey, one too long, or an alert outside its group);
none of these stores anything. Otherwise the alerts are taken (``alerts.services.take_alerts``) and
the answer is 200 with what was done, counted by alert.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging

from alerts import payloads
from alerts.services import take_alerts
from bindings import directory
from bindings.manifest import ThreadPer, TriggerKind, TriggerSpec
from bindings.models import Binding, MissingSecret
from kourier import tracing
from kourier.bounded_post import BoundedPost
from kourier.db import in_database_thread

logger = logging.getLogger(__name__)

IDEMPOTENCY_KEY_MAX_LENGTH = 150


def read_delivery(
    trigger: TriggerSpec, body: bytes
) -> tuple[list[payloads.ReceivedAlert], payloads.Notification | None]:
    """The alerts a trigger's body carries, and the Alertmanager notification they came in (None for
    the generic kind). Raises ``payloads.Unreadable`` with the reason."""
    if trigger.kind is TriggerKind.GENERIC:
        return payloads.read_generic(body), None
    notification = payloads.read_notification(body)
    if trigger.thread_per is ThreadPer.GROUP:
        payloads.check_group(notification)
    return notification.alerts, notification


def bearer_token(headers: dict[str, str]) -> str:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def token_matches(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


class AlertDoor(BoundedPost):
    async def too_large(self) -> None:
        await self._refuse(413, "request too large")

    async def handle(self, body: bytes) -> None:
        route = self.scope["url_route"]["kwargs"]
        binding = (await directory.acurrent()).by_binding_name.get(route["binding"])
        trigger = binding.trigger(route["trigger"]) if binding is not None else None
        if binding is None or trigger is None:
            await self._refuse(404, "no such trigger")
            return
        headers = self.request_headers()
        try:
            expected = binding.trigger_token(trigger)
        except MissingSecret as exc:
            logger.error("trigger.misconfigured", extra={"binding": binding.name, "detail": str(exc)})
            await self._refuse(503, "trigger is not configured")
            return
        if not token_matches(bearer_token(headers), expected):
            await self._refuse(401, "invalid token", binding=binding.name)
            return
        idempotency_key = headers.get("idempotency-key", "").strip()
        try:
            if len(idempotency_key) > IDEMPOTENCY_KEY_MAX_LENGTH:
                raise payloads.Unreadable(
                    f"Idempotency-Key must be at most {IDEMPOTENCY_KEY_MAX_LENGTH} characters"
                )
            alerts, notification = read_delivery(trigger, body)
        except payloads.Unreadable as exc:
            await self._refuse(400, str(exc), binding=binding.name)
            return
        # An alert's trace starts here; its delivery task carries it to the turn (kourier/tracing.py).
        with tracing.span("alert.delivery", attributes={"kourier.binding": binding.name}):
            taken = await in_database_thread(_take)(binding, trigger, alerts, notification, idempotency_key)
        if taken is None:
            await self._refuse(503, "the trigger's channel is not bound", binding=binding.name)
            return
        await self.respond_json(200, {"ok": True, **taken})

    async def _refuse(self, status: int, reason: str, *, binding: str | None = None) -> None:
        logger.warning("trigger.refused", extra={"status": status, "binding": binding})
        await self.respond_json(status, {"ok": False, "error": reason})


def _take(
    binding: Binding,
    trigger: TriggerSpec,
    alerts: list[payloads.ReceivedAlert],
    notification: payloads.Notification | None,
    idempotency_key: str,
) -> dict[str, int] | None:
    channel_id = binding.trigger_channel(trigger)
    if channel_id is None:
        return None
    taken = take_alerts(
        binding, trigger, channel_id, alerts, notification=notification, idempotency_key=idempotency_key
    )
    return dataclasses.asdict(taken)
