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


EMAIL_CACHE_SECONDS = 3600  # an address changes rarely; an hour keeps users.info off every turn


async def person_email(client: AsyncWebClient, team_id: str, user_id: str) -> str | None:
    """The person's email (users.info; Slack shows it only with the users:read.email scope), cached an
    hour for every worker; None when Slack does not tell it."""
    key = f"slack-email:{team_id}:{user_id}"
    cached = await shared_cache.aget(key)
    if cached is not None:
        return cached or None
    try:
        response = await asyncio.wait_for(client.users_info(user=user_id), LOOKUP_TIMEOUT_SECONDS)
        email = ((response["user"].get("profile") or {}).get("email") or "").strip()
    except (SlackApiError, TimeoutError, OSError) as exc:
        logger.info("slack.email_lookup_failed", extra={"user_id": user_id, "error": type(exc).__name__})
        return None
    if not email:
        logger.info("slack.email_not_shown", extra={"user_id": user_id})
    await shared_cache.aset(key, email, EMAIL_CACHE_SECONDS)
    return email or None


# Who is in a channel: read again at least once a minute, and at once after someone left or joined
# (``forget_channel_members``, on Slack's member_left_channel and member_joined_channel events).
MEMBERS_CACHE_SECONDS = 60
MEMBERS_PAGE_SIZE = 200


def _members_key(channel_id: str) -> str:
    return f"slack-members:{channel_id}"


async def channel_members(client: AsyncWebClient, channel_id: str) -> frozenset[str]:
    """Everyone in the channel (conversations.members, every page), cached for at most a minute.

    Raises the Slack error when Slack cannot tell: the caller must not guess.
    """
    key = _members_key(channel_id)
    cached = await shared_cache.aget(key)
    if cached is not None:
        return frozenset(cached)
    members: list[str] = []
    cursor = None
    while True:
        response = await client.conversations_members(
            channel=channel_id, limit=MEMBERS_PAGE_SIZE, cursor=cursor
        )
        members += response.get("members") or []
        cursor = (response.get("response_metadata") or {}).get("next_cursor")
        if not cursor:
            break
    await shared_cache.aset(key, members, MEMBERS_CACHE_SECONDS)
    return frozenset(members)


async def forget_channel_members(channel_id: str) -> None:
    """Slack said someone left or joined the channel: its members are read again at the next ask, so
    that someone who left is not taken for a member from the cache (for up to a minute)."""
    await shared_cache.adelete(_members_key(channel_id))


async def is_bot(client: AsyncWebClient, user_id: str) -> bool:
    """Whether the user is a bot or an app (users.info). Raises the Slack error when Slack cannot tell."""
    key = f"slack-bot:{user_id}"
    cached = await shared_cache.aget(key)
    if cached is not None:
        return bool(cached)
    user = (await client.users_info(user=user_id))["user"]
    bot = bool(user.get("is_bot") or user.get("is_app_user")) or user_id == "USLACKBOT"
    await shared_cache.aset(key, bot, NAME_CACHE_SECONDS)
    return bot


async def usergroup_members(client: AsyncWebClient, group_id: str) -> frozenset[str]:
    """Everyone in a user group (usergroups.users.list), read from Slack on every call: who may
    approve a tool is never answered from a cache. Raises the Slack error when Slack cannot tell."""
    response = await client.usergroups_users_list(usergroup=group_id)
    return frozenset(response.get("users") or [])
