"""Slack's agent session of a thread (docs/slack-platform.md §2.2), for a Connection that opts in
(``spec.agentSessions``): processing while a turn runs, so Slack shows its own stop control, and
active once the turn ends, stops or waits for a person.

Slack does not move the status when a person presses stop: the turn's end does (or, when nothing
runs in the thread any more, the stop's listener: ``settle``).

Each status waits at most ``SLACK_REACTION_WAIT_SECONDS`` for its slot in the workspace's budget
(Tier 3), as the acknowledgment's reaction does: a burst of turns is not held up for it. A turn whose
*processing* found no slot keeps its Stop button; a session left *processing* because its *active*
found none is moved by the thread's next turn, or by a press of its stop (``settle``).
"""

from __future__ import annotations

import logging

from django.conf import settings
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .clients import patience

logger = logging.getLogger(__name__)

PROCESSING = "processing"
ACTIVE = "active"
# Errors that mean this app or workspace has no agent sessions at all: none is set for the Connection
# until the process restarts, and its turns carry the Stop button instead.
SESSIONS_UNAVAILABLE_ERRORS = frozenset(
    {"feature_disabled", "missing_scope", "unknown_method", "not_allowed_token_type", "method_deprecated"}
)
# Slack's warning when the app does not subscribe to agent_session_stopped: people see a loading
# indicator they cannot press, so the turn keeps its own Stop button.
NO_STOP_SUBSCRIPTION = "missing_agent_session_stopped_event_subscription"

_sessions_unavailable: set[str] = set()
_stop_unsubscribed: set[str] = set()


class AgentSession:
    """The agent session of one turn's thread. Never fails the turn: a refusal is logged (once per
    Connection when it says the feature is missing) and the turn goes on with its Stop button."""

    def __init__(self, client: AsyncWebClient, channel_id: str, thread_ts: str, connection_key: str) -> None:
        self._client = client
        self._channel_id = channel_id
        self._thread_ts = thread_ts
        self._connection_key = connection_key
        self._processing = False
        # Slack shows people its stop control: a press of it comes as agent_session_stopped, naming
        # the person, even when it also stopped the turn's stream.
        self.shows_stop = False

    async def processing(self) -> bool:
        """Marks the session processing; True when Slack now shows people its stop control."""
        if self._connection_key in _sessions_unavailable:
            return False
        warnings = await self._set(PROCESSING)
        if warnings is None:
            return False
        self._processing = True
        if NO_STOP_SUBSCRIPTION in warnings:
            if self._connection_key not in _stop_unsubscribed:
                _stop_unsubscribed.add(self._connection_key)
                logger.warning(
                    "slack.agent_session_stop_unsubscribed", extra={"connection": self._connection_key}
                )
            return False
        self.shows_stop = True
        return True

    async def active(self) -> None:
        """The turn ended, stopped or waits for a person: the session leaves processing."""
        if self._processing and await self._set(ACTIVE) is not None:
            self._processing = False

    async def settle(self) -> None:
        """Moves a session a person asked to stop off processing when no turn runs in its thread."""
        await self._set(ACTIVE)

    async def _set(self, status: str) -> list[str] | None:
        """The call's warnings, or None when it failed."""
        try:
            with patience(settings.SLACK_REACTION_WAIT_SECONDS):
                response = await self._client.agents_sessions_setStatus(
                    channel_id=self._channel_id, thread_ts=self._thread_ts, status=status
                )
        except SlackApiError as exc:
            error = exc.response.get("error", "")
            if error in SESSIONS_UNAVAILABLE_ERRORS and self._connection_key not in _sessions_unavailable:
                _sessions_unavailable.add(self._connection_key)
                logger.info(
                    "slack.agent_sessions_unavailable",
                    extra={"error": error, "connection": self._connection_key},
                )
            elif error not in SESSIONS_UNAVAILABLE_ERRORS:
                logger.info("slack.agent_session_failed", extra={"error": error, "channel": self._channel_id})
            return None
        except Exception as exc:  # no slot in the budget, a timeout, a dropped connection: the turn goes on
            logger.info(
                "slack.agent_session_failed", extra={"error": type(exc).__name__, "channel": self._channel_id}
            )
            return None
        return list((response.get("response_metadata") or {}).get("warnings") or [])


def reset_agent_session_availability() -> None:
    """Forgets which Connections have no agent sessions (for tests; a restart does the same)."""
    _sessions_unavailable.clear()
    _stop_unsubscribed.clear()
