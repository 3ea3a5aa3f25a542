"""Writes one agent reply into a Slack thread, as the text grows.

The only module that knows how Slack shows a reply: chat streaming (chat.startStream / appendStream
/ stopStream) in a chat thread, post + chat.update where a stream is refused, unavailable or
expired, or one post at the end (output: final). Writes are coalesced: the latest text wins and no
message is written faster than ``min_interval``.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

logger = logging.getLogger(__name__)

NO_OUTPUT_TEXT = "(no output)"
# markdown_text holds up to 12,000 characters in a post, an update or a stream.
MESSAGE_TEXT_LIMIT = 12_000
REPLY_METADATA_EVENT = "kourier_reply"

# Errors that mean chat streaming cannot be used for this reply: fall back to post + update.
STREAM_REFUSED_ERRORS = frozenset(
    {
        "feature_not_enabled",
        "unknown_method",
        "method_deprecated",
        "channel_type_not_supported",
        "missing_recipient_user_id",
        "missing_recipient_team_id",
        "user_not_found",
        "invalid_thread_ts",
        "not_allowed_token_type",
        "missing_scope",
    }
)
# Errors that mean the stream is over (expired, or the person stopped it): finish with chat.update.
STREAM_ENDED_ERRORS = frozenset(
    {"message_not_in_streaming_state", "stopped_by_user", "streaming_mode_mismatch"}
)


@dataclass(frozen=True)
class ReplyTarget:
    channel_id: str
    thread_ts: str
    recipient_user_id: str | None  # the person who wrote: Slack shows a chat thread's stream to them
    recipient_team_id: str | None
    reply_key: str  # the product's key of this reply, kept in the message's metadata


def split_for_messages(text: str, limit: int = MESSAGE_TEXT_LIMIT) -> list[str]:
    """Splits a long answer into message-sized parts, at line breaks where it can."""
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind("\n", 0, limit)
        if cut <= limit // 2:
            cut = limit
        parts.append(rest[:cut])
        rest = rest[cut:].lstrip("\n")
    parts.append(rest)
    return parts


class SlackReply:
    """One reply in a thread. Call show() as the text grows and finish() once at the end."""

    def __init__(
        self,
        client: AsyncWebClient,
        target: ReplyTarget,
        *,
        live: bool,
        stream: bool,
        min_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        existing_ts: str | None = None,
        on_posted: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._client = client
        self._target = target
        self._live = live
        self._use_stream = live and stream
        self._min_interval = min_interval
        self._clock = clock
        self.ts: str | None = None
        self._streaming = False
        self._streamed = ""  # what the stream has shown so far
        self._written = ""  # what the last post or update showed
        self._latest = ""
        self._last_write_at = float("-inf")
        self._pending: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._on_posted = on_posted
        # A reply an earlier runner began: it may still stream, so it is ended before it is rewritten.
        self._adopted = existing_ts is not None
        if existing_ts is not None:
            self.ts, self._use_stream = existing_ts, False

    @property
    def metadata(self) -> dict[str, Any]:
        return {"event_type": REPLY_METADATA_EVENT, "event_payload": {"reply": self._target.reply_key}}

    async def show(self, text: str) -> None:
        """Asks for the reply to show text; the write happens now or when the throttle allows."""
        if not self._live:
            return
        self._latest = text
        if self._pending is None or self._pending.done():
            delay = max(0.0, self._last_write_at + self._min_interval - self._clock())
            self._pending = asyncio.create_task(self._flush_after(delay))

    async def finish(self, text: str) -> None:
        """Writes the final text and ends the stream; an empty answer shows (no output)."""
        await self._drop_pending_write()
        self._latest = text
        async with self._lock:
            await self._write_final(text or NO_OUTPUT_TEXT)

    async def stop(self) -> None:
        """Ends the reply with the text it has so far (a failure notice follows as a message of its own)."""
        await self._drop_pending_write()
        async with self._lock:
            latest = self._latest[:MESSAGE_TEXT_LIMIT]
            if self._streaming:
                await self._stop_stream(
                    extra=latest[len(self._streamed) :] if latest.startswith(self._streamed) else ""
                )
            elif self.ts is None and latest:
                await self._post(latest)
            elif latest and latest != self._written:
                await self._update(latest)

    async def _drop_pending_write(self) -> None:
        """Drops a write that waits for the throttle; one already talking to Slack is let finish, since
        cancelling it could leave a message Slack made that this reply would not know about."""
        pending = self._pending
        if pending is None or pending.done():
            return
        if self._lock.locked():
            await asyncio.wait({pending})
        else:
            pending.cancel()

    async def _flush_after(self, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        async with self._lock:
            await self._write_progress(self._latest)

    async def _write_progress(self, text: str) -> None:
        if not text:
            return
        text = text[:MESSAGE_TEXT_LIMIT]
        streams = self._use_stream and (self._streaming or self.ts is None)
        if streams and await self._stream_progress(text):
            return
        if self.ts is None:
            await self._post(text)
        elif text != self._written:
            await self._update(text)

    async def _stream_progress(self, text: str) -> bool:
        """Shows text through the stream; False when the reply must go on with post + update."""
        try:
            if not self._streaming:
                response = await self._call(
                    "chat_startStream",
                    channel=self._target.channel_id,
                    thread_ts=self._target.thread_ts,
                    recipient_user_id=self._target.recipient_user_id,
                    recipient_team_id=self._target.recipient_team_id,
                    chunks=[{"type": "markdown_text", "text": text}],
                )
                self.ts, self._streaming, self._streamed = response["ts"], True, text
                await self._posted()
                return True
            if not text.startswith(self._streamed):
                # The text was rewritten; a stream can only append, so the end of the turn rewrites it.
                return True
            delta = text[len(self._streamed) :]
            if delta:
                await self._call(
                    "chat_appendStream",
                    channel=self._target.channel_id,
                    ts=self.ts,
                    chunks=[{"type": "markdown_text", "text": delta}],
                )
                self._streamed = text
            return True
        except SlackApiError as exc:
            error = exc.response.get("error", "")
            if error in STREAM_REFUSED_ERRORS and not self._streaming:
                logger.info(
                    "slack.stream_refused", extra={"error": error, "channel": self._target.channel_id}
                )
                self._use_stream = False
                return False
            if error in STREAM_ENDED_ERRORS and self._streaming:
                logger.info("slack.stream_ended", extra={"error": error, "channel": self._target.channel_id})
                self._streaming = False
                self._use_stream = False
                self._written = self._streamed
                return False
            raise

    async def _write_final(self, text: str) -> None:
        parts = split_for_messages(text)
        first, rest = parts[0], parts[1:]
        if self._streaming:
            extra = first[len(self._streamed) :] if first.startswith(self._streamed) else ""
            await self._stop_stream(extra=extra)
            if self._streamed != first:
                await self._update(first)
        elif self.ts is None:
            await self._post(first)
        elif first != self._written:
            await self._update(first)
        for part in rest:
            await self._call(
                "chat_postMessage",
                channel=self._target.channel_id,
                thread_ts=self._target.thread_ts,
                markdown_text=part,
                metadata=self.metadata,
            )

    async def _stop_stream(self, *, extra: str) -> None:
        try:
            await self._call(
                "chat_stopStream",
                channel=self._target.channel_id,
                ts=self.ts,
                chunks=[{"type": "markdown_text", "text": extra}] if extra else [],
                metadata=self.metadata,
            )
            self._streamed += extra
        except SlackApiError as exc:
            if exc.response.get("error") not in STREAM_ENDED_ERRORS:
                raise
        self._streaming = False
        self._written = self._streamed

    async def _post(self, text: str) -> None:
        response = await self._call(
            "chat_postMessage",
            channel=self._target.channel_id,
            thread_ts=self._target.thread_ts,
            markdown_text=text,
            metadata=self.metadata,
        )
        self.ts, self._written = response["ts"], text
        await self._posted()

    async def _posted(self) -> None:
        if self._on_posted is not None and self.ts is not None:
            await self._on_posted(self.ts)

    async def _update(self, text: str) -> None:
        if self._adopted:
            self._adopted = False
            try:
                await self._call("chat_stopStream", channel=self._target.channel_id, ts=self.ts, chunks=[])
            except SlackApiError as exc:
                if exc.response.get("error") not in STREAM_ENDED_ERRORS:
                    raise
        await self._call("chat_update", channel=self._target.channel_id, ts=self.ts, markdown_text=text)
        self._written = text

    async def _call(self, method: str, **kwargs: Any):
        self._last_write_at = self._clock()
        return await getattr(self._client, method)(**kwargs)


async def post_notice(client: AsyncWebClient, channel_id: str, thread_ts: str, text: str) -> str:
    """Posts a short fixed notice in a thread (a failure, an expiry)."""
    response = await client.chat_postMessage(channel=channel_id, thread_ts=thread_ts, text=text)
    return response["ts"]


async def add_reaction(client: AsyncWebClient, channel_id: str, ts: str, name: str) -> None:
    try:
        await client.reactions_add(channel=channel_id, timestamp=ts, name=name)
    except SlackApiError as exc:
        if exc.response.get("error") != "already_reacted":
            raise


async def remove_reaction(client: AsyncWebClient, channel_id: str, ts: str, name: str) -> None:
    try:
        await client.reactions_remove(channel=channel_id, timestamp=ts, name=name)
    except SlackApiError as exc:
        if exc.response.get("error") != "no_reaction":
            raise
