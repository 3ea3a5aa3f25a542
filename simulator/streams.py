"""chat.startStream / chat.appendStream / chat.stopStream and the stream state machine.

docs/slack-platform.md §1: a stream starts, takes appends, and stops; it expires ``stream_lifetime``
seconds after it starts, appends or not. It is locked to the content form of its first payload
(top-level ``markdown_text`` or ``chunks``); one call may not carry both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .blocks import chunk_problems
from .errors import SlackError, invalid_arguments
from .methods import (
    MAX_MARKDOWN_TEXT,
    new_bot_message,
    publish_bot_message,
    read_blocks,
    read_metadata,
    read_thread_ts,
)
from .state import Message, Stream, StreamMode, StreamState, TaskCard
from .web_api import Call, web_method

TASK_DISPLAY_MODES = frozenset({"timeline", "plan"})
SESSION_STATUSES = frozenset({"active", "processing", "suspended", "closed"})


@dataclass
class StreamPayload:
    """The content one stream call carries: top-level markdown_text, or chunks, or nothing."""

    markdown_text: str | None = None
    chunks: list[dict[str, Any]] | None = None

    @property
    def mode(self) -> StreamMode | None:
        """The content form this payload commits the stream to. An empty chunk list commits to nothing."""
        if self.markdown_text:
            return "markdown_text"
        if self.chunks:
            return "chunks"
        return None


def read_payload(call: Call) -> StreamPayload:
    args = call.args
    if args.given("markdown_text") and args.given("chunks"):
        raise SlackError("cannot_provide_both_markdown_text_and_chunks")
    payload = StreamPayload(markdown_text=args.text("markdown_text"))
    if payload.markdown_text is not None and len(payload.markdown_text) > MAX_MARKDOWN_TEXT:
        raise SlackError("msg_too_long")
    if args.given("chunks"):
        chunks = args.raw("chunks")
        problems = chunk_problems(chunks, allow_task_cards=call.workspace.task_cards_enabled)
        if problems:
            raise SlackError(
                "invalid_chunks",
                errors=problems,
                response_metadata={"messages": [f"[ERROR] {p}" for p in problems]},
            )
        payload.chunks = chunks
    return payload


def lock_mode(stream: Stream, payload: StreamPayload) -> None:
    mode = payload.mode
    if mode is None:
        return
    if stream.mode is not None and stream.mode != mode:
        raise SlackError("streaming_mode_mismatch")
    stream.mode = mode


def apply_payload(stream: Stream, payload: StreamPayload) -> None:
    if payload.markdown_text:
        stream.text += payload.markdown_text
    for chunk in payload.chunks or []:
        kind = chunk["type"]
        if kind == "markdown_text":
            stream.text += chunk["text"]
        elif kind == "task_update":
            _update_card(stream, chunk)
        elif kind == "plan_update":
            stream.plan_title = chunk["title"]
        elif kind == "blocks":
            stream.chunk_blocks.extend(chunk["blocks"])


def _update_card(stream: Stream, chunk: dict[str, Any]) -> None:
    """A task_update with a known id updates that card; a new id adds a card after the others."""
    card = stream.cards.get(chunk["id"])
    if card is None:
        card = stream.cards[chunk["id"]] = TaskCard(
            id=chunk["id"], title=chunk["title"], status=chunk["status"]
        )
    card.title = chunk["title"]
    card.status = chunk["status"]
    if "details" in chunk:
        card.details = chunk["details"]
    if "output" in chunk:
        card.output = chunk["output"]
    if "sources" in chunk:
        card.sources = list(chunk["sources"])


def _streaming_message(call: Call) -> tuple[Message, Stream]:
    """The message named by channel/ts, if it is this app's and still streaming."""
    channel = call.channel()
    call.args.required_text("ts")
    message = call.message(channel)
    if not call.is_own(message):
        raise SlackError("message_not_owned_by_app")
    stream = message.stream
    if stream is not None and stream.state == "stopped_by_user" and call.method == "chat.appendStream":
        raise SlackError("stopped_by_user")
    if stream is None or not stream.is_streaming(call.now):
        raise SlackError("message_not_in_streaming_state")
    return message, stream


@web_method("chat.startStream")
def chat_start_stream(call: Call) -> dict[str, Any]:
    if not call.workspace.streams_enabled:
        raise SlackError("feature_not_enabled")
    channel = call.postable_channel()
    thread_ts = read_thread_ts(call, channel)
    if thread_ts is None and channel.is_im:
        # Since 2026-08-20 thread_ts is optional, but a top-level stream "is only supported in channels".
        raise SlackError("channel_type_not_supported")
    recipient_user_id = call.args.text("recipient_user_id")
    recipient_team_id = call.args.text("recipient_team_id")
    if not channel.is_im:  # "Required when streaming to channels"
        if not recipient_user_id:
            raise SlackError("missing_recipient_user_id")
        if not recipient_team_id:
            raise SlackError("missing_recipient_team_id")
    if (
        recipient_user_id
        and call.state.user_in(recipient_team_id or call.workspace.team_id, recipient_user_id) is None
    ):
        raise SlackError("user_not_found")
    display_mode = call.args.text("task_display_mode") or "timeline"
    if display_mode not in TASK_DISPLAY_MODES:
        raise invalid_arguments(f"task_display_mode must be one of {sorted(TASK_DISPLAY_MODES)}")
    payload = read_payload(call)

    message = new_bot_message(call, channel, thread_ts)
    stream = message.stream = Stream(
        started_at=call.now,
        expires_at=call.now + call.workspace.stream_lifetime,
        recipient_user_id=recipient_user_id,
        recipient_team_id=recipient_team_id,
        task_display_mode=display_mode,
    )
    lock_mode(stream, payload)
    apply_payload(stream, payload)
    call.state.add_message(message)
    publish_bot_message(call, message, channel)
    return {"channel": channel.id, "ts": message.ts}


@web_method("chat.appendStream")
def chat_append_stream(call: Call) -> dict[str, Any]:
    message, stream = _streaming_message(call)
    payload = read_payload(call)
    if payload.mode is None:
        raise SlackError("no_text")
    lock_mode(stream, payload)
    apply_payload(stream, payload)
    return {"channel": message.channel, "ts": message.ts}


@web_method("chat.stopStream")
def chat_stop_stream(call: Call) -> dict[str, Any]:
    message, stream = _streaming_message(call)
    payload = read_payload(call)
    blocks = (
        read_blocks(call, "blocks", too_many_error="msg_blocks_too_many") if call.args.given("blocks") else []
    )
    metadata = read_metadata(call)
    session_status = call.args.text("session_status")
    if session_status is not None and session_status not in SESSION_STATUSES:
        raise invalid_arguments(f"session_status must be one of {sorted(SESSION_STATUSES)}")
    lock_mode(stream, payload)
    apply_payload(stream, payload)
    stream.final_blocks = blocks
    if metadata is not None:
        message.metadata = metadata
    end_stream(stream, "stopped", call.now)
    return {
        "channel": message.channel,
        "ts": message.ts,
        "message": {
            "text": stream.text,
            "bot_id": message.bot_id,
            "ts": message.ts,
            "type": "message",
            "subtype": "bot_message",
        },
    }


def end_stream(stream: Stream, state: StreamState, now: float) -> None:
    """Stop taking content; views.py shows a card left in progress as failed (docs/slack-platform.md
    §1.3)."""
    stream.state = state
    stream.ended_at = now
