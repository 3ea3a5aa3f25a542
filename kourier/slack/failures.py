"""The last Slack call that failed for each workspace (a Connection), for the operator's live page.

Kept in the Django cache (Redis, shared by every process) for a day, and only for what an operator can
act on or should know of: a refusal that names a setup fault (``FAULTS_OF_THE_SETUP``: the bot is not in
the channel, the token was revoked, a scope is missing) or a call that Slack did not answer in the end
(rate limited past the client's waits, a server error, unreachable). A refusal the product expects and
handles (``already_reacted``, a message someone deleted) is not a failure worth showing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kourier import shared_cache

logger = logging.getLogger(__name__)

KEY_PREFIX = "slack-last-failure"
KEPT_SECONDS = 24 * 3600

FAULTS_OF_THE_SETUP = frozenset(
    {
        "account_inactive",
        "channel_not_found",
        "ekm_access_denied",
        "invalid_auth",
        "is_archived",
        "missing_scope",
        "no_permission",
        "not_allowed_token_type",
        "not_authed",
        "not_in_channel",
        "restricted_action",
        "team_access_not_granted",
        "token_expired",
        "token_revoked",
    }
)
UNANSWERED_OUTCOMES = frozenset({"rate_limited", "server_error", "unavailable", "outcome_unknown"})


@dataclass(frozen=True)
class SlackFailure:
    method: str
    error: str
    at: datetime


def worth_showing(outcome: str, error: str) -> bool:
    return outcome in UNANSWERED_OUTCOMES or (outcome == "refused" and error in FAULTS_OF_THE_SETUP)


def _key(workspace: str) -> str:
    return f"{KEY_PREFIX}:{workspace}"


def remember(workspace: str, method: str, error: str, at: float | None = None) -> None:
    """Keeps the failure as the workspace's last; a cache that cannot be reached loses it (logged)."""
    record = {"method": method, "error": error, "at": time.time() if at is None else at}
    try:
        shared_cache.backend().set(_key(workspace), record, KEPT_SECONDS)
    except Exception as exc:  # the call's own failure matters more than the record of it
        logger.warning("slack.failure_not_kept", extra={"method": method, "error": type(exc).__name__})


def last_failure(workspace: str) -> SlackFailure | None:
    try:
        record: Any = shared_cache.backend().get(_key(workspace))
    except Exception as exc:
        logger.warning("slack.failure_not_read", extra={"error": type(exc).__name__})
        return None
    if not isinstance(record, dict):
        return None
    return SlackFailure(
        method=str(record.get("method", "")),
        error=str(record.get("error", "")),
        at=datetime.fromtimestamp(float(record.get("at", 0)), tz=UTC),
    )
