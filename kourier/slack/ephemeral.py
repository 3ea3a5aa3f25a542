"""A message in a thread that only one person sees (chat.postEphemeral)."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient


async def tell_privately(
    client: AsyncWebClient, channel_id: str, user_id: str, text: str, *, thread_ts: str | None
) -> None:
    await client.chat_postEphemeral(channel=channel_id, user=user_id, text=text, thread_ts=thread_ts)
