"""What a reply's messages hold: a long answer split into messages and cut past the most, a view as a
message's arguments (the writer posting them is in test_writer.py)."""

import pytest

from kourier.progress import Card, CardStatus, View, hidden_line
from kourier.slack.reply_content import (
    ANSWER_CUT_LINE,
    MESSAGE_CARD_LIMIT,
    MESSAGE_TEXT_LIMIT,
    answer_parts,
    message_content,
    split_for_messages,
)


@pytest.mark.parametrize("size", [10, MESSAGE_TEXT_LIMIT, MESSAGE_TEXT_LIMIT + 1, 3 * MESSAGE_TEXT_LIMIT])
def test_splitting_keeps_every_character_and_respects_the_limit(size):
    text = "\n".join("x" * 99 for _ in range(size // 100 + 1))[:size]
    parts = split_for_messages(text)
    assert all(len(part) <= MESSAGE_TEXT_LIMIT for part in parts)
    assert "".join(parts).replace("\n", "") == text.replace("\n", "")


def test_an_answer_that_fits_is_its_messages_and_one_past_the_most_is_cut_with_a_line_counting_the_rest():
    fits = "a" * (2 * MESSAGE_TEXT_LIMIT)
    assert answer_parts(fits, max_messages=2) == split_for_messages(fits)

    parts = answer_parts("a" * (3 * MESSAGE_TEXT_LIMIT), max_messages=2)

    assert len(parts) == 2
    assert all(len(part) <= MESSAGE_TEXT_LIMIT for part in parts)
    kept = len(parts[0]) + parts[1].index("\n\n")
    assert parts[1].endswith(ANSWER_CUT_LINE.format(messages=2, characters=3 * MESSAGE_TEXT_LIMIT - kept))


def test_what_the_runner_did_not_keep_is_counted_in_the_cut_line():
    assert answer_parts("the start", max_messages=2, not_kept=1_000_000) == [
        "the start\n\n" + ANSWER_CUT_LINE.format(messages=2, characters=1_000_000)
    ]


def test_a_view_of_text_alone_is_plain_markdown_and_an_empty_one_is_nothing():
    def no_prefix() -> str:
        raise AssertionError("plain text has no blocks")

    assert message_content(View(None, (), "hello", "hello"), closing_blocks=(), block_prefix=no_prefix) == {
        "markdown_text": "hello"
    }
    assert message_content(View(None, (), "", ""), closing_blocks=(), block_prefix=no_prefix) is None


def test_a_view_with_more_cards_than_a_message_holds_shows_the_latest_under_a_line_counting_the_rest():
    cards = tuple(Card(f"c{n}", f"step {n}", CardStatus.COMPLETE) for n in range(MESSAGE_CARD_LIMIT + 3))

    content = message_content(
        View("working", cards, "done", ""), closing_blocks=(), block_prefix=lambda: "k1"
    )

    assert content is not None
    blocks = content["blocks"]
    assert blocks[0]["block_id"] == "k1-line"
    assert len(blocks) == 1 + MESSAGE_CARD_LIMIT + 1  # the line, the latest cards, the text
    assert blocks[-1] == {"type": "markdown", "block_id": "k1-text", "text": "done"}
    assert content["text"] == hidden_line(3)  # the fallback: the line that replaced the view's own
