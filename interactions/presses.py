"""A Submit press on a prompt, as the listener hands it over: who may answer, and what they are told.

Only a member of the channel may answer, and never a bot (read from Slack, the members cached for at
most a minute). The first complete answer wins (``services.take_pressed_answer``); every press that
is not taken is told why, in a message only the person sees.
"""

from __future__ import annotations

import logging

from kourier.db import in_database_thread
from kourier.slack.clients import SlackError, async_web_client, connection_workspace, error_name
from kourier.slack.ephemeral import tell_privately
from kourier.slack.incoming import SubmitPress
from kourier.slack.people import channel_members, is_bot

from . import services
from .bound import ANOTHER_APP, posted_by_another_app

logger = logging.getLogger(__name__)

MEMBERSHIP_UNKNOWN = "I could not check that you are a member of this channel, so your answer was not sent. Try again in a moment."


async def take_submit(press: SubmitPress, *, connection_id: int, bot_token: str) -> None:
    slack = async_web_client(bot_token, workspace=connection_workspace(connection_id))
    interaction_id = int(press.value) if press.value.isascii() and press.value.isdigit() else 0
    if await in_database_thread(posted_by_another_app)(interaction_id, connection_id):
        refusal: str | None = ANOTHER_APP
    else:
        refusal = await _why_not_allowed(slack, press)
    if refusal is None:
        result = await in_database_thread(services.take_pressed_answer)(
            interaction_id,
            channel_id=press.channel_id,
            prompt_ts=press.message_ts,
            user_id=press.user_id,
            values=press.values,
        )
        if isinstance(result, services.Taken):
            return
        logger.info(
            "interaction.press_refused", extra={"interaction": press.value, "reason": result.refusal.value}
        )
        refusal = result.message
    try:
        await tell_privately(press.response_url, refusal)
    except SlackError as exc:
        logger.warning(
            "interaction.refusal_not_told", extra={"interaction": press.value, "error": error_name(exc)}
        )


async def _why_not_allowed(slack, press: SubmitPress) -> str | None:
    try:
        if press.user_id not in await channel_members(slack, press.channel_id) or await is_bot(
            slack, press.user_id
        ):
            return services.REFUSALS[services.Refusal.NOT_A_MEMBER]
    except SlackError as exc:
        logger.warning(
            "interaction.membership_unknown", extra={"interaction": press.value, "error": error_name(exc)}
        )
        return MEMBERSHIP_UNKNOWN
    return None
