"""The world the ``slack_fake`` fixture starts with: one workspace, the app's bot, one channel, two people."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .fake import SlackFake

TEAM_ID = "T0001"
TEAM_DOMAIN = "kourier-test"
APP_ID = "A0KOURIER"
BOT_USER_ID = "U0BOT"
BOT_ID = "B0BOT"
BOT_TOKEN = "xoxb-0001-0001-kourierbottoken"
APP_TOKEN = "xapp-1-A0KOURIER-0001-kourierapptoken"
SIGNING_SECRET = "kourier-test-signing-secret"
CHANNEL_ID = "C0001"
CHANNEL_NAME = "agents"
ADA = "U0ADA"
ADA_EMAIL = "ada@example.com"
GRACE = "U0GRACE"


def populate(fake: SlackFake) -> SlackFake:
    """Add the default world to a fake: workspace T0001 with the bot, channel C0001 with Ada and Grace."""
    fake.add_workspace(
        TEAM_ID,
        domain=TEAM_DOMAIN,
        name="Kourier Test",
        app_id=APP_ID,
        bot_user_id=BOT_USER_ID,
        bot_id=BOT_ID,
        bot_token=BOT_TOKEN,
        app_token=APP_TOKEN,
    )
    fake.add_user(ADA, "Ada Lovelace", display_name="ada", email=ADA_EMAIL)
    fake.add_user(GRACE, "Grace Hopper", display_name="grace")
    fake.add_channel(CHANNEL_ID, CHANNEL_NAME, members=[ADA, GRACE])
    return fake
