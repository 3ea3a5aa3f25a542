"""Slack's shapes for what a reply shows: stream chunks and Block Kit blocks (docs/slack-platform.md §1)."""

from __future__ import annotations

from typing import Any

from kourier.progress import Card


def task_update_chunk(card: Card) -> dict[str, Any]:
    """A stream's card: a later chunk with the same id updates it (docs/slack-platform.md §1.2)."""
    chunk: dict[str, Any] = {
        "type": "task_update",
        "id": card.id,
        "title": card.title,
        "status": card.status.value,
    }
    if card.output:
        chunk["output"] = card.output
    return chunk


def markdown_chunk(text: str) -> dict[str, Any]:
    return {"type": "markdown_text", "text": text}


def rich_text(text: str) -> dict[str, Any]:
    return {
        "type": "rich_text",
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def task_card_block(card: Card, block_id: str) -> dict[str, Any]:
    """A message's card (docs/slack-platform.md §1.5); ``output`` is a rich_text object."""
    block: dict[str, Any] = {
        "type": "task_card",
        "block_id": block_id,
        "task_id": card.id,
        "title": card.title,
        "status": card.status.value,
    }
    if card.output:
        block["output"] = rich_text(card.output)
    return block


FEEDBACK_UP_ACTION = "kourier_feedback_up"
FEEDBACK_DOWN_ACTION = "kourier_feedback_down"
FEEDBACK_ACTIONS = (FEEDBACK_UP_ACTION, FEEDBACK_DOWN_ACTION)


def feedback_block(turn_id: int) -> dict[str, Any]:
    """Thumbs up and thumbs down under an answer (spec.feedback): each button's value is its turn's id."""
    return {
        "type": "actions",
        "block_id": f"kourier-feedback-{turn_id}",
        "elements": [
            {
                "type": "button",
                "action_id": action_id,
                "value": str(turn_id),
                "text": {"type": "plain_text", "text": emoji, "emoji": True},
                "accessibility_label": label,
            }
            for action_id, emoji, label in (
                (FEEDBACK_UP_ACTION, ":+1:", "Good answer"),
                (FEEDBACK_DOWN_ACTION, ":-1:", "Bad answer"),
            )
        ],
    }


STOP_BLOCK_PREFIX = "kourier-stop-"  # a Stop button's block_id: the prefix, then the turn's id


def stop_block(turn_id: int, action_id: str) -> dict[str, Any]:
    """The Stop button under a running turn's Working… card (sessions/stops.py): its value is the
    turn's id. Not a danger button: stopping is undone by asking again, and needs no confirmation."""
    return {
        "type": "actions",
        "block_id": f"{STOP_BLOCK_PREFIX}{turn_id}",
        "elements": [
            {
                "type": "button",
                "action_id": action_id,
                "value": str(turn_id),
                "text": {"type": "plain_text", "text": "Stop"},
                "accessibility_label": "Stop the agent's turn",
            }
        ],
    }


def line_block(line: str, block_id: str) -> dict[str, Any]:
    """The line of small print: plain text, so a tool's arguments are never read as formatting."""
    return {"type": "context", "block_id": block_id, "elements": [{"type": "plain_text", "text": line}]}
