"""The fake's Web API methods (all but the stream methods, which are in streams.py).

Each method checks its arguments as Slack does and raises ``SlackError`` with Slack's error name;
errors, argument names and answer shapes follow docs/slack-platform.md §3, §4.6 and Slack's method
reference.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

from . import events
from .blocks import MAX_BLOCKS_PER_MESSAGE, block_problems, metadata_error
from .emoji import is_known_emoji
from .errors import SlackError, invalid_arguments
from .shapes import auth_test_json, message_json, rendered_text, user_json
from .state import ASSISTANT_STATUS_TIMEOUT, AssistantStatus, Channel, Ephemeral, Message, opened_im
from .web_api import Call, web_method

MAX_POSTED_TEXT = 40_000  # chat.postMessage truncates longer text, with the warning message_truncated
MAX_UPDATED_TEXT = 4_000  # chat.update refuses longer text: msg_too_long
MAX_MARKDOWN_TEXT = 12_000
MAX_DISTINCT_REACTIONS = 50  # too_many_emoji
MAX_LOADING_MESSAGES = 10
MAX_LOADING_MESSAGE_LENGTH = 50
_TS = re.compile(r"^\d+\.\d+$")


# Message content shared by postMessage, postEphemeral and update.


@dataclass
class MessageContent:
    text: str | None = None
    blocks: list[dict[str, Any]] | None = None
    markdown_text: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.text is None and self.blocks is None and self.markdown_text is None


def read_content(
    call: Call, *, max_text: int | None = None, truncate_text_at: int | None = None
) -> MessageContent:
    """text / blocks / markdown_text, checked as Slack checks them."""
    args = call.args
    content = MessageContent(text=args.text("text"), markdown_text=args.text("markdown_text"))
    if content.markdown_text is not None and (args.given("text") or args.given("blocks")):
        raise SlackError("markdown_text_conflict")
    if args.given("blocks"):
        content.blocks = read_blocks(call, "blocks")
    if content.markdown_text is not None and len(content.markdown_text) > MAX_MARKDOWN_TEXT:
        raise SlackError("msg_too_long")
    if content.text is not None:
        if max_text is not None and len(content.text) > max_text:
            raise SlackError("msg_too_long")
        if truncate_text_at is not None and len(content.text) > truncate_text_at:
            content.text = content.text[:truncate_text_at]
            content.warnings.append("message_truncated")
    if content.empty and args.given("attachments"):
        content.text = ""  # attachments alone are content: chat.postMessage keeps them
    return content


def read_blocks(call: Call, name: str, *, too_many_error: str | None = None) -> list[dict[str, Any]]:
    """A block list Slack would accept, or the error it answers.

    ``too_many_error``: the error a method uses for more than 50 blocks when it has its own
    (chat.stopStream: msg_blocks_too_many); otherwise too many blocks is one more invalid_blocks problem.
    """
    blocks = call.args.raw(name)
    if not isinstance(blocks, list):
        raise SlackError("invalid_blocks_format")
    if too_many_error is not None and len(blocks) > MAX_BLOCKS_PER_MESSAGE:
        raise SlackError(too_many_error)
    problems = block_problems(blocks, allow_task_cards=call.workspace.task_cards_enabled, pointer=f"/{name}")
    if problems:
        raise SlackError(
            "invalid_blocks",
            errors=problems,
            response_metadata={"messages": [f"[ERROR] {p}" for p in problems]},
        )
    return blocks


def read_attachments(call: Call) -> list[dict[str, Any]]:
    """chat.postMessage's legacy ``attachments``: a JSON array of objects, else invalid_attachments."""
    if not call.args.given("attachments"):
        return []
    attachments = call.args.raw("attachments")
    if not isinstance(attachments, list) or not all(isinstance(a, dict) for a in attachments):
        raise SlackError("invalid_attachments")
    return [dict(attachment) for attachment in attachments]


def read_metadata(call: Call) -> dict[str, Any] | None:
    if not call.args.given("metadata"):
        return None
    metadata = call.args.raw("metadata")
    error = metadata_error(metadata)
    if error:
        raise SlackError(error)
    return dict(metadata)


def read_thread_ts(call: Call, channel: Channel, name: str = "thread_ts") -> str | None:
    """The root ts a reply goes under. A reply's ts stands for its root; an unknown ts is accepted as is."""
    if not call.args.given(name):
        return None
    ts = call.args.text(name) or ""
    if not _TS.match(ts):
        raise SlackError(
            "invalid_thread_ts", response_metadata={"messages": [f"[ERROR] {ts!r} is not a valid thread_ts"]}
        )
    message = call.state.message(channel.id, ts)
    return message.root_ts if message is not None else ts


def new_bot_message(call: Call, channel: Channel, thread_ts: str | None) -> Message:
    return Message(
        channel=channel.id,
        ts=call.state.next_ts(),
        team_id=call.workspace.team_id,
        user=call.app.bot_user_id,
        bot_id=call.app.bot_id,
        app_id=call.app.app_id,
        thread_ts=thread_ts,
    )


def publish_bot_message(call: Call, message: Message, channel: Channel) -> None:
    """What follows the app posting: its thread's assistant status clears, and the post comes back as an event."""
    history = call.state.assistant_statuses.get((channel.id, message.root_ts))
    if history and history[-1].status:
        history.append(
            AssistantStatus(status="", loading_messages=[], set_at=call.now, cleared_by_reply=True)
        )
    call.emit(events.message_event(call.state, message, channel))


def with_warnings(body: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    if warnings:
        body["warning"] = ",".join(warnings)
        body["response_metadata"] = {"warnings": warnings}
    return body


# auth


@web_method("auth.test")
def auth_test(call: Call) -> dict[str, Any]:
    return auth_test_json(call.workspace)


# chat


@web_method("chat.postMessage")
def chat_post_message(call: Call) -> dict[str, Any]:
    # A person's user id as the channel: the message goes to their direct messages with the app.
    person = call.state.user_in(call.workspace.team_id, call.args.text("channel") or "")
    channel = opened_im(call.state, call.workspace, person.id) if person else call.postable_channel()
    content = read_content(call, truncate_text_at=MAX_POSTED_TEXT)
    if content.empty:
        raise SlackError("no_text")
    metadata = read_metadata(call)
    message = new_bot_message(call, channel, read_thread_ts(call, channel))
    message.text = content.markdown_text if content.markdown_text is not None else content.text or ""
    message.blocks = content.blocks or []
    message.attachments = read_attachments(call)
    message.metadata = metadata
    call.state.add_message(message)
    publish_bot_message(call, message, channel)
    body = {"channel": channel.id, "ts": message.ts, "message": message_json(call.state, message)}
    return with_warnings(body, content.warnings)


@web_method("chat.update")
def chat_update(call: Call) -> dict[str, Any]:
    channel = call.channel()
    message = call.message(channel)
    if not call.is_own(message):
        raise SlackError("cant_update_message")
    if message.stream is not None and message.stream.is_streaming(call.now):
        raise SlackError("streaming_state_conflict")
    content = read_content(call, max_text=MAX_UPDATED_TEXT)
    metadata = read_metadata(call)
    if content.empty and metadata is None:
        raise SlackError("no_text")
    previous = message_json(call.state, message, include_metadata=False)
    apply_update(message, content, edited_by=call.app.bot_user_id, edit_ts=call.state.next_ts())
    if metadata is not None:
        message.metadata = metadata
    call.emit(events.message_changed_event(call.state, message, previous, channel, call.state.next_ts()))
    return {
        "channel": channel.id,
        "ts": message.ts,
        "text": rendered_text(message),
        "message": message_json(call.state, message),
    }


def apply_update(message: Message, content: MessageContent, *, edited_by: str, edit_ts: str) -> None:
    """Rewrite a message as chat.update does: new text without blocks drops the old blocks (§1.5)."""
    if content.empty:
        return
    if message.stream is not None:
        message.stream.superseded = True
    if content.markdown_text is not None:
        message.text, message.blocks = content.markdown_text, []
    else:
        if content.text is not None:
            message.text = content.text
        message.blocks = content.blocks if content.blocks is not None else []
    # Slack flags an edit of the text as "(edited)"; replacing only the blocks shows no flag.
    if content.text is not None or content.markdown_text is not None:
        message.edited = {"user": edited_by, "ts": edit_ts}


@web_method("chat.delete")
def chat_delete(call: Call) -> dict[str, Any]:
    channel = call.channel()
    message = call.message(channel)
    if not call.is_own(message):
        raise SlackError("cant_delete_message")
    previous = message_json(call.state, message, include_metadata=False)
    message.deleted = True
    if message.stream is not None and message.stream.state == "streaming":
        message.stream.state = "stopped"
        message.stream.ended_at = call.now
    call.emit(events.message_deleted_event(previous, channel, call.state.next_ts()))
    return {"channel": channel.id, "ts": message.ts}


@web_method("chat.postEphemeral")
def chat_post_ephemeral(call: Call) -> dict[str, Any]:
    channel = call.postable_channel()
    user = call.args.text("user")
    if not user or user not in channel.members:
        raise SlackError("user_not_in_channel")
    content = read_content(call, max_text=MAX_POSTED_TEXT)
    if content.empty:
        raise SlackError("no_text")
    ephemeral = Ephemeral(
        ts=call.state.next_ts(),
        channel=channel.id,
        user=user,
        text=content.markdown_text if content.markdown_text is not None else content.text or "",
        blocks=content.blocks or [],
        thread_ts=read_thread_ts(call, channel),
        bot_id=call.app.bot_id,
    )
    call.state.ephemerals.append(ephemeral)
    return {"message_ts": ephemeral.ts}


# reactions


def _reaction_target(call: Call) -> tuple[str, Message]:
    args = call.args
    name = args.text("name")
    if not args.given("channel") or not args.given("timestamp"):
        raise SlackError("no_item_specified")
    if not name:
        raise SlackError("invalid_name")
    channel = call.channel()
    if channel.is_archived:
        raise SlackError("is_archived")
    if not _TS.match(args.text("timestamp") or ""):
        raise SlackError("bad_timestamp")
    message = call.message(channel, "timestamp")
    return name, message


@web_method("reactions.add")
def reactions_add(call: Call) -> dict[str, Any]:
    name, message = _reaction_target(call)
    if not is_known_emoji(name, call.workspace.custom_emoji):
        raise SlackError("invalid_name")
    reactors = message.reactions.get(name, [])
    if call.app.bot_user_id in reactors:
        raise SlackError("already_reacted")
    if not reactors and len([n for n, users in message.reactions.items() if users]) >= MAX_DISTINCT_REACTIONS:
        raise SlackError("too_many_emoji")
    message.reactions[name] = [*reactors, call.app.bot_user_id]
    return {}


@web_method("reactions.remove")
def reactions_remove(call: Call) -> dict[str, Any]:
    name, message = _reaction_target(call)
    reactors = message.reactions.get(name, [])
    if call.app.bot_user_id not in reactors:
        raise SlackError("no_reaction")
    remaining = [user for user in reactors if user != call.app.bot_user_id]
    if remaining:
        message.reactions[name] = remaining
    else:
        del message.reactions[name]
    return {}


# conversations


def encode_cursor(kind: str, value: str) -> str:
    """Slack's opaque cursors are base64 of "<kind>:<value>", e.g. "user:U061F7AUR"."""
    return base64.b64encode(f"{kind}:{value}".encode()).decode()


def decode_cursor(cursor: str, kind: str) -> str:
    try:
        decoded = base64.b64decode(cursor.encode(), validate=True).decode()
    except ValueError:
        raise SlackError("invalid_cursor") from None
    prefix = f"{kind}:"
    if not decoded.startswith(prefix):
        raise SlackError("invalid_cursor")
    return decoded[len(prefix) :]


def _page_limit(call: Call, default: int, maximum: int) -> int:
    limit = call.args.integer("limit", default, "invalid_limit")
    if limit < 1 or limit > maximum:
        raise SlackError("invalid_limit")
    return limit


@web_method("conversations.members")
def conversations_members(call: Call) -> dict[str, Any]:
    channel = call.channel()
    limit = _page_limit(call, default=100, maximum=1000)
    members = list(channel.members)
    start = 0
    cursor = call.args.text("cursor")
    if cursor:
        first = decode_cursor(cursor, "user")
        if first not in members:
            raise SlackError("invalid_cursor")
        start = members.index(first)
    page = members[start : start + limit]
    rest = members[start + limit :]
    return {
        "members": page,
        "response_metadata": {"next_cursor": encode_cursor("user", rest[0]) if rest else ""},
    }


@web_method("conversations.replies")
def conversations_replies(call: Call) -> dict[str, Any]:
    channel = call.channel()
    ts = call.args.required_text("ts")
    target = call.state.message(channel.id, ts) if _TS.match(ts) else None
    root = call.state.message(channel.id, target.root_ts) if target is not None else None
    if root is None or (root.deleted and not call.state.replies(root)):
        raise SlackError("thread_not_found")
    limit = _page_limit(call, default=1000, maximum=1000)
    include_metadata = call.args.flag("include_all_metadata")
    replies = [r for r in call.state.replies(root) if _in_range(call, r.ts)]
    cursor = call.args.text("cursor")
    start = 0
    if cursor:
        first_ts = decode_cursor(cursor, "next_ts")
        start = next((i for i, reply in enumerate(replies) if reply.ts == first_ts), -1)
        if start < 0:
            raise SlackError("invalid_cursor")
    # Slack puts the thread's root at the top of every page, counted in the page's limit.
    show_root = _in_range(call, root.ts)
    page_size = max(1, limit - 1) if show_root else limit
    page = replies[start : start + page_size]
    rest = replies[start + page_size :]
    messages = ([_thread_message_json(call, root, include_metadata)] if show_root else []) + [
        _thread_message_json(call, reply, include_metadata) for reply in page
    ]
    body: dict[str, Any] = {"messages": messages, "has_more": bool(rest)}
    body["response_metadata"] = {"next_cursor": encode_cursor("next_ts", rest[0].ts) if rest else ""}
    return body


@web_method("conversations.history")
def conversations_history(call: Call) -> dict[str, Any]:
    """The channel's top-level messages, newest first, within oldest/latest (replies stay in threads)."""
    channel = call.channel()
    limit = _page_limit(call, default=100, maximum=999)
    include_metadata = call.args.flag("include_all_metadata")
    top_level = [
        m
        for m in call.state.messages.get(channel.id, {}).values()
        if not m.is_reply and not m.deleted and _in_range(call, m.ts)
    ]
    newest_first = sorted(top_level, key=lambda m: float(m.ts), reverse=True)
    cursor = call.args.text("cursor")
    start = 0
    if cursor:
        first_ts = decode_cursor(cursor, "next_ts")
        start = next((i for i, m in enumerate(newest_first) if m.ts == first_ts), -1)
        if start < 0:
            raise SlackError("invalid_cursor")
    page, rest = newest_first[start : start + limit], newest_first[start + limit :]
    return {
        "messages": [message_json(call.state, m, include_metadata=include_metadata) for m in page],
        "has_more": bool(rest),
        "response_metadata": {"next_cursor": encode_cursor("next_ts", rest[0].ts) if rest else ""},
    }


def _thread_message_json(call: Call, message: Message, include_metadata: bool) -> dict[str, Any]:
    if message.deleted:  # a deleted root that still has replies stays as a tombstone
        return {
            "type": "message",
            "subtype": "tombstone",
            "ts": message.ts,
            "thread_ts": message.ts,
            "text": "This message was deleted.",
            "user": "USLACKBOT",
            "hidden": True,
            "reply_count": len(call.state.replies(message)),
        }
    return message_json(call.state, message, include_metadata=include_metadata)


def _in_range(call: Call, ts: str) -> bool:
    """conversations.replies' oldest/latest/inclusive window."""
    inclusive = call.args.flag("inclusive")
    value = float(ts)
    oldest, latest = call.args.text("oldest"), call.args.text("latest")
    if oldest and (value < float(oldest) or (value == float(oldest) and not inclusive)):
        return False
    return not (latest and (value > float(latest) or (value == float(latest) and not inclusive)))


# users and user groups


@web_method("users.info")
def users_info(call: Call) -> dict[str, Any]:
    user_id = call.args.text("user")
    user = call.state.user_in(call.workspace.team_id, user_id) if user_id else None
    if user is None:
        raise SlackError("user_not_found")
    return {"user": user_json(user)}


@web_method("usergroups.users.list")
def usergroups_users_list(call: Call) -> dict[str, Any]:
    if not call.workspace.usergroups_available:
        raise SlackError("plan_upgrade_required")
    group_id = call.args.text("usergroup")
    group = call.state.usergroups.get(group_id) if group_id else None
    if group is None or group.team_id != call.workspace.team_id:
        raise SlackError("no_such_subteam")
    if group.disabled and not call.args.flag("include_disabled"):
        raise SlackError("no_such_subteam")
    return {"users": list(group.users)}


# assistant


@web_method("assistant.threads.setStatus")
def assistant_threads_set_status(call: Call) -> dict[str, Any]:
    support = call.workspace.assistant_status_support
    if support == "unknown_method":
        raise SlackError("unknown_method", req_method=call.method)
    if support == "missing_scope":
        raise SlackError("missing_scope", needed="assistant:write", provided="chat:write,reactions:write")
    channel_id = call.args.text("channel_id")
    channel = call.state.channel_in(call.workspace.team_id, channel_id) if channel_id else None
    if channel is None:
        raise SlackError("channel_not_found", detail="Invalid channel_id")
    thread_ts = read_thread_ts(call, channel) if call.args.given("thread_ts") else None
    if thread_ts is None:
        raise invalid_arguments("missing required field: thread_ts")
    status = call.args.text("status")
    if status is None:
        raise invalid_arguments("missing required field: status")
    loading_messages = call.args.raw("loading_messages") or []
    if not isinstance(loading_messages, list) or len(loading_messages) > MAX_LOADING_MESSAGES:
        raise invalid_arguments(f"loading_messages must be an array of 1 to {MAX_LOADING_MESSAGES} strings")
    for text in loading_messages:
        if not isinstance(text, str) or not 1 <= len(text) <= MAX_LOADING_MESSAGE_LENGTH:
            raise invalid_arguments(
                f"each loading message must be 1 to {MAX_LOADING_MESSAGE_LENGTH} characters"
            )
    history = call.state.assistant_statuses.setdefault((channel.id, thread_ts), [])
    history.append(AssistantStatus(status=status, loading_messages=list(loading_messages), set_at=call.now))
    return {}


def current_assistant_status(history: list[AssistantStatus], now: float) -> str | None:
    """The status a person sees: the last one set, unless cleared with "" or timed out after two minutes."""
    if not history:
        return None
    latest = history[-1]
    if not latest.status or now >= latest.set_at + ASSISTANT_STATUS_TIMEOUT:
        return None
    return latest.status
