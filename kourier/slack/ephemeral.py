"""A message in a thread that only one person sees: the answer to their press of a button.

It goes through the press's ``response_url``, which reaches the person whether or not they are in the
channel (``chat.postEphemeral`` refuses anyone who is not: ``user_not_in_channel``).
"""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.webhook.async_client import AsyncWebhookClient

from .clients import SLACK_TIMEOUT_SECONDS


async def tell_privately(response_url: str, text: str) -> None:
    """Shows ``text`` to the person who pressed, beside the message they pressed in; raises on failure."""
    response = await AsyncWebhookClient(response_url, timeout=SLACK_TIMEOUT_SECONDS).send(
        text=text, response_type="ephemeral", replace_original=False
    )
    if response.status_code != 200:
        raise SlackApiError(
            f"response_url answered {response.status_code}", {"error": response.body or "failed"}
        )
