"""Emoji reactions the product puts on a message and takes off: either call made twice is harmless."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient


async def add_reaction(client: AsyncWebClient, channel_id: str, ts: str, name: str) -> None:
    try:
        await client.reactions_add(channel=channel_id, timestamp=ts, name=name)
    except SlackApiError as exc:
        if exc.response.get("error") != "already_reacted":
            raise


async def remove_reaction(client: AsyncWebClient, channel_id: str, ts: str, name: str) -> None:
    try:
        await client.reactions_remove(channel=channel_id, timestamp=ts, name=name)
    except SlackApiError as exc:
        if exc.response.get("error") != "no_reaction":
            raise
