"""The Events API and interactivity payloads Slack sends to an app, and their signatures. Pure builders.

Shapes follow docs/slack-platform.md §4.1 (event envelope), §4.3 (signing) and §4.5 (block_actions).
"""

from __future__ import annotations

import hmac
import itertools
import secrets
import threading
from typing import Any, Literal

from .shapes import files_json, message_json, rich_text_blocks
from .state import Channel, EventTarget, Message, SlackState, Workspace

SignMode = Literal["valid", "forged", "missing", "stale"]
STALE_SIGNATURE_AGE = 600  # Slack's verifiers refuse timestamps more than 300 s away from now


class EventIds:
    """Unique ``event_id`` values, shaped like Slack's ("Ev0A1B2C3D4E")."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def next(self) -> str:
        with self._lock:
            return f"Ev{next(self._counter):010X}"


def envelope(
    workspace: Workspace, target: EventTarget, event: dict[str, Any], event_id: str, event_time: int
) -> dict:
    """The ``event_callback`` body that carries one event to the app."""
    return {
        "token": target.verification_token,
        "team_id": workspace.team_id,
        "context_team_id": workspace.team_id,
        "context_enterprise_id": None,
        "api_app_id": workspace.app.app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": event_time,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": workspace.team_id,
                "user_id": workspace.app.bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
    }


def url_verification(target: EventTarget, challenge: str) -> dict[str, Any]:
    return {"token": target.verification_token, "challenge": challenge, "type": "url_verification"}


def message_event(state: SlackState, message: Message, channel: Channel) -> dict[str, Any]:
    """The ``message`` event for a new message: a person's, another bot's, or the app's own echoed back."""
    event = message_json(state, message, include_metadata=False)
    event.pop("reply_count", None)
    event.pop("reply_users", None)
    event.pop("reply_users_count", None)
    event.pop("latest_reply", None)
    event.pop("reactions", None)
    if not message.is_reply:
        event.pop("thread_ts", None)
    event.update({"channel": channel.id, "event_ts": message.ts, "channel_type": channel.channel_type})
    return event


def app_mention_event(state: SlackState, message: Message, channel: Channel) -> dict[str, Any]:
    """The ``app_mention`` event: like the message event, but without channel_type or parent_user_id."""
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "team": message.team_id,
        "channel": channel.id,
        "event_ts": message.ts,
        "blocks": message.blocks or rich_text_blocks(message.text),
    }
    if message.client_msg_id:
        event["client_msg_id"] = message.client_msg_id
    if message.files:
        event["files"] = files_json(state, message.files)
    if message.bot_id:
        event["bot_id"] = message.bot_id
    if message.is_reply:
        event["thread_ts"] = message.thread_ts
    return event


def message_changed_event(
    state: SlackState, message: Message, previous: dict[str, Any], channel: Channel, event_ts: str
) -> dict[str, Any]:
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "message": message_json(state, message, include_metadata=False),
        "previous_message": previous,
        "channel": channel.id,
        "ts": event_ts,
        "event_ts": event_ts,
        "channel_type": channel.channel_type,
    }


def message_deleted_event(previous: dict[str, Any], channel: Channel, event_ts: str) -> dict[str, Any]:
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "deleted_ts": previous["ts"],
        "previous_message": previous,
        "channel": channel.id,
        "ts": event_ts,
        "event_ts": event_ts,
        "channel_type": channel.channel_type,
    }


def member_event(kind: str, user: str, channel: Channel, event_ts: str) -> dict[str, Any]:
    """``member_joined_channel`` or ``member_left_channel``: sent to the apps in the channel that
    subscribe to it (channels:read, groups:read). Its channel_type is "C" (public) or "G" (private)."""
    return {
        "type": kind,
        "user": user,
        "channel": channel.id,
        "channel_type": "G" if channel.is_private else "C",
        "team": channel.team_id,
        "event_ts": event_ts,
    }


def reaction_added_event(user: str, name: str, message: Message, event_ts: str) -> dict[str, Any]:
    return {
        "type": "reaction_added",
        "user": user,
        "reaction": name,
        "item": {"type": "message", "channel": message.channel, "ts": message.ts},
        "item_user": message.user,
        "event_ts": event_ts,
    }


def signed_headers(
    secret: str, body: bytes, *, now: float, mode: SignMode = "valid", content_type: str = "application/json"
) -> dict[str, str]:
    """Headers for a request from Slack: ``v0=HMAC_SHA256(secret, "v0:<timestamp>:<body>")`` (§4.3).

    ``forged`` signs with another secret, ``stale`` with a timestamp ten minutes old, ``missing`` not at all.
    """
    headers = {"Content-Type": content_type}
    if mode == "missing":
        return headers
    timestamp = str(int(now) - (STALE_SIGNATURE_AGE if mode == "stale" else 0))
    signing_secret = secret if mode != "forged" else "forged-" + secrets.token_hex(8)
    # Over the bytes as sent (the SDK's helper takes text): a body that is not UTF-8 is signed too.
    signed = b"v0:%s:%s" % (timestamp.encode(), body)
    signature = "v0=" + hmac.new(signing_secret.encode(), signed, "sha256").hexdigest()
    headers["X-Slack-Request-Timestamp"] = timestamp
    headers["X-Slack-Signature"] = signature
    return headers
