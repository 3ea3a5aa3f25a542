"""Who wrote a message: names from users.info, cached briefly in Redis for every worker."""

import asyncio
import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kourier import shared_cache

logger = logging.getLogger(__name__)

NAME_CACHE_SECONDS = 300
# A lookup that fails must never hold the turn up for long: this bounds its sends and retries together.
LOOKUP_TIMEOUT_SECONDS = 3


def _display_name(user: dict) -> str | None:
    profile = user.get("profile") or {}
    for candidate in (
        profile.get("real_name"),
        user.get("real_name"),
        profile.get("display_name"),
        user.get("name"),
    ):
        if candidate and candidate.strip():
            return candidate.strip()
    return None


async def person_name(client: AsyncWebClient, team_id: str, user_id: str) -> str | None:
    """The person's name, or None when Slack does not tell it (the caller then shows the ID)."""
    key = f"slack-name:{team_id}:{user_id}"
    cached = await shared_cache.aget(key)
    if cached is not None:
        return cached or None
    try:
        response = await asyncio.wait_for(client.users_info(user=user_id), LOOKUP_TIMEOUT_SECONDS)
        name = _display_name(response["user"])
    except (SlackApiError, TimeoutError, OSError) as exc:
        logger.info("slack.name_lookup_failed", extra={"user_id": user_id, "error": type(exc).__name__})
        return None
    await shared_cache.aset(key, name or "", NAME_CACHE_SECONDS)
    return name
