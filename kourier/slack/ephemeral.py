"""A message in a thread that only one person sees: the answer to their press of a button.

It goes through the press's ``response_url``, which reaches the person whether or not they are in the
channel (``chat.postEphemeral`` refuses anyone who is not: ``user_not_in_channel``). A press's
payload is signed, but its ``response_url`` is only a field in it: it is used only when it is
Slack's (``is_slacks``), so that no payload makes the service send a request somewhere else.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook.async_client import AsyncWebhookClient

from kourier import egress

from .clients import SLACK_TIMEOUT_SECONDS

# Where Slack's response_urls point (hooks.slack.com; GovSlack's hooks.slack-gov.com).
SLACK_DOMAINS = ("slack.com", "slack-gov.com")


def is_slacks(url: str, api_url: str) -> bool:
    """Whether ``url`` is Slack's: https on one of Slack's domains, or on the configured Slack API's
    own scheme, host and port (SLACK_API_URL: the fake and the simulator)."""
    try:
        parts, api = urlsplit(url), urlsplit(api_url)
        port, api_port = parts.port, api.port
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    if parts.username is not None or parts.password is not None or not host:
        return False
    on_slacks_domain = any(host == domain or host.endswith("." + domain) for domain in SLACK_DOMAINS)
    if parts.scheme == "https" and port in (None, 443) and on_slacks_domain:
        return True
    return (parts.scheme, host, port) == (api.scheme, (api.hostname or "").lower(), api_port)


async def tell_privately(response_url: str, text: str) -> None:
    """Shows ``text`` to the person who pressed, beside the message they pressed in; raises on failure
    (a ``response_url`` that is not Slack's is never called: ``response_url_not_slack``)."""
    if not is_slacks(response_url, settings.SLACK_API_URL):
        raise SlackApiError("response_url is not Slack's", {"error": "response_url_not_slack"})
    client = AsyncWebhookClient(response_url, timeout=SLACK_TIMEOUT_SECONDS)
    client.proxy = egress.proxy_for(response_url)  # slack_sdk took HTTPS_PROXY but not NO_PROXY
    response = await client.send(text=text, response_type="ephemeral", replace_original=False)
    if response.status_code != 200:
        raise SlackApiError(
            f"response_url answered {response.status_code}", {"error": response.body or "failed"}
        )
