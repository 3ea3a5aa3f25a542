"""Finding the product's own messages in a thread, for a write whose answer was lost.

A post carries the product's key in its message metadata, so a post Slack applied is found by that
metadata (``conversations.replies`` with ``include_all_metadata``). ``chat.startStream`` takes no
metadata, so a stream that started is recognised by who wrote it and when: a message of this bot
in the thread, with no metadata yet (the product sets it when the stream stops), no older than the
call (less ``CLOCK_SKEW_SECONDS``, since Slack's ts and this host's clock differ a little). Only one
runner writes in a thread at a time and its earlier messages carry metadata, so nothing else fits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

# How far Slack's message ts may be behind this host's clock when a call began.
CLOCK_SKEW_SECONDS = 10.0
REPLIES_PAGE_SIZE = 200


def same_metadata(message: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    shown = message.get("metadata") or {}
    return shown.get("event_type") == metadata.get("event_type") and shown.get(
        "event_payload"
    ) == metadata.get("event_payload")


async def thread_messages(
    client: AsyncWebClient, channel_id: str, thread_ts: str, *, oldest: float | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The thread's messages, oldest first, with their metadata."""
    cursor = ""
    while True:
        arguments: dict[str, Any] = {
            "channel": channel_id,
            "ts": thread_ts,
            "include_all_metadata": True,
            "limit": REPLIES_PAGE_SIZE,
        }
        if cursor:
            arguments["cursor"] = cursor
        if oldest is not None:
            arguments["oldest"] = f"{max(oldest, 0.0):.6f}"
        response = await client.conversations_replies(**arguments)
        for message in response.get("messages") or []:
            yield message
        cursor = (response.get("response_metadata") or {}).get("next_cursor") or ""
        if not cursor:
            return


async def find_post(
    client: AsyncWebClient, channel_id: str, thread_ts: str, metadata: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The thread's message that carries this metadata, or None."""
    async for message in thread_messages(client, channel_id, thread_ts):
        if message.get("ts") != thread_ts and same_metadata(message, metadata):
            return message
    return None


async def find_started_stream(
    client: AsyncWebClient, channel_id: str, thread_ts: str, *, bot_user_id: str, since: float
) -> dict[str, Any] | None:
    """The latest message this bot began in the thread since ``since`` that carries no metadata yet."""
    found = None
    async for message in thread_messages(client, channel_id, thread_ts, oldest=since - CLOCK_SKEW_SECONDS):
        if (
            message.get("ts") != thread_ts
            and message.get("user") == bot_user_id
            and not message.get("metadata")
            and float(message.get("ts") or 0) >= since - CLOCK_SKEW_SECONDS
        ):
            found = message
    return found


async def find_channel_post(
    client: AsyncWebClient, channel_id: str, metadata: Mapping[str, Any], *, since: float
) -> dict[str, Any] | None:
    """The channel's top-level message that carries this metadata, posted since ``since``, or None."""
    cursor = ""
    while True:
        arguments: dict[str, Any] = {
            "channel": channel_id,
            "oldest": f"{max(since - CLOCK_SKEW_SECONDS, 0.0):.6f}",
            "include_all_metadata": True,
            "limit": REPLIES_PAGE_SIZE,
        }
        if cursor:
            arguments["cursor"] = cursor
        response = await client.conversations_history(**arguments)
        for message in response.get("messages") or []:
            if same_metadata(message, metadata):
                return message
        cursor = (response.get("response_metadata") or {}).get("next_cursor") or ""
        if not cursor:
            return None
