"""What a reply's messages hold, pure: a view as a message's arguments (markdown text, or blocks with
a fallback text), a long answer split into messages and cut past ``replies.maxMessages``, what the
agent wrote made safe for Slack, and writes coalesced (writer.py makes the calls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from kourier.progress import NO_OUTPUT, Card, View, Write, hidden_line

from .blocks import line_block, task_card_block
from .mrkdwn import neutralize

NO_OUTPUT_TEXT = NO_OUTPUT
# markdown_text holds up to 12,000 characters in a post, an update or a stream.
MESSAGE_TEXT_LIMIT = 12_000
# The most messages one answer takes (a Binding's replies.maxMessages, which defaults to the same):
# past it the rest is not posted and the reply ends with ANSWER_CUT_LINE (docs/security.md).
DEFAULT_MAX_MESSAGES = 10
ANSWER_CUT_LINE = (
    "_The answer was cut here: a reply takes at most {messages} messages, "
    "and {characters:,} more characters were not posted._"
)
# chat.update refuses a ``text`` longer than this (msg_too_long); with blocks it is only the fallback.
FALLBACK_TEXT_LIMIT = 4_000
# At most 50 blocks in a message: the line, the cards and the text's markdown block fit under it.
MESSAGE_CARD_LIMIT = 45


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


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def view_key(view: View) -> tuple[Any, ...]:
    return (view.line, view.cards, view.text)


def without_cards(view: View) -> View:
    fallback = view.text if view.text.strip() else (view.line or view.fallback)
    return View(view.line, (), view.text, fallback)


def merged(earlier: Write, later: Write) -> Write:
    """Two writes as one: the later view wins; the cards either changed are changed."""
    changed = {card.id: card for card in earlier.changed}
    changed.update({card.id: card for card in later.changed})
    return Write(
        later.kind,
        later.view,
        tuple(changed.values()),
        earlier.text_changed or later.text_changed,
        earlier.first and later.first,
        earlier.timed and later.timed,
    )


def neutralized(write: Write, *, allow_user_mentions: bool) -> Write:
    """The write with what the agent and its tools wrote made safe for Slack (mrkdwn.neutralize),
    whole each time, so that a stream only ever appends to neutralized text."""

    def safe(text: str) -> str:
        return neutralize(text, allow_user_mentions=allow_user_mentions)

    def safe_card(card: Card) -> Card:
        return replace(card, title=safe(card.title), output=card.output and safe(card.output))

    view = write.view
    return replace(
        write,
        view=View(
            view.line and safe(view.line),
            tuple(safe_card(card) for card in view.cards),
            safe(view.text),
            safe(view.fallback),
        ),
        changed=tuple(safe_card(card) for card in write.changed),
    )


def answer_parts(text: str, *, max_messages: int, not_kept: int = 0) -> list[str]:
    """The answer's messages: at most ``max_messages``, the last ending with the cut line when the
    answer did not fit (``not_kept``: characters the runner did not keep, counted in the cut line)."""
    parts = split_for_messages(text)
    if len(parts) <= max_messages and not not_kept:
        return parts
    total = len(text) + not_kept
    parts = parts[:max_messages]
    # The cut line's own length, with the largest count it can show: the last part makes room for it.
    room = MESSAGE_TEXT_LIMIT - len(ANSWER_CUT_LINE.format(messages=max_messages, characters=total)) - 2
    parts[-1] = parts[-1][:room]
    not_posted = max(total - sum(len(part) for part in parts), 0)
    parts[-1] += "\n\n" + ANSWER_CUT_LINE.format(messages=max_messages, characters=not_posted)
    return parts


def message_content(
    view: View, *, closing_blocks: Sequence[dict[str, Any]], block_prefix: Callable[[], str]
) -> dict[str, Any] | None:
    """A message's arguments for a view: plain markdown_text, or blocks with the fallback text.
    ``block_prefix`` gives the block_ids' new prefix (Slack asks for new ones on each update)."""
    text = view.text[:MESSAGE_TEXT_LIMIT]
    if not view.line and not view.cards and not closing_blocks:
        return {"markdown_text": text} if text else None
    prefix = block_prefix()
    line, cards = view.line, view.cards
    if len(cards) > MESSAGE_CARD_LIMIT:
        line, cards = hidden_line(len(cards) - MESSAGE_CARD_LIMIT), cards[-MESSAGE_CARD_LIMIT:]
    blocks = [line_block(line, f"{prefix}-line")] if line else []
    blocks += [task_card_block(card, f"{prefix}-{index}") for index, card in enumerate(cards)]
    if text.strip():
        blocks.append({"type": "markdown", "block_id": f"{prefix}-text", "text": text})
    blocks += closing_blocks
    fallback = view.fallback or line or (cards[-1].title if cards else "") or text
    return {"blocks": blocks, "text": _shorten(fallback, FALLBACK_TEXT_LIMIT)}
