"""What one turn shows: the display keeps a bounded part of a runaway answer."""

from slack_sdk.web.async_client import AsyncWebClient

from kourier.a2a.events import TextDelta
from kourier.slack.writer import MESSAGE_TEXT_LIMIT, ReplyTarget, SlackReply
from sessions.display import TurnDisplay


def display(max_messages: int) -> TurnDisplay:
    reply = SlackReply(
        AsyncWebClient(token="xoxb-unused"),
        ReplyTarget("C0001", "1.0", None, None, "key"),
        live=False,
        stream=False,
        max_messages=max_messages,
    )
    return TurnDisplay(reply, None, max_messages=max_messages)


def test_a_runaway_answer_is_kept_to_one_message_past_what_the_reply_may_post():
    shown = display(max_messages=2)

    for _ in range(400):
        shown.feed(TextDelta("x" * 1_000))

    assert len(shown.text) == 3 * MESSAGE_TEXT_LIMIT
    assert shown.received == 400_000


def test_a_replacing_text_is_bounded_the_same_way():
    shown = display(max_messages=1)
    shown.feed(TextDelta("a" * 50_000))

    shown.feed(TextDelta("b" * 100_000, replace=True))

    assert shown.text == "b" * (2 * MESSAGE_TEXT_LIMIT)
    assert shown.received == 100_000


def test_an_answer_within_the_limit_is_kept_whole():
    shown = display(max_messages=10)
    for part in ("Hello", ", ", "world."):
        shown.feed(TextDelta(part))

    assert (shown.text, shown.received) == ("Hello, world.", 13)
