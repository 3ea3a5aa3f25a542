"""Slack Web API clients. Every client in the product is made here, so all of them use SLACK_API_URL.

Retries: a 429 means Slack did not apply the call, so it is sent again after Retry-After. A dropped
connection is retried only for calls that can be repeated without harm (an update, a reaction, a
status, a read): a post or a stream append that may have reached Slack would show twice.
"""

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.web.async_client import AsyncWebClient

# Slack answers within a few seconds; a call that hangs longer is treated as a timeout by the caller.
SLACK_TIMEOUT_SECONDS = 10
RATE_LIMIT_RETRIES = 5
# Calls that create something Slack shows: repeating one whose answer was lost could show it twice.
NOT_REPEATABLE_METHODS = frozenset(
    {"chat.postMessage", "chat.postEphemeral", "chat.startStream", "chat.appendStream"}
)


def repeatable(request: HttpRequest) -> bool:
    method = request.url.rstrip("/").rsplit("/", 1)[-1]
    return method not in NOT_REPEATABLE_METHODS


class RepeatableConnectionErrorRetryHandler(ConnectionErrorRetryHandler):
    def _can_retry(self, *, state, request, response=None, error=None) -> bool:
        return repeatable(request) and super()._can_retry(
            state=state, request=request, response=response, error=error
        )


class AsyncRepeatableConnectionErrorRetryHandler(AsyncConnectionErrorRetryHandler):
    async def _can_retry_async(self, *, state, request, response=None, error=None) -> bool:
        return repeatable(request) and await super()._can_retry_async(
            state=state, request=request, response=response, error=error
        )


def web_client(token: str) -> WebClient:
    return WebClient(
        token=token,
        base_url=settings.SLACK_API_URL,
        timeout=SLACK_TIMEOUT_SECONDS,
        retry_handlers=[
            RepeatableConnectionErrorRetryHandler(),
            RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ],
    )


def async_web_client(token: str | None) -> AsyncWebClient:
    """A client on SLACK_API_URL; with no token, each call's token is set by its caller (Bolt does)."""
    return AsyncWebClient(
        token=token,
        base_url=settings.SLACK_API_URL,
        timeout=SLACK_TIMEOUT_SECONDS,
        retry_handlers=[
            AsyncRepeatableConnectionErrorRetryHandler(),
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ],
    )
