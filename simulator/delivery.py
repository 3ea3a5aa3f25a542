"""Sending Events API and interactivity requests to the app over real HTTP, and the record of each.

Slack waits three seconds for a 2xx (docs/slack-platform.md §4.2); a slower answer is a failed delivery,
recorded with ``error="timeout"`` so a test can assert the app acks in time.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import httpx

ACK_TIMEOUT = 3.0


@dataclass(frozen=True)
class Outgoing:
    """One request Slack is about to send to the app."""

    kind: str  # the event type ("message", "app_mention", ...), "block_actions", "url_verification" or "raw"
    url: str
    body: bytes
    headers: dict[str, str]
    event_id: str | None = None
    retry_num: int = 0
    team_id: str | None = None


@dataclass(frozen=True)
class Delivery:
    """A request the fake sent to the app, and how the app answered."""

    kind: str
    url: str
    body: bytes
    headers: dict[str, str]
    status: int | None  # None when no answer came in time
    response_body: bytes
    elapsed: float
    error: str | None = None  # "timeout" or "connection_failed"
    event_id: str | None = None
    retry_num: int = 0
    team_id: str | None = None
    envelope_id: str | None = None  # over Socket Mode: its envelope (status 200 stands for an ack in time)

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def acked_in_time(self) -> bool:
        return self.ok and self.elapsed <= ACK_TIMEOUT

    @property
    def payload(self) -> dict[str, Any] | None:
        """What was sent, decoded: the JSON envelope, or a form body's ``payload`` field."""
        if self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            fields = parse_qs(self.body.decode())
            return json.loads(fields["payload"][0]) if "payload" in fields else None
        try:
            decoded = json.loads(self.body)
        except ValueError:
            return None
        return decoded if isinstance(decoded, dict) else None

    @property
    def event(self) -> dict[str, Any] | None:
        payload = self.payload
        return payload.get("event") if payload else None

    @property
    def message_ts(self) -> str | None:
        """The ts of the message this delivery is about."""
        event = self.event
        if event is not None:
            if event.get("subtype") == "message_changed":
                return event["message"]["ts"]
            if event.get("subtype") == "message_deleted":
                return event["deleted_ts"]
            if event.get("type") == "reaction_added":
                return event["item"]["ts"]
            return event.get("ts")
        payload = self.payload
        if payload and isinstance(payload.get("container"), dict):
            return payload["container"].get("message_ts")
        return None

    def response_json(self) -> Any:
        return json.loads(self.response_body)


class Deliverer:
    def __init__(self, on_delivered: Callable[[Delivery], None], ack_timeout: float = ACK_TIMEOUT) -> None:
        self.ack_timeout = ack_timeout
        self._on_delivered = on_delivered
        # Background deliveries go out one at a time, in the order they happened.
        self._in_order = ThreadPoolExecutor(max_workers=1, thread_name_prefix="slack-fake-delivery")
        self._parallel = ThreadPoolExecutor(max_workers=4, thread_name_prefix="slack-fake-parallel-delivery")
        self._pending: set[Future[Delivery]] = set()
        self._lock = threading.Lock()

    def send(self, outgoing: Outgoing) -> Delivery:
        started = time.monotonic()
        status: int | None = None
        response_body = b""
        error: str | None = None
        try:
            with httpx.Client(timeout=self.ack_timeout) as client:
                response = client.post(outgoing.url, content=outgoing.body, headers=outgoing.headers)
            status, response_body = response.status_code, response.content
        except httpx.TimeoutException:
            error = "timeout"
        except httpx.TransportError:
            error = "connection_failed"
        delivery = Delivery(
            kind=outgoing.kind,
            url=outgoing.url,
            body=outgoing.body,
            headers=dict(outgoing.headers),
            status=status,
            response_body=response_body,
            elapsed=time.monotonic() - started,
            error=error,
            event_id=outgoing.event_id,
            retry_num=outgoing.retry_num,
            team_id=outgoing.team_id,
        )
        self._on_delivered(delivery)
        return delivery

    def send_in_background(self, outgoing: Outgoing) -> Future[Delivery]:
        future = self._in_order.submit(self.send, outgoing)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._forget)
        return future

    def send_together(self, outgoings: list[Outgoing]) -> list[Delivery]:
        """Send all at the same moment from separate threads, as Slack's parallel deliveries arrive."""
        barrier = threading.Barrier(len(outgoings))

        def send_when_all_ready(outgoing: Outgoing) -> Delivery:
            barrier.wait()
            return self.send(outgoing)

        futures = [self._parallel.submit(send_when_all_ready, outgoing) for outgoing in outgoings]
        return [future.result() for future in futures]

    def wait_idle(self, timeout: float) -> bool:
        """Wait until background deliveries are done; False if some are still running at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = list(self._pending)
            if not pending:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            # A failed delivery is recorded elsewhere; waiting only cares that it is over.
            with contextlib.suppress(Exception):
                pending[0].result(timeout=remaining)

    def close(self) -> None:
        self._in_order.shutdown(wait=True, cancel_futures=True)
        self._parallel.shutdown(wait=True, cancel_futures=True)

    def _forget(self, future: Future[Delivery]) -> None:
        with self._lock:
            self._pending.discard(future)
