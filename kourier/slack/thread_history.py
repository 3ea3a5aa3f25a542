"""The thread so far: the messages before a mention in a thread, read with conversations.replies, as
a person sees them (docs/slack-platform.md §4.6).

A thread's messages come oldest first, paged with Slack's cursor, the root at the top of every page;
``latest`` (exclusive) stops them at the mention. Only the latest ``keep`` replies are kept while the
pages are read, so a long thread costs a page of memory, not the thread. A thread of one page (almost
every thread) costs one call. What another app posted is often not in ``text`` but in attachments
(Alertmanager's own Slack receiver, paging tools) or blocks: ``seen_text`` renders what a person reads.

Pure but for ``read_thread_so_far``, the one call.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .faults import error_name

logger = logging.getLogger(__name__)

PAGE_SIZE = 200  # Slack: "no more than 200 results at a time" is recommended for paginated methods
MAX_PAGES = 10  # a thread past 2,000 messages carries its first 2,000 (docs/prompt-format.md)
# The read never holds a turn up longer than this, waits for a rate limit included.
READ_TIMEOUT_SECONDS = 20
# Messages a person does not see as part of the conversation.
_UNSHOWN_SUBTYPES = frozenset({"tombstone", "channel_join", "channel_leave", "group_join", "group_leave"})


@dataclass(frozen=True)
class EarlierMessage:
    """One earlier message of the thread, as its reader sees it."""

    ts: str
    text: str  # what a person sees: the text, the blocks, the attachments
    user_id: str | None  # a person's (None for an app's message)
    app_id: str | None = None  # an app's bot id (B...), for an app's message
    app_name: str | None = None  # the app's name as Slack shows it, when it tells it
    own: bool = False  # this app's own message


@dataclass(frozen=True)
class ThreadSoFar:
    root: EarlierMessage | None  # None when the root is not shown (deleted)
    replies: tuple[EarlierMessage, ...]  # the latest ``keep`` replies before the mention, oldest first
    replies_not_kept: int  # earlier replies read and not kept, or past the pages read


class ThreadUnread(Exception):
    """Slack did not give the thread: ``reason`` is Slack's error, or what stopped the read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def read_thread_so_far(
    client: AsyncWebClient, channel_id: str, thread_ts: str, *, before_ts: str, keep: int, bot_user_id: str
) -> ThreadSoFar:
    """The thread's root and its latest ``keep`` replies before ``before_ts``; raises ``ThreadUnread``
    when Slack refuses (missing_scope, not_in_channel, ...), a rate limit outlasts the client's wait,
    or Slack does not answer in time."""
    try:
        return await asyncio.wait_for(
            _read(client, channel_id, thread_ts, before_ts=before_ts, keep=keep, bot_user_id=bot_user_id),
            READ_TIMEOUT_SECONDS,
        )
    except SlackApiError as exc:
        raise ThreadUnread(error_name(exc) or "slack_error") from exc
    except TimeoutError as exc:
        raise ThreadUnread("timeout") from exc
    except OSError as exc:
        raise ThreadUnread(type(exc).__name__) from exc


async def _read(
    client: AsyncWebClient, channel_id: str, thread_ts: str, *, before_ts: str, keep: int, bot_user_id: str
) -> ThreadSoFar:
    root: EarlierMessage | None = None
    latest: deque[EarlierMessage] = deque(maxlen=max(keep, 0))
    read = 0
    cursor = ""
    for _ in range(MAX_PAGES):
        arguments: dict[str, Any] = {
            "channel": channel_id,
            "ts": thread_ts,
            "latest": before_ts,  # exclusive: the mention itself is the turn's own text
            "limit": PAGE_SIZE,
        }
        if cursor:
            arguments["cursor"] = cursor
        response = await client.conversations_replies(**arguments)
        for raw in response.get("messages") or []:
            message = earlier_message(raw, bot_user_id=bot_user_id)
            if raw.get("ts") == thread_ts:
                root = root or message  # every page repeats the root
            elif message is not None and raw.get("ts") != before_ts:
                read += 1
                if keep > 0:
                    latest.append(message)
        cursor = (response.get("response_metadata") or {}).get("next_cursor") or ""
        if not cursor:
            break
    else:
        logger.info("slack.thread_read_cut", extra={"channel_id": channel_id, "pages": MAX_PAGES})
    return ThreadSoFar(root=root, replies=tuple(latest), replies_not_kept=read - len(latest))


def earlier_message(raw: Mapping[str, Any], *, bot_user_id: str) -> EarlierMessage | None:
    """One message of conversations.replies as a reader sees it; None for what no person sees as a
    message (a deleted root's tombstone, a join, a hidden message, one with nothing to read)."""
    if raw.get("hidden") or raw.get("subtype") in _UNSHOWN_SUBTYPES:
        return None
    text = seen_text(raw)
    if not text:
        return None
    ts = str(raw.get("ts") or "")
    user = raw.get("user")
    bot_id = raw.get("bot_id")
    own = bool(bot_user_id) and user == bot_user_id
    if bot_id or raw.get("subtype") == "bot_message" or own:
        profile = raw.get("bot_profile") or {}
        name = raw.get("username") or profile.get("name")
        return EarlierMessage(
            ts=ts, text=text, user_id=None, app_id=bot_id or user, app_name=name or None, own=own
        )
    if not isinstance(user, str) or not user:
        return None
    return EarlierMessage(ts=ts, text=text, user_id=user)


def seen_text(raw: Mapping[str, Any]) -> str:
    """What a person reads of a message: its blocks (else its text), then each attachment."""
    parts = [_blocks_text(raw.get("blocks")) or _plain(raw.get("text"))]
    parts.extend(_attachment_text(attachment) for attachment in raw.get("attachments") or [])
    return "\n".join(part for part in parts if part).strip()


def _attachment_text(attachment: Any) -> str:
    """A legacy attachment as Slack's client lays it out; its ``fallback`` only when it shows nothing else."""
    if not isinstance(attachment, Mapping):
        return ""
    title = _plain(attachment.get("title"))
    link = _plain(attachment.get("title_link"))
    lines = [
        _plain(attachment.get("pretext")),
        _plain(attachment.get("author_name")),
        f"{title} ({link})" if title and link else title,
        _plain(attachment.get("text")),
        *(
            f"{_plain(f.get('title'))}: {_plain(f.get('value'))}".strip(": ")
            for f in attachment.get("fields") or []
            if isinstance(f, Mapping)
        ),
        _blocks_text(attachment.get("blocks")),
        _plain(attachment.get("footer")),
    ]
    shown = "\n".join(line for line in lines if line)
    return shown or _plain(attachment.get("fallback"))


def _blocks_text(blocks: Any) -> str:
    if not isinstance(blocks, list):
        return ""
    return "\n".join(text for text in (_block_text(block) for block in blocks) if text)


def _block_text(block: Any) -> str:
    if not isinstance(block, Mapping):
        return ""
    kind = block.get("type")
    if kind in ("section", "header"):
        fields = [_text_object(field) for field in block.get("fields") or []]
        return "\n".join(text for text in [_text_object(block.get("text")), *fields] if text)
    if kind == "markdown":
        return _plain(block.get("text"))
    if kind == "context":
        return " ".join(text for text in (_element_text(e) for e in block.get("elements") or []) if text)
    if kind == "rich_text":
        return "\n".join(_rich_text(element) for element in block.get("elements") or [])
    if kind == "image":
        return _text_object(block.get("title")) or _plain(block.get("alt_text"))
    return ""  # dividers, actions, inputs: nothing to read


def _text_object(value: Any) -> str:
    return _plain(value.get("text")) if isinstance(value, Mapping) else ""


def _element_text(element: Any) -> str:
    if not isinstance(element, Mapping):
        return ""
    return _plain(element.get("text")) if element.get("type") != "image" else _plain(element.get("alt_text"))


def _rich_text(element: Any) -> str:
    """A rich_text section, list, quote or preformatted block as its words."""
    if not isinstance(element, Mapping):
        return ""
    kind = element.get("type")
    children = element.get("elements") or []
    if kind == "rich_text_list":
        return "\n".join(f"- {_rich_text(item)}" for item in children)
    return "".join(_rich_text_piece(piece) for piece in children)


def _rich_text_piece(piece: Any) -> str:
    if not isinstance(piece, Mapping):
        return ""
    kind = piece.get("type")
    if kind == "text":
        return _plain(piece.get("text"), strip=False)
    if kind == "link":
        return _plain(piece.get("text")) or _plain(piece.get("url"))
    if kind == "user":
        return f"<@{piece.get('user_id', '')}>"
    if kind == "channel":
        return f"<#{piece.get('channel_id', '')}>"
    if kind == "usergroup":
        return f"<!subteam^{piece.get('usergroup_id', '')}>"
    if kind == "broadcast":
        return f"@{piece.get('range', '')}"
    if kind == "emoji":
        return f":{piece.get('name', '')}:"
    if kind in ("rich_text_section", "rich_text_quote", "rich_text_preformatted", "rich_text_list"):
        return _rich_text(piece)
    return ""


def _plain(value: Any, *, strip: bool = True) -> str:
    if not isinstance(value, str):
        return ""
    return value.strip() if strip else value
