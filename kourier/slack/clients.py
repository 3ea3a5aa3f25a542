"""Slack Web API clients. Every client in the product is made here, so all of them use SLACK_API_URL."""

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

# Slack answers within a few seconds; a call that hangs longer is treated as a timeout by the caller.
SLACK_TIMEOUT_SECONDS = 10
# A 429 means Slack did not apply the call, so it is safe to send again after Retry-After. (A 5xx or a
# timeout may have been applied: those are not retried blindly.)
RATE_LIMIT_RETRIES = 5


def web_client(token: str) -> WebClient:
    client = WebClient(token=token, base_url=settings.SLACK_API_URL, timeout=SLACK_TIMEOUT_SECONDS)
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client


def async_web_client(token: str) -> AsyncWebClient:
    client = AsyncWebClient(token=token, base_url=settings.SLACK_API_URL, timeout=SLACK_TIMEOUT_SECONDS)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client
