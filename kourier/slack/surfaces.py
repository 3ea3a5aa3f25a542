"""What the product reads in the requests of Slack's other ways to reach the app: a slash command (a
form POST, or a Socket Mode envelope of type ``slash_commands``) and a message shortcut (an
interactivity payload of type ``message_action``). docs/slack-platform.md §7.

Pure: no I/O. A request with a field missing or of the wrong type is unreadable: it is answered with
a private line when it says where to answer (its ``response_url``), and nothing is stored.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .incoming import UnreadableEvent, slash_command_problem

# The shortcut's callback_id, as the shipped app manifest declares it (features.shortcuts).
ASK_ABOUT_MESSAGE = "ask_about_message"
# What the slash command's text may be besides a question.
HELP, STATUS = "help", "status"
COMMAND_TEXT_MAX_LENGTH = 4000  # Slack's own limit on what a person can type in the message box


@dataclass(frozen=True)
class SlashCommand:
    """A person typed the app's slash command in a conversation."""

    command: str  # as typed: "/kourier", or the name the app manifest gives it
    text: str  # what followed the command, stripped
    team_id: str
    channel_id: str
    user_id: str
    response_url: str  # where to answer the person privately (or in the channel)
    trigger_id: str

    @property
    def subcommand(self) -> str:
        """``help``, ``status``, or "" for a question (and for no text at all, which asks for help)."""
        word = self.text.lower()
        if not word:
            return HELP
        return word if word in (HELP, STATUS) else ""


@dataclass(frozen=True)
class MessageShortcut:
    """A person chose the app's shortcut in a message's menu: the message as Slack sent it."""

    callback_id: str
    team_id: str
    channel_id: str
    user_id: str
    message_ts: str
    message_thread_ts: str | None  # the message's thread when it is a reply (or a thread's root)
    message_text: str
    message_author: str  # the bot ID of an app's message, else the user ID of its author, else ""
    author_is_bot: bool
    response_url: str
    trigger_id: str

    @property
    def thread_root(self) -> str:
        """The thread the session is in: the message's own thread, else one under the message."""
        return self.message_thread_ts or self.message_ts


def read_slash_command(payload: Mapping[str, Any]) -> SlashCommand | UnreadableEvent:
    problem = slash_command_problem(payload)
    if problem is not None:
        return UnreadableEvent(problem)
    text = str(payload.get("text") or "").strip()
    if len(text) > COMMAND_TEXT_MAX_LENGTH:
        return UnreadableEvent("slash command text over the length Slack allows")
    return SlashCommand(
        command=payload["command"],
        text=text,
        team_id=str(payload.get("team_id") or ""),
        channel_id=payload["channel_id"],
        user_id=payload["user_id"],
        response_url=payload["response_url"],
        trigger_id=str(payload.get("trigger_id") or ""),
    )


def read_message_shortcut(payload: Mapping[str, Any]) -> MessageShortcut | UnreadableEvent:
    user, channel, message = payload.get("user"), payload.get("channel"), payload.get("message")
    if not isinstance(user, Mapping) or not isinstance(user.get("id"), str) or not user["id"]:
        return UnreadableEvent("message_action without a user")
    if not isinstance(channel, Mapping) or not isinstance(channel.get("id"), str) or not channel["id"]:
        return UnreadableEvent("message_action without a channel")
    if not isinstance(message, Mapping) or not isinstance(message.get("ts"), str) or not message["ts"]:
        return UnreadableEvent("message_action without a message")
    response_url = payload.get("response_url")
    if not isinstance(response_url, str) or not response_url.startswith(("https://", "http://")):
        return UnreadableEvent("message_action without a response_url")
    text, thread_ts = message.get("text", ""), message.get("thread_ts")
    author, bot_id = message.get("user"), message.get("bot_id")
    if not isinstance(text, str) or not isinstance(thread_ts, str | None):
        return UnreadableEvent("message_action message with a field of another type")
    if not isinstance(author, str | None) or not isinstance(bot_id, str | None):
        return UnreadableEvent("message_action message with a field of another type")
    team = payload.get("team")
    return MessageShortcut(
        callback_id=str(payload.get("callback_id") or ""),
        team_id=str(team.get("id", "")) if isinstance(team, Mapping) else "",
        channel_id=channel["id"],
        user_id=user["id"],
        message_ts=message["ts"],
        message_thread_ts=thread_ts,
        message_text=text,
        message_author=bot_id or author or "",
        author_is_bot=bool(bot_id),
        response_url=response_url,
        trigger_id=str(payload.get("trigger_id") or ""),
    )
