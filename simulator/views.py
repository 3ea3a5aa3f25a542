"""Messages as a person in the channel sees them, for tests to assert on.

A stream shows its text so far, its task cards and blocks; once it has stopped or expired, a card
still in progress shows as an error (docs/slack-platform.md §1.3, "renders that card with a red error
icon"). Task cards sent as ``task_card``/``plan`` blocks show the same way as streamed ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .shapes import rendered_text, visible_blocks
from .state import Ephemeral, Message, SlackState, Stream


@dataclass(frozen=True)
class CardView:
    id: str
    title: str
    status: str  # as shown: "error" for a card a stream left in progress
    details: str | None = None
    output: str | None = None
    sources: list[dict[str, Any]] = field(default_factory=list)
    left_in_progress: bool = False  # the stream ended while this card said in_progress


@dataclass(frozen=True)
class MessageView:
    channel: str
    ts: str
    thread_ts: str | None
    user: str | None
    bot_id: str | None
    text: str
    blocks: list[dict[str, Any]]
    reactions: dict[str, list[str]]
    metadata: dict[str, Any] | None
    streaming: bool
    stream_phase: str | None  # streaming, stopped, stopped_by_user, expired; None for a plain message
    cards: list[CardView]
    plan_title: str | None
    edited: bool
    reply_count: int
    subtype: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)  # another app's legacy attachments
    files: list[str] = field(default_factory=list)  # the names of the files it shares
    file_ids: list[str] = field(default_factory=list)

    @property
    def is_bot(self) -> bool:
        return self.bot_id is not None

    @property
    def was_streamed(self) -> bool:
        return self.stream_phase is not None

    def card(self, card_id: str) -> CardView:
        for card in self.cards:
            if card.id == card_id:
                return card
        raise KeyError(f"no task card {card_id!r} in message {self.ts}; cards: {[c.id for c in self.cards]}")


@dataclass(frozen=True)
class EphemeralView:
    channel: str
    ts: str
    user: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None


def message_view(state: SlackState, message: Message) -> MessageView:
    now = state.now()
    stream = message.stream if message.stream is not None and not message.stream.superseded else None
    blocks = visible_blocks(message)
    if message.deleted:
        return _tombstone(state, message)
    cards = _stream_cards(stream, now) if stream is not None else []
    block_cards, block_plan_title = _block_cards(blocks)
    return MessageView(
        channel=message.channel,
        ts=message.ts,
        thread_ts=message.thread_ts,
        user=message.user,
        bot_id=message.bot_id,
        text=rendered_text(message),
        blocks=blocks,
        reactions={name: list(users) for name, users in message.reactions.items() if users},
        metadata=dict(message.metadata) if message.metadata is not None else None,
        streaming=message.stream is not None and message.stream.is_streaming(now),
        stream_phase=message.stream.phase(now) if message.stream is not None else None,
        cards=cards + block_cards,
        plan_title=(stream.plan_title if stream is not None else None) or block_plan_title,
        edited=message.edited is not None,
        reply_count=len(state.replies(message)),
        subtype=message.subtype,
        attachments=[dict(attachment) for attachment in message.attachments],
        files=[state.files[f].name for f in message.files if f in state.files],
        file_ids=[f for f in message.files if f in state.files],
    )


def thread_view(state: SlackState, root: Message) -> list[MessageView]:
    """The thread in order, root first. A deleted root shows as a tombstone while replies remain."""
    replies = state.replies(root)
    if root.deleted and not replies:
        return []
    return [message_view(state, root)] + [message_view(state, reply) for reply in replies]


def ephemeral_view(ephemeral: Ephemeral) -> EphemeralView:
    return EphemeralView(
        channel=ephemeral.channel,
        ts=ephemeral.ts,
        user=ephemeral.user,
        text=ephemeral.text,
        blocks=list(ephemeral.blocks),
        thread_ts=ephemeral.thread_ts,
    )


def _tombstone(state: SlackState, message: Message) -> MessageView:
    return MessageView(
        channel=message.channel,
        ts=message.ts,
        thread_ts=message.thread_ts,
        user=None,
        bot_id=None,
        text="This message was deleted.",
        blocks=[],
        reactions={},
        metadata=None,
        streaming=False,
        stream_phase=None,
        cards=[],
        plan_title=None,
        edited=False,
        reply_count=len(state.replies(message)),
        subtype="tombstone",
    )


def _stream_cards(stream: Stream, now: float) -> list[CardView]:
    ended = not stream.is_streaming(now)
    views = []
    for card in stream.cards.values():
        left_in_progress = ended and card.status == "in_progress"
        views.append(
            CardView(
                id=card.id,
                title=card.title,
                status="error" if left_in_progress else card.status,
                details=card.details,
                output=card.output,
                sources=list(card.sources),
                left_in_progress=left_in_progress,
            )
        )
    return views


def _block_cards(blocks: list[dict[str, Any]]) -> tuple[list[CardView], str | None]:
    cards: list[CardView] = []
    plan_title = None
    for block in blocks:
        if block.get("type") == "task_card":
            cards.append(_card_from_block(block))
        elif block.get("type") == "plan":
            plan_title = block.get("title")
            cards.extend(_card_from_block(task) for task in block.get("tasks") or [])
    return cards, plan_title


def _card_from_block(block: dict[str, Any]) -> CardView:
    return CardView(
        id=block["task_id"],
        title=block["title"],
        status=block.get("status", "pending"),
        details=_rich_text_plain(block.get("details")),
        output=_rich_text_plain(block.get("output")),
        sources=list(block.get("sources") or []),
    )


def _rich_text_plain(value: object) -> str | None:
    """The words of a rich_text object, for asserting on a card's details or output."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    parts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "text" and isinstance(node.get("text"), str):
                parts.append(node["text"])
            for child in node.get("elements") or []:
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(value)
    return "".join(parts)
