"""Reads Slack message events into the platform-neutral shape the sessions app routes (ChatMessage).

Pure: no I/O. Slack's two events for one mention (app_mention and message) read the same here,
so whichever arrives first makes the turn and the other collapses onto it.
"""

import re
from dataclasses import dataclass

# Subtypes that change or remove an existing message, or that are not a person's message.
_NOT_A_NEW_MESSAGE = frozenset(
    {
        "message_changed",
        "message_deleted",
        "message_replied",
        "bot_message",
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "group_join",
        "group_leave",
        "thread_broadcast_removed",
        "ekm_access_denied",
        "me_message_changed",
        "assistant_app_thread",
    }
)


@dataclass(frozen=True)
class ChatMessage:
    """A person's new message in a channel, as the chat platform delivered it."""

    team_id: str
    channel_id: str
    ts: str
    thread_ts: str | None  # the thread's root when the message is a reply, else None
    user_id: str
    text: str
    mentions_bot: bool

    @property
    def root_ts(self) -> str:
        return self.thread_ts or self.ts


@dataclass(frozen=True)
class IgnoredEvent:
    reason: str


def mention_pattern(bot_user_id: str) -> re.Pattern[str]:
    return re.compile(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>")


def read_message_event(event: dict, *, team_id: str, bot_user_id: str) -> ChatMessage | IgnoredEvent:
    """Turns an app_mention or message event into a ChatMessage, or says why it is not one."""
    subtype = event.get("subtype")
    if subtype in _NOT_A_NEW_MESSAGE or event.get("hidden"):
        return IgnoredEvent(f"subtype {subtype}")
    if event.get("bot_id") or event.get("bot_profile"):
        return IgnoredEvent("from a bot")
    user_id = event.get("user")
    if not user_id:
        return IgnoredEvent("no user")
    if user_id == bot_user_id:
        return IgnoredEvent("from this app")
    channel_id = event.get("channel")
    ts = event.get("ts")
    if not channel_id or not ts:
        return IgnoredEvent("no channel or ts")
    text = event.get("text") or ""
    thread_ts = event.get("thread_ts")
    return ChatMessage(
        team_id=event.get("team") or team_id,
        channel_id=channel_id,
        ts=ts,
        thread_ts=thread_ts if thread_ts and thread_ts != ts else None,
        user_id=user_id,
        text=text,
        mentions_bot=bool(bot_user_id) and bool(mention_pattern(bot_user_id).search(text)),
    )
