"""The ingress benchmark's baseline: a Bolt app that verifies the signature, acks and does nothing.

Same Bolt version and the same settings as the product's app (AsyncApp, process_before_response,
a client on SLACK_API_URL for the one auth.test Bolt makes), served by Daphne as the product is:

    daphne bench.bare_bolt_app:application
"""

import os

from slack_bolt.adapter.asgi.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

bolt = AsyncApp(
    name="bare",
    client=AsyncWebClient(
        token=os.environ["BARE_BOT_TOKEN"], base_url=os.environ["SLACK_API_URL"], timeout=10
    ),
    signing_secret=os.environ["BARE_SIGNING_SECRET"],
    process_before_response=True,
)


@bolt.event("app_mention")
async def take_mention() -> None:
    """Does nothing: Bolt acks the event when the listener returns."""


@bolt.event("message")
async def take_message() -> None:
    """Does nothing: Bolt acks the event when the listener returns."""


application = AsyncSlackRequestHandler(bolt, path="/slack/events")
