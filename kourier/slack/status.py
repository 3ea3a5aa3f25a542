"""Slack's assistant status under an alert thread's name while its turn runs (docs/slack-platform.md
§2.1)."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

logger = logging.getLogger(__name__)

ASSISTANT_STATUS_WORKING = "is working…"
# Errors that mean this app or workspace cannot set an assistant status at all
# (docs/slack-platform.md §2.1).
STATUS_UNAVAILABLE_ERRORS = frozenset(
    {"missing_scope", "unknown_method", "not_allowed_token_type", "method_deprecated"}
)

# Connections whose app or workspace cannot set an assistant status: none is set for them until the
# process restarts. Keyed by the caller's key for the Connection.
_status_unavailable: set[str] = set()


class AssistantStatus:
    """``is working…`` under an alert thread's name while its turn runs (assistant.threads.setStatus).

    Never fails the reply: an error that says the method cannot be used turns it off for the
    Connection (logged once, at info); any other error turns it off for this turn.
    """

    def __init__(self, client: AsyncWebClient, channel_id: str, thread_ts: str, connection_key: str) -> None:
        self._client = client
        self._channel_id = channel_id
        self._thread_ts = thread_ts
        self._connection_key = connection_key
        self._off = False
        self._set = False  # a status was set in this turn

    @property
    def available(self) -> bool:
        return not self._off and self._connection_key not in _status_unavailable

    async def working(self) -> None:
        if await self._send(ASSISTANT_STATUS_WORKING):
            self._set = True

    async def clear(self) -> None:
        if self._set and await self._send(""):
            self._set = False

    async def _send(self, status: str) -> bool:
        if not self.available:
            return False
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=self._channel_id, thread_ts=self._thread_ts, status=status
            )
            return True
        except SlackApiError as exc:
            error = exc.response.get("error", "")
            if error in STATUS_UNAVAILABLE_ERRORS:
                if self._connection_key not in _status_unavailable:
                    _status_unavailable.add(self._connection_key)
                    logger.info(
                        "slack.assistant_status_unavailable",
                        extra={"error": error, "connection": self._connection_key},
                    )
            else:
                self._off = True
                logger.info(
                    "slack.assistant_status_failed", extra={"error": error, "channel": self._channel_id}
                )
        except Exception as exc:  # a timeout or a dropped connection: the reply goes on without it
            self._off = True
            logger.info(
                "slack.assistant_status_failed",
                extra={"error": type(exc).__name__, "channel": self._channel_id},
            )
        return False


def reset_status_availability() -> None:
    """Forgets which Connections cannot set a status (for tests; a restart does the same)."""
    _status_unavailable.clear()
