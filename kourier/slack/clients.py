"""Slack Web API clients. Every client in the product is made here, so all of them use SLACK_API_URL."""

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.web.async_client import AsyncWebClient

# Slack answers within a few seconds; a call that hangs longer is treated as a timeout by the caller.
SLACK_TIMEOUT_SECONDS = 10


def web_client(token: str) -> WebClient:
    return WebClient(token=token, base_url=settings.SLACK_API_URL, timeout=SLACK_TIMEOUT_SECONDS)


def async_web_client(token: str) -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=settings.SLACK_API_URL, timeout=SLACK_TIMEOUT_SECONDS)
