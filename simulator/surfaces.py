"""A person reaching the app another way than a message (docs/slack-platform.md §7): a slash command
typed in a conversation, a message shortcut chosen in a message's menu.

- A slash command is a form POST of fields (``command``, ``text``, ``team_id``, ``channel_id``,
  ``user_id``, ``response_url``, ``trigger_id``, ...), signed as every request, to the command's
  request URL; over Socket Mode the same fields are the payload of an envelope of type
  ``slash_commands`` (which accepts a response payload). Slack sends the text with ``&``, ``<`` and
  ``>`` escaped.
- A message shortcut is an interactivity payload of type ``message_action`` (``callback_id``,
  ``message``, ``message_ts``, ``channel``, ``user``, ``team``, ``response_url``, ``trigger_id``),
  form-encoded in one ``payload`` field; over Socket Mode an ``interactive`` envelope.

Neither is ever sent again by Slack. A person can only type a command in a conversation they are in,
and use a shortcut on a message they can see.
"""

from __future__ import annotations

from typing import Any

from .interactivity import ActionSource
from .shapes import message_json
from .state import Channel, EventTarget, ResponseUrl, SlackState, User, Workspace


def escaped(text: str) -> str:
    """The text as Slack sends a command's: its three control characters as HTML entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def command_response_url(
    state: SlackState, workspace: Workspace, channel: Channel, user: User
) -> ResponseUrl:
    """A command's response_url: tied to the person and the conversation, to no message."""
    response_url = ResponseUrl(
        id=state.new_id("R"),
        team_id=workspace.team_id,
        channel=channel.id,
        user=user.id,
        message_ts="",
        is_ephemeral=False,
        created_at=state.now(),
    )
    state.response_urls[response_url.id] = response_url
    return response_url


def slash_command_fields(
    workspace: Workspace,
    target: EventTarget,
    channel: Channel,
    user: User,
    command: str,
    text: str,
    *,
    response_url: str,
    trigger_id: str,
) -> dict[str, str]:
    return {
        "token": target.verification_token,
        "team_id": workspace.team_id,
        "team_domain": workspace.domain,
        "channel_id": channel.id,
        "channel_name": "directmessage" if channel.is_im else channel.name,
        "user_id": user.id,
        "user_name": user.name,
        "command": command,
        "text": escaped(text),
        "api_app_id": workspace.app.app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def message_action_payload(
    state: SlackState,
    workspace: Workspace,
    target: EventTarget,
    source: ActionSource,
    user: User,
    callback_id: str,
    *,
    response_url: str,
    trigger_id: str,
) -> dict[str, Any]:
    assert source.message is not None
    return {
        "type": "message_action",
        "token": target.verification_token,
        "action_ts": state.next_ts(),
        "team": {"id": workspace.team_id, "domain": workspace.domain},
        "user": {"id": user.id, "username": user.name, "name": user.name, "team_id": user.team_id},
        "channel": {"id": source.channel.id, "name": source.channel.name},
        "is_enterprise_install": False,
        "enterprise": None,
        "callback_id": callback_id,
        "trigger_id": trigger_id,
        "response_url": response_url,
        "message_ts": source.message.ts,
        "message": message_json(state, source.message),
    }
