"""The validation rules, table by table (blocks.py is pure, so these need no server)."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.blocks import block_problems, chunk_problems, metadata_error


def section(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(action_id: str = "go", text: str = "Go", **extra: Any) -> dict[str, Any]:
    return {"type": "button", "action_id": action_id, "text": {"type": "plain_text", "text": text}, **extra}


def option(value: str, text: str | None = None) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": text or value}, "value": value}


def options(count: int) -> list[dict[str, Any]]:
    return [option(f"v{i}") for i in range(count)]


def actions(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "actions", "elements": list(elements)}


def context(count: int) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": f"e{i}"} for i in range(count)]}


def select(kind: str, count: int, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "action_id": "pick", "options": options(count), **extra}


ACCEPTED_BLOCKS: dict[str, list[Any]] = {
    "section at 3000 chars": [section("x" * 3000)],
    "section with 10 fields": [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 10}],
    "header at 150": [{"type": "header", "text": {"type": "plain_text", "text": "h" * 150}}],
    "50 dividers": [{"type": "divider"}] * 50,
    "25 buttons": [actions(*(button(f"b{i}") for i in range(25)))],
    "10 context elements": [context(10)],
    "block_id at 255": [section(block_id="b" * 255)],
    "distinct block_ids": [section(block_id="a"), section(block_id="b")],
    "10 radio options": [actions(select("radio_buttons", 10))],
    "10 checkbox options": [actions(select("checkboxes", 10))],
    "100 select options": [actions(select("static_select", 100))],
    "option text 75 and value 150": [
        actions(select("static_select", 1, options=[option("v" * 150, "t" * 75)]))
    ],
    "button value 2000": [actions(button(value="v" * 2000))],
    "action_id 255": [actions(button("a" * 255))],
    "input with select": [
        {
            "type": "input",
            "label": {"type": "plain_text", "text": "Pick"},
            "element": select("static_select", 2),
        }
    ],
    "markdown block": [{"type": "markdown", "text": "**bold**"}],
    "rich_text": [{"type": "rich_text", "elements": []}],
    "task_card": [{"type": "task_card", "task_id": "t1", "title": "Search", "status": "in_progress"}],
    "plan of task cards": [
        {"type": "plan", "title": "Plan", "tasks": [{"type": "task_card", "task_id": "t1", "title": "A"}]}
    ],
    "image": [{"type": "image", "image_url": "https://example.com/a.png", "alt_text": "a"}],
    "initial option among options": [actions(select("radio_buttons", 3, initial_option=option("v1")))],
}

REFUSED_BLOCKS: dict[str, tuple[Any, str]] = {
    "not a list": ({"type": "section"}, "must be an array"),
    "51 blocks": ([{"type": "divider"}] * 51, "no more than 50 items"),
    "block without type": ([{"text": "x"}], "must be an object with a type"),
    "unknown block type": ([{"type": "paragraph"}], "unsupported type"),
    "section over 3000": ([section("x" * 3001)], "less than 3001 characters"),
    "section with no text": ([{"type": "section"}], "either text or fields"),
    "empty section text": ([section("")], "more than 0 characters"),
    "11 section fields": (
        [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}],
        "no more than 10",
    ),
    "header over 150": (
        [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
        "less than 151",
    ),
    "mrkdwn header": ([{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}], "plain_text"),
    "26 buttons": ([actions(*(button(f"b{i}") for i in range(26)))], "no more than 25"),
    "11 context elements": ([context(11)], "no more than 10"),
    "block_id over 255": ([section(block_id="b" * 256)], "less than 256 characters"),
    "duplicate block_id": ([section(block_id="same"), section(block_id="same")], "duplicate block_id"),
    "11 radio options": ([actions(select("radio_buttons", 11))], "no more than 10"),
    "11 checkbox options": ([actions(select("checkboxes", 11))], "no more than 10"),
    "101 select options": ([actions(select("static_select", 101))], "no more than 100"),
    "option text over 75": (
        [actions(select("static_select", 1, options=[option("v", "t" * 76)]))],
        "less than 76",
    ),
    "option value over 150": (
        [actions(select("static_select", 1, options=[option("v" * 151)]))],
        "less than 151",
    ),
    "button value over 2000": ([actions(button(value="v" * 2001))], "less than 2001"),
    "button text over 75": ([actions(button(text="t" * 76))], "less than 76"),
    "action_id over 255": ([actions(button("a" * 256))], "less than 256"),
    "duplicate action_id in a block": ([actions(button("same"), button("same"))], "duplicate action_id"),
    "unknown element": ([actions({"type": "slider", "action_id": "s"})], "unsupported element type"),
    "select without options": (
        [actions({"type": "static_select", "action_id": "s"})],
        "exactly one of options",
    ),
    "initial option not offered": (
        [actions(select("radio_buttons", 2, initial_option=option("elsewhere")))],
        "must match one of the provided options",
    ),
    "input without element": (
        [{"type": "input", "label": {"type": "plain_text", "text": "L"}}],
        "is required",
    ),
    "task_card without title": ([{"type": "task_card", "task_id": "t1"}], "/title"),
    "task_card with bad status": (
        [{"type": "task_card", "task_id": "t1", "title": "A", "status": "completed"}],
        "must be one of",
    ),
    "markdown over 12000 in all": (
        [{"type": "markdown", "text": "m" * 6000}, {"type": "markdown", "text": "m" * 6001}],
        "12000 characters",
    ),
    "image without alt_text": ([{"type": "image", "image_url": "https://example.com/a.png"}], "alt_text"),
}


@pytest.mark.parametrize("blocks", ACCEPTED_BLOCKS.values(), ids=ACCEPTED_BLOCKS.keys())
def test_slack_accepts(blocks: list[Any]) -> None:
    assert block_problems(blocks) == []


@pytest.mark.parametrize(("blocks", "complaint"), REFUSED_BLOCKS.values(), ids=REFUSED_BLOCKS.keys())
def test_slack_refuses(blocks: Any, complaint: str) -> None:
    problems = block_problems(blocks)
    assert any(complaint in problem for problem in problems), problems


def test_problems_point_at_the_offending_field() -> None:
    assert block_problems([{"type": "divider"}, section("x" * 3001)]) == [
        "must be less than 3001 characters [json-pointer:/blocks/1/text/text]"
    ]


@pytest.mark.parametrize("kind", ["task_card", "plan"])
def test_task_card_blocks_are_refused_when_the_app_lacks_them(kind: str) -> None:
    block = {"type": kind, "task_id": "t1", "title": "A"}
    assert block_problems([block], allow_task_cards=True) == []
    assert block_problems([block], allow_task_cards=False) != []


ACCEPTED_CHUNKS: dict[str, list[dict[str, Any]]] = {
    "markdown": [{"type": "markdown_text", "text": "hi"}],
    "task update": [{"type": "task_update", "id": "t1", "title": "Search", "status": "pending"}],
    "task update with details": [
        {"type": "task_update", "id": "t1", "title": "S", "status": "complete", "details": "d", "output": "o"}
    ],
    "plan update": [{"type": "plan_update", "title": "Plan"}],
    "blocks": [{"type": "blocks", "blocks": [section()]}],
    "empty list": [],
}

REFUSED_CHUNKS: dict[str, Any] = {
    "not a list": {"type": "markdown_text", "text": "hi"},
    "unknown type": [{"type": "image"}],
    "markdown without text": [{"type": "markdown_text"}],
    "task without id": [{"type": "task_update", "title": "S", "status": "pending"}],
    "task without title": [{"type": "task_update", "id": "t1", "status": "pending"}],
    "status completed": [{"type": "task_update", "id": "t1", "title": "S", "status": "completed"}],
    "plan without title": [{"type": "plan_update"}],
    "blocks chunk with no blocks": [{"type": "blocks", "blocks": []}],
    "blocks chunk with 51 blocks": [{"type": "blocks", "blocks": [{"type": "divider"}] * 51}],
    "blocks chunk with a bad block": [{"type": "blocks", "blocks": [section("")]}],
}


@pytest.mark.parametrize("chunks", ACCEPTED_CHUNKS.values(), ids=ACCEPTED_CHUNKS.keys())
def test_chunks_slack_accepts(chunks: list[dict[str, Any]]) -> None:
    assert chunk_problems(chunks) == []


@pytest.mark.parametrize("chunks", REFUSED_CHUNKS.values(), ids=REFUSED_CHUNKS.keys())
def test_chunks_slack_refuses(chunks: Any) -> None:
    assert chunk_problems(chunks) != []


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "task_update", "id": "t1", "title": "S", "status": "pending"},
        {"type": "plan_update", "title": "Plan"},
        {"type": "blocks", "blocks": [{"type": "task_card", "task_id": "t1", "title": "A"}]},
    ],
    ids=["task_update", "plan_update", "task_card block"],
)
def test_card_chunks_are_refused_when_the_app_lacks_cards(chunk: dict[str, Any]) -> None:
    assert chunk_problems([chunk], allow_task_cards=False) != []
    assert chunk_problems([{"type": "markdown_text", "text": "hi"}], allow_task_cards=False) == []


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ({"event_type": "turn_reply", "event_payload": {"turn": "t1"}}, None),
        ("not json", "invalid_metadata_format"),
        ({"event_payload": {}}, "invalid_metadata_schema"),
        ({"event_type": "bad type!", "event_payload": {}}, "invalid_metadata_schema"),
        ({"event_type": "turn_reply", "event_payload": "x"}, "invalid_metadata_schema"),
    ],
)
def test_metadata(metadata: Any, error: str | None) -> None:
    assert metadata_error(metadata) == error
