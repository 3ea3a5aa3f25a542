"""What a failed Slack call means: Slack's faults classified, with no I/O.

A call fails because Slack refused it (an error name such as ``channel_not_found``), because Slack
could not do it now (429 with ``Retry-After``; a server error: HTTP 500-504 or ``fatal_error``,
``internal_error``, ``service_unavailable``, ``request_timeout``), or because its answer never came (a
timeout, a dropped connection, or a connection that could not even be opened). The clients
(clients.py) decide from these what to send again; the apps ask ``may_pass`` whether to try later,
and name a failure with ``error_name`` and ``call_outcome``.
"""

from __future__ import annotations

import http.client
import urllib.error
from collections.abc import Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.slack_response import SlackResponse

# Slack's error names for its own failures (HTTP 200 or 5xx): the call may succeed when sent again.
SERVER_ERRORS = frozenset({"fatal_error", "internal_error", "service_unavailable", "request_timeout"})
SERVER_ERROR_STATUSES = range(500, 505)
# Faults of the connection: the call's answer did not arrive.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,
    OSError,
    aiohttp.ClientError,
    http.client.HTTPException,
)


# What a Slack call raises when Slack refused it or could not be reached: the name the apps catch, so
# that they need not know slack_sdk.
SlackError = SlackApiError


class SlackRateLimited(SlackApiError):
    """Slack holds this method for this workspace longer than the call may wait; Slack was not called."""


class SlackBudgetDeferred(SlackRateLimited):
    """The budget has no slot within the patience the caller gave (``clients.patience``): Slack was
    not called, nothing was reserved, and the caller decides (a later write, the sweep, another mode)."""


class SlackUnavailable(SlackApiError):
    """Every send of a call met a timeout or a dropped connection."""


class SlackOutcomeUnknown(SlackApiError):
    """A call that is not repeatable may or may not have been applied by Slack; it was not sent again."""


def _method_of(exc_or_url: str) -> str:
    return exc_or_url.rstrip("/").rsplit("/", 1)[-1]


def slack_error(
    cls: type[SlackApiError],
    api_url: str,
    error: str,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> SlackApiError:
    """A failure the client raises itself, shaped as Slack's own answer (its error name, and the status
    and headers a 429 carries), so that callers read it as any other."""
    response = SlackResponse(
        client=None,
        http_verb="POST",
        api_url=api_url,
        req_args={},
        data={"ok": False, "error": error},
        headers=dict(headers or {}),
        status_code=status,
    )
    return cls(f"{error} ({_method_of(api_url)})", response)


def _header(headers: Any, name: str) -> str | None:
    for key, value in dict(headers or {}).items():
        if str(key).lower() == name:
            return str(value)
    return None


def _response_error(response: Any) -> str:
    data = getattr(response, "data", None)
    return str(data.get("error", "")) if isinstance(data, dict) else ""


def retry_after_of(exc: SlackApiError) -> float | None:
    """The seconds Slack asks to wait when it answered 429, else None."""
    response = exc.response
    if getattr(response, "status_code", None) != 429:
        return None
    value = _header(response.headers, "retry-after")
    try:
        return max(1.0, float(value)) if value is not None else 1.0
    except ValueError:
        return 1.0


def is_server_error(exc: SlackApiError) -> bool:
    return (
        getattr(exc.response, "status_code", None) in SERVER_ERROR_STATUSES
        or _response_error(exc.response) in SERVER_ERRORS
    )


def may_pass(exc: BaseException) -> bool:
    """Whether a call that failed this way may succeed later (a timeout, a server error, a rate
    limit), rather than being refused again by Slack."""
    if not isinstance(exc, SlackApiError):
        return True
    return (
        isinstance(exc, SlackUnavailable | SlackOutcomeUnknown)
        or is_server_error(exc)
        or getattr(exc.response, "status_code", None) == 429
    )


def never_reached_slack(exc: BaseException) -> bool:
    """Whether the connection could not even be opened, so Slack cannot have seen the call."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        return True
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        return isinstance(exc.reason, ConnectionRefusedError)
    return isinstance(exc, ConnectionRefusedError)


CALL_OK = "ok"


def call_outcome(exc: BaseException) -> str:
    """How a failed call ended, as kourier_slack_calls_total names it (kourier/metrics.py)."""
    if not isinstance(exc, SlackApiError):
        return "error"
    if isinstance(exc, SlackOutcomeUnknown):
        return "outcome_unknown"
    if isinstance(exc, SlackBudgetDeferred):
        return "deferred"
    if isinstance(exc, SlackUnavailable):
        return "unavailable"
    if getattr(exc.response, "status_code", None) == 429:
        return "rate_limited"
    if is_server_error(exc):
        return "server_error"
    return "refused"


def error_name(exc: Exception) -> str:
    """A Slack error's name, or the exception's type: what a log line may say of a failed call."""
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", ""))
    return type(exc).__name__


def fault_name(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return _response_error(exc.response) or f"http_{getattr(exc.response, 'status_code', '')}"
    return "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
