"""The JSON shapes Slack uses for messages, users and bots, built from the fake's state.

Shared by Web API answers (chat.postMessage, conversations.replies, users.info) and Events API
payloads, so a message looks the same wherever the app meets it.
"""

from __future__ import annotations

import re
from typing import Any

from .state import Message, SlackFile, SlackState, User, Workspace

_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


def mentioned_users(text: str) -> list[str]:
    return _MENTION.findall(text)


def rendered_text(message: Message) -> str:
    """The text a person reads: a stream's text so far, else the message's own text."""
    stream = message.stream
    if stream is not None and not stream.superseded:
        return stream.text
    return message.text


def visible_blocks(message: Message) -> list[dict[str, Any]]:
    """The blocks shown in the message; a stream shows its chunk blocks, then the blocks of its stop."""
    stream = message.stream
    if stream is not None and not stream.superseded:
        return [*stream.chunk_blocks, *stream.final_blocks]
    return list(message.blocks)


def message_json(state: SlackState, message: Message, *, include_metadata: bool = True) -> dict[str, Any]:
    """A message as conversations.replies, chat.* answers and message events show it."""
    body: dict[str, Any] = {"type": "message", "ts": message.ts, "text": rendered_text(message)}
    if message.subtype:
        body["subtype"] = message.subtype
    if message.user:
        body["user"] = message.user
    if message.bot_id:
        body["bot_id"] = message.bot_id
    if message.app_id:
        body["app_id"] = message.app_id
    if message.username:
        body["username"] = message.username
    if message.client_msg_id:
        body["client_msg_id"] = message.client_msg_id
    body["team"] = message.team_id
    if message.bot_id and message.user:
        body["bot_profile"] = bot_profile(state, message)
    blocks = visible_blocks(message)
    if blocks:
        body["blocks"] = blocks
    if message.files:
        body["files"] = files_json(state, message.files)
    if message.attachments:
        body["attachments"] = [dict(attachment, id=n) for n, attachment in enumerate(message.attachments, 1)]
    if message.thread_ts:
        body["thread_ts"] = message.thread_ts
    if message.is_reply:
        root = state.message(message.channel, message.root_ts)
        if root is not None and root.user:
            body["parent_user_id"] = root.user
    if message.reply_ts:
        replies = state.replies(message)
        body["reply_count"] = len(replies)
        users = list(dict.fromkeys(r.user for r in replies if r.user))
        body["reply_users"] = users
        body["reply_users_count"] = len(users)
        if replies:
            body["latest_reply"] = replies[-1].ts
    if message.edited:
        body["edited"] = dict(message.edited)
    if message.reactions:
        body["reactions"] = reactions_json(message)
    if include_metadata and message.metadata is not None:
        body["metadata"] = dict(message.metadata)
    return body


def reactions_json(message: Message) -> list[dict[str, Any]]:
    return [
        {"name": name, "users": list(users), "count": len(users)}
        for name, users in message.reactions.items()
        if users
    ]


def bot_profile(state: SlackState, message: Message) -> dict[str, Any]:
    bot_user = state.users.get(message.user or "")
    return {
        "id": message.bot_id,
        "app_id": message.app_id,
        "name": bot_user.name if bot_user else "bot",
        "deleted": False,
        "team_id": message.team_id,
        "icons": {"image_36": "https://a.slack-edge.com/80588/img/plugins/app/bot_36.png"},
    }


def user_json(user: User) -> dict[str, Any]:
    """users.info's ``user``."""
    profile: dict[str, Any] = {
        "real_name": user.real_name,
        "real_name_normalized": user.real_name,
        "display_name": user.display_name,
        "display_name_normalized": user.display_name,
        "team": user.team_id,
    }
    if user.email:
        profile["email"] = user.email
    if user.bot_id:
        profile["bot_id"] = user.bot_id
        profile["api_app_id"] = user.app_id or ""
    return {
        "id": user.id,
        "team_id": user.team_id,
        "name": user.name,
        "deleted": user.deleted,
        "real_name": user.real_name,
        "tz": user.tz,
        "profile": profile,
        "is_admin": False,
        "is_owner": False,
        "is_primary_owner": False,
        "is_restricted": False,
        "is_ultra_restricted": False,
        "is_bot": user.is_bot,
        "is_app_user": False,
        "updated": 1700000000,
    }


def auth_test_json(workspace: Workspace) -> dict[str, Any]:
    return {
        "url": f"https://{workspace.domain}.slack.com/",
        "team": workspace.name,
        "user": workspace.app.name,
        "team_id": workspace.team_id,
        "user_id": workspace.app.bot_user_id,
        "bot_id": workspace.app.bot_id,
        "is_enterprise_install": False,
    }


def rich_text_blocks(text: str) -> list[dict[str, Any]]:
    """The rich_text block Slack's clients attach to what a person types, with mentions as user elements."""
    elements: list[dict[str, Any]] = []
    position = 0
    for match in _MENTION.finditer(text):
        if match.start() > position:
            elements.append({"type": "text", "text": text[position : match.start()]})
        elements.append({"type": "user", "user_id": match.group(1)})
        position = match.end()
    if position < len(text):
        elements.append({"type": "text", "text": text[position:]})
    return [
        {
            "type": "rich_text",
            "block_id": "rt0",
            "elements": [{"type": "rich_text_section", "elements": elements}],
        }
    ]


# Slack's filetype for the media types the fake is shown (Slack infers it from the name and content).
_FILETYPES = {
    "text/plain": "text",
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "application/pdf": "pdf",
    "application/zip": "zip",
    "application/json": "json",
}


def filetype_of(file: SlackFile) -> str:
    if file.mimetype in _FILETYPES:
        return _FILETYPES[file.mimetype]
    return file.name.rsplit(".", 1)[-1].lower() if "." in file.name else "binary"


def private_url(state: SlackState, file: SlackFile, *, download: bool = False) -> str:
    middle = "download/" if download else ""
    return f"{state.files_base}files-pri/{file.team_id}-{file.id}/{middle}{file.name}"


def file_json(state: SlackState, file: SlackFile) -> dict[str, Any]:
    """A file object as message events, conversations.replies and files.completeUploadExternal show it."""
    return {
        "id": file.id,
        "created": file.created,
        "timestamp": file.created,
        "name": file.name,
        "title": file.title,
        "mimetype": file.mimetype,
        "filetype": filetype_of(file),
        "pretty_type": filetype_of(file).upper(),
        "user": file.user,
        "user_team": file.team_id,
        "size": len(file.content or b""),
        "mode": "hosted",
        "is_external": False,
        "is_public": False,
        "url_private": private_url(state, file),
        "url_private_download": private_url(state, file, download=True),
    }


def files_json(state: SlackState, file_ids: list[str]) -> list[dict[str, Any]]:
    return [file_json(state, state.files[file_id]) for file_id in file_ids if file_id in state.files]
