"""Posts made once (design invariant 3): the keys the product's posts carry, and the protocol with the
caller's record of the posts it intends (``Outbox``).

Every post carries its key in its message metadata: the reply its reply key
(``{"event_type": "kourier_reply", "event_payload": {"reply": <key>}}``), each part of a long answer
``{"reply": <key>, "part": "<n>"}``, a notice (a fixed sentence)
``{"event_type": "kourier_notice", "event_payload": {"notice": <key>}}``, an alert thread's note
``{"event_type": "kourier_note", "event_payload": {"note": <key>}}`` (an alert message's: alerts.py).
With an ``Outbox``, each post is recorded as intended before it is sent and confirmed with its ts
after:

- confirmed already (an earlier process posted it): it is not posted again; a reply takes the
  message over (writer.py);
- intended but not confirmed (an earlier process died around the call): the thread (for a post at
  the top level of the channel, the channel's history since the intent) is searched for the post's
  metadata (for a reply's stream, which has no metadata until it stops, for a message of this bot
  begun since the intent: threads.py); found, it is confirmed and used; else it is sent.

The record itself is the caller's (``sessions.outbox``: ``TurnOutbox`` for a turn's posts,
``ThreadOutbox`` for an alert thread's).
"""

from __future__ import annotations

import enum
import logging
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient

from .identity import identity_of
from .threads import find_channel_post, find_post, find_started_stream

logger = logging.getLogger(__name__)

REPLY_METADATA_EVENT = "kourier_reply"
NOTICE_METADATA_EVENT = "kourier_notice"
NOTE_METADATA_EVENT = "kourier_note"
PROMPT_METADATA_EVENT = "kourier_prompt"


class PostKind(enum.StrEnum):
    REPLY = "reply"
    NOTICE = "notice"  # a fixed sentence the thread is told (sessions/notices.py)
    PART = "part"  # a part of a long answer, after the reply's message
    PROMPT = "prompt"  # a question put to the channel
    ALERT = "alert"  # an alert message: the root of an alert thread
    NOTE = "note"  # an alert thread's note: an alert joined, fired again, resolved, held back
    FILE = "file"  # a file the agent returned, uploaded into the thread (sessions/files_out.py)


class IntentState(enum.Enum):
    NEW = "new"  # recorded now: nobody has sent it
    PENDING = "pending"  # recorded earlier and never confirmed: it may have reached Slack
    CONFIRMED = "confirmed"


@dataclass(frozen=True)
class Intent:
    state: IntentState
    ts: str | None = None  # a confirmed post's
    since: float | None = None  # when a pending intent was recorded (epoch seconds)


class Outbox(Protocol):
    """The caller's record of the posts it intends (sessions/outbox.py)."""

    async def intend(self, key: str, kind: PostKind, notice_text: str = "") -> Intent:
        """Records the post as intended unless it is recorded already; says what was recorded. A
        notice's fixed text is kept with it, so that it can be posted later if this attempt fails."""
        ...

    async def confirm(self, key: str, ts: str) -> None: ...


@dataclass(frozen=True)
class EarlierPost:
    """A post an earlier attempt made: confirmed, or (``PENDING``) found in the thread."""

    ts: str
    state: IntentState


def reply_metadata(reply_key: str) -> dict[str, Any]:
    return {"event_type": REPLY_METADATA_EVENT, "event_payload": {"reply": reply_key}}


def part_metadata(reply_key: str, part: int) -> dict[str, Any]:
    return {"event_type": REPLY_METADATA_EVENT, "event_payload": {"reply": reply_key, "part": str(part)}}


def notice_metadata(key: str) -> dict[str, Any]:
    return {"event_type": NOTICE_METADATA_EVENT, "event_payload": {"notice": key}}


def note_metadata(key: str) -> dict[str, Any]:
    return {"event_type": NOTE_METADATA_EVENT, "event_payload": {"note": key}}


def prompt_metadata(key: str) -> dict[str, Any]:
    return {"event_type": PROMPT_METADATA_EVENT, "event_payload": {"prompt": key}}


def part_key(reply_key: str, part: int) -> str:
    return f"{reply_key}:part-{part}"


def notice_key(reply_key: str, name: str = "notice") -> str:
    """The key of a notice a turn posts after its reply (one per name and turn)."""
    return f"{reply_key}:{name}"


async def intend_reply(
    client: AsyncWebClient,
    outbox: Outbox,
    reply_key: str,
    channel_id: str,
    thread_ts: str,
    *,
    streams: bool,
) -> EarlierPost | None:
    """Records a reply's message as intended before its first post or stream; the message an earlier
    attempt made, if one did. A pending intent is looked for by the reply's metadata and, for a reply
    that ``streams``, as a stream this bot began since the intent (a stream has no metadata until it
    stops). A message found is not confirmed here: the reply confirms the message it takes over."""
    intent = await outbox.intend(reply_key, PostKind.REPLY)
    if intent.state is IntentState.CONFIRMED and intent.ts is not None:
        return EarlierPost(intent.ts, intent.state)
    if intent.state is not IntentState.PENDING:
        return None
    found = await find_post(client, channel_id, thread_ts, reply_metadata(reply_key))
    if found is None and streams and intent.since is not None:
        bot_user_id = str((await identity_of(client))["user_id"])
        found = await find_started_stream(
            client, channel_id, thread_ts, bot_user_id=bot_user_id, since=intent.since
        )
    return EarlierPost(found["ts"], intent.state) if found is not None else None


async def _settled_intent(
    client: AsyncWebClient,
    outbox: Outbox | None,
    key: str,
    kind: PostKind,
    channel_id: str,
    thread_ts: str | None,
    metadata: dict[str, Any],
    notice_text: str = "",
) -> str | None:
    """Records the post as intended; the ts of the post when an earlier attempt is known to have made it."""
    if outbox is None:
        return None
    intent = await outbox.intend(key, kind, notice_text)
    if intent.state is IntentState.CONFIRMED:
        return intent.ts
    if intent.state is IntentState.PENDING:
        if thread_ts is None:
            # A top-level post is looked for among the channel's messages since it was intended (the
            # channel's whole history would be pages of calls); an intent always says when.
            found = await find_channel_post(client, channel_id, metadata, since=intent.since or 0.0)
        else:
            found = await find_post(client, channel_id, thread_ts, metadata)
        if found is not None:
            logger.info("slack.intended_post_found", extra={"kind": str(kind), "channel": channel_id})
            await outbox.confirm(key, found["ts"])
            return found["ts"]
    return None


async def post_once(
    client: AsyncWebClient,
    channel_id: str,
    thread_ts: str | None,
    *,
    key: str,
    kind: PostKind,
    metadata: dict[str, Any],
    outbox: Outbox | None = None,
    **content: Any,
) -> str:
    """Posts in the thread (``thread_ts`` None: at the top level of the channel) unless this post
    (``key``) was made already; the post's ts either way."""
    notice_text = str(content.get("text", "")) if kind is PostKind.NOTICE else ""
    ts = await _settled_intent(client, outbox, key, kind, channel_id, thread_ts, metadata, notice_text)
    if ts is not None:
        return ts
    # slack_sdk leaves out a None thread_ts: the post is then at the top level.
    response = await client.chat_postMessage(
        channel=channel_id, thread_ts=thread_ts, metadata=metadata, **content
    )
    if outbox is not None:
        await outbox.confirm(key, response["ts"])
    return response["ts"]


async def post_notice(
    client: AsyncWebClient,
    channel_id: str,
    thread_ts: str,
    text: str,
    *,
    key: str | None = None,
    outbox: Outbox | None = None,
) -> str:
    """Posts a short fixed notice in a thread (a failure, an expiry), once.

    ``key`` names the notice (``notice_key``: one per turn and notice); with ``outbox`` a notice
    confirmed earlier is not posted again. Without a key, only a post whose answer was lost is
    found instead of repeated.
    """
    key = key or f"notice-{uuid.uuid4().hex}"
    return await post_once(
        client,
        channel_id,
        thread_ts,
        key=key,
        kind=PostKind.NOTICE,
        metadata=notice_metadata(key),
        outbox=outbox,
        text=text,
    )
