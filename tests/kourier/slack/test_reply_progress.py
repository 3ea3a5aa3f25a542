"""The reply writer rendering kourier.progress writes, against the Slack fake over real HTTP.

A ``Reply`` drives a ``Progress`` (fake clock) and a ``SlackReply`` the way the turn runner does:
each event's writes go to ``write()``, the deadline's to ``tick()``, the last to ``end()``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from kourier.a2a.events import TextDelta, ToolCall, ToolResult
from kourier.progress import (
    NO_OUTPUT,
    NO_RESULT,
    STOPPED,
    WORKING,
    WROTE_THE_ANSWER,
    Card,
    CardStatus,
    Ending,
    Progress,
    ProgressMode,
    ThreadKind,
)
from kourier.slack import status as assistant_status
from kourier.slack.status import ASSISTANT_STATUS_WORKING, AssistantStatus
from kourier.slack.writer import STREAM_CARD_LIMIT, ReplyTarget, SlackReply
from simulator import defaults
from simulator.clock import ManualClock

STEPS, SAA, ACTIVITY = ProgressMode.STEPS, ProgressMode.STEPS_AND_ACTIVITY, ProgressMode.ACTIVITY
CHAT, ALERT = ThreadKind.CHAT, ThreadKind.ALERT
REPLY_METHODS = (
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
    "chat.postMessage",
    "chat.update",
)


@pytest.fixture(autouse=True)
def _status_available_again():
    assistant_status.reset_status_availability()
    yield
    assistant_status.reset_status_availability()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def call(cid: str, name: str = "search", **args: Any) -> ToolCall:
    return ToolCall(cid, name, args or {"q": cid})


def ok(cid: str) -> ToolResult:
    return ToolResult(cid, True)


def bad(cid: str) -> ToolResult:
    return ToolResult(cid, False)


def text(chunk: str) -> TextDelta:
    return TextDelta(chunk)


@dataclass
class Reply:
    """One turn's reply: its Progress on a fake clock and the SlackReply that renders it."""

    fake: Any
    mode: ProgressMode
    thread: ThreadKind
    min_interval: float = 0.0
    status: bool = False
    existing_ts: str | None = None
    connection_key: str = "connection-1"
    clock: FakeClock = field(default_factory=FakeClock)
    root: str | None = None  # a thread of its own unless given
    adopted_cards: tuple[Card, ...] = ()
    open_cards_told: list[tuple[list[str], int]] = field(default_factory=list)  # (card ids, writes before)

    def __post_init__(self) -> None:
        chat = self.thread is CHAT
        if self.root is None:
            self.root = self.fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{self.fake.bot_mention} hi")
        self.progress = Progress(self.mode, self.thread, clock=self.clock)
        client = AsyncWebClient(token=self.fake.bot_token, base_url=self.fake.url, timeout=5)
        self.assistant_status = (
            AssistantStatus(client, defaults.CHANNEL_ID, self.root, self.connection_key)
            if self.status
            else None
        )
        self.reply = SlackReply(
            client,
            ReplyTarget(
                defaults.CHANNEL_ID,
                self.root,
                defaults.ADA if chat else None,
                defaults.TEAM_ID if chat else None,
                "reply-key",
            ),
            live=True,
            stream=chat,
            progress=self.progress,
            status=self.assistant_status,
            min_interval=self.min_interval,
            existing_ts=self.existing_ts,
            adopted_cards=self.adopted_cards,
            on_stream_cards=self._told,
        )

    async def _told(self, cards: list[Card]) -> None:
        self.open_cards_told.append(([card.id for card in cards], writes(self.fake)))

    async def begin(self) -> None:
        await self.reply.begin()

    async def feed(self, *events, settle: bool = True) -> None:
        for event in events:
            self.reply.write(self.progress.feed(event))
        if settle:
            await self.reply.settled()

    async def at(self, t: float) -> None:
        """Moves the clock to t, ticking at every deadline on the way (as the runner's timer does)."""
        while (due := self.progress.deadline) is not None and due <= t:
            self.clock.now = max(self.clock.now, due)
            self.reply.write(self.progress.tick())
            await self.reply.settled()
        self.clock.now = max(self.clock.now, t)

    async def end(self, outcome: Ending = Ending.COMPLETED, *, notice_follows: bool = False) -> None:
        await self.reply.end(self.progress.finish(outcome), notice_follows=notice_follows)

    def messages(self):
        return [m for m in self.fake.thread(defaults.CHANNEL_ID, self.root)[1:] if m.is_bot]

    @property
    def message(self):
        [message] = self.messages()
        return message


def run(scenario) -> None:
    asyncio.run(scenario())


def card_chunks(recorded) -> list[dict[str, Any]]:
    return [chunk for chunk in recorded.args.get("chunks") or [] if chunk["type"] == "task_update"]


def block_types(blocks) -> list[str]:
    return [block["type"] for block in blocks]


def writes(fake) -> int:
    return sum(fake.count(method) for method in REPLY_METHODS)


# --- a chat thread: a stream with task_update chunks ------------------------------------------------


def test_a_chat_thread_streams_a_card_per_call_in_order_and_closes_every_card_at_the_stop(slack_fake):
    r = Reply(slack_fake, STEPS, CHAT)

    async def scenario():
        await r.feed(call("c1"))
        assert r.message.streaming
        assert [(c.id, c.status) for c in r.message.cards] == [("call-c1", "in_progress")]
        await r.feed(ok("c1"), call("c2", "fetch", url="https://x"), bad("c2"), call("c3"))
        await r.feed(text("The answer."))
        await r.end()

    run(scenario)
    message = r.message
    assert not message.streaming
    assert message.text == "The answer."
    assert [(c.title, c.status, c.output) for c in message.cards] == [
        ('search(q="c1")', "complete", None),
        ('fetch(url="https://x")', "error", None),
        ('search(q="c3")', "complete", NO_RESULT),  # no result by the end: closed, not left open
    ]
    assert not any(card.left_in_progress for card in message.cards)
    start = slack_fake.last_call("chat.startStream")
    assert start.args["recipient_user_id"] == defaults.ADA
    assert [c["id"] for c in card_chunks(start)] == ["call-c1"]
    stop = slack_fake.last_call("chat.stopStream")
    assert ("call-c3", "complete") in [(c["id"], c["status"]) for c in card_chunks(stop)]
    # A stream is locked to one content form: every call carries chunks, none top-level markdown_text.
    stream_calls = [c for c in slack_fake.calls() if c.method in REPLY_METHODS[:3]]
    assert {c.method for c in stream_calls} == set(REPLY_METHODS[:3])
    assert [c.method for c in stream_calls if "markdown_text" in c.args or not c.args.get("chunks")] == []
    assert slack_fake.count("chat.postMessage") == slack_fake.count("chat.update") == 0


def test_a_coalesced_append_carries_every_card_the_dropped_writes_changed(slack_fake):
    r = Reply(slack_fake, STEPS, CHAT, min_interval=0.3)

    async def scenario():
        await r.feed(call("c1"))
        await r.feed(ok("c1"), call("c2"), ok("c2"), call("c3"), text("so far"), settle=False)
        await r.reply.settled()
        await r.end()

    run(scenario)
    [append] = slack_fake.calls("chat.appendStream")
    assert [(c["id"], c["status"]) for c in card_chunks(append)] == [
        ("call-c1", "complete"),
        ("call-c2", "complete"),
        ("call-c3", "in_progress"),
    ]
    assert append.args["chunks"][-1] == {"type": "markdown_text", "text": "so far"}
    assert [c.status for c in r.message.cards] == ["complete", "complete", "complete"]


def test_the_working_card_is_ended_by_a_title_that_says_how_never_left_open(slack_fake):
    r = Reply(slack_fake, SAA, CHAT)

    async def scenario():
        await r.at(3.0)
        assert [(c.title, c.status) for c in r.message.cards] == [(WORKING, "in_progress")]
        await r.feed(text("Here it is."))
        await r.end()

    run(scenario)
    assert [(c.title, c.status) for c in r.message.cards] == [(WROTE_THE_ANSWER, "complete")]
    assert r.message.text == "Here it is."


def test_a_failed_turn_stops_the_stream_with_the_working_card_stopped(slack_fake):
    r = Reply(slack_fake, SAA, CHAT)

    async def scenario():
        await r.feed(text("Trying. "))
        await r.at(3.5)
        await r.end(Ending.FAILED, notice_follows=True)

    run(scenario)
    message = r.message
    assert not message.streaming
    assert message.text == "Trying. "
    assert [(c.title, c.status, c.left_in_progress) for c in message.cards] == [(STOPPED, "error", False)]


def test_text_rewritten_after_it_streamed_is_rewritten_with_the_cards_before_it(slack_fake):
    r = Reply(slack_fake, STEPS, CHAT)

    async def scenario():
        await r.feed(call("c1"), ok("c1"), text("draft"))
        await r.feed(TextDelta("the corrected answer", replace=True))
        await r.end()

    run(scenario)
    message = r.message
    assert message.text == "the corrected answer"
    assert [(c.id, c.status) for c in message.cards] == [("call-c1", "complete")]
    update = slack_fake.last_call("chat.update")
    assert block_types(update.args["blocks"]) == ["task_card", "markdown"]


def test_an_empty_chat_turn_shows_no_output_and_one_that_fails_with_nothing_shown_writes_nothing(
    slack_fake,
):
    empty = Reply(slack_fake, SAA, CHAT)
    failed = Reply(slack_fake, SAA, CHAT)

    async def scenario():
        await empty.end()
        await failed.end(Ending.FAILED, notice_follows=True)  # the notice is the only message

    run(scenario)
    assert empty.message.text == NO_OUTPUT
    assert failed.messages() == []


def test_a_stream_takes_at_most_its_card_limit_and_its_end_shows_the_latest_cards(slack_fake):
    r = Reply(slack_fake, STEPS, CHAT)
    calls = STREAM_CARD_LIMIT + 3

    async def scenario():
        await r.feed(call("c0"))
        for n in range(calls):
            await r.feed(*([call(f"c{n}")] if n else []), ok(f"c{n}"), settle=False)
        await r.reply.settled()
        await r.feed(text("Done."), settle=False)
        await r.end()

    run(scenario)
    streamed = {c["id"] for m in REPLY_METHODS[:3] for rec in slack_fake.calls(m) for c in card_chunks(rec)}
    assert len(streamed) == STREAM_CARD_LIMIT
    message = r.message
    assert [c.id for c in message.cards] == [f"call-c{n}" for n in range(3, calls)]
    assert message.blocks[0]["elements"][0]["text"] == "3 earlier steps not shown"
    assert message.text == "Done."


# --- fallbacks of a chat thread -------------------------------------------------------------------


def test_a_refused_stream_falls_back_to_post_and_update_keeping_the_cards(slack_fake):
    slack_fake.configure_workspace(streams_enabled=False)
    r = Reply(slack_fake, STEPS, CHAT)

    async def scenario():
        await r.feed(call("c1"))
        await r.feed(ok("c1"), text("Done."))
        await r.end()

    run(scenario)
    message = r.message
    assert not message.was_streamed
    assert message.text == "Done."
    assert [(c.id, c.status) for c in message.cards] == [("call-c1", "complete")]
    assert slack_fake.count("chat.postMessage") == 1
    assert block_types(slack_fake.last_call("chat.update").args["blocks"]) == ["task_card", "markdown"]


def test_cards_refused_for_a_stream_leave_a_plain_text_stream_and_no_card(slack_fake):
    slack_fake.configure_workspace(task_cards_enabled=False)
    r = Reply(slack_fake, SAA, CHAT)

    async def scenario():
        await r.feed(call("c1"))  # refused: invalid_chunks; a plain-text stream has nothing to show yet
        assert not r.progress.cards_shown
        assert r.messages() == []
        await r.feed(ok("c1"), text("Plain "))
        await r.feed(call("c2"), ok("c2"), text("text."))
        await r.end()

    run(scenario)
    message = r.message
    assert message.was_streamed
    assert not message.streaming
    assert (message.text, message.cards) == ("Plain text.", [])
    assert [c.error for c in slack_fake.calls("chat.startStream")] == ["invalid_chunks", None]
    appends = slack_fake.calls("chat.appendStream")
    assert appends
    assert [card_chunks(c) for c in appends] == [[]] * len(appends)


def test_a_chat_turn_whose_cards_are_refused_and_that_ends_empty_shows_no_output_with_its_line(slack_fake):
    slack_fake.configure_workspace(task_cards_enabled=False)
    r = Reply(slack_fake, STEPS, CHAT)

    async def scenario():
        await r.feed(call("c1"), ok("c1"))
        await r.end()

    run(scenario)
    message = r.message
    assert message.text == NO_OUTPUT
    assert not message.streaming
    assert message.cards == []
    assert 'Ran search(q="c1")' in str(message.blocks)


def test_cards_refused_in_the_middle_of_a_stream_leave_the_rest_plain_text(slack_fake):
    r = Reply(slack_fake, STEPS, CHAT)
    slack_fake.fail(
        "chat.appendStream",
        "invalid_chunks",
        when=lambda args: any(c["type"] == "task_update" and c["id"] == "call-c2" for c in args["chunks"]),
    )

    async def scenario():
        await r.feed(call("c1"))
        await r.feed(ok("c1"), text("One. "))
        await r.feed(call("c2"))
        await r.feed(ok("c2"), text("Two."))
        await r.end()

    run(scenario)
    message = r.message
    assert message.text == "One. Two."
    assert [(c.id, c.status) for c in message.cards] == [("call-c1", "complete")]  # shown before the refusal
    assert not r.progress.cards_shown


def test_an_expired_stream_goes_on_in_the_same_message_without_losing_a_card_or_a_character(make_slack_fake):
    clock = ManualClock()
    fake = make_slack_fake(clock=clock, stream_lifetime=300)
    r = Reply(fake, SAA, CHAT)

    async def scenario():
        await r.feed(text("Part one. "), call("c1"))
        clock.advance(301)  # Slack ends the stream server-side
        await r.feed(ok("c1"), text("Part two. "))
        await r.feed(call("c2"), ok("c2"), text("Part three."))
        await r.end()

    run(scenario)
    message = r.message
    assert message.text == "Part one. Part two. Part three."
    assert [(c.id, c.status) for c in message.cards] == [("call-c1", "complete"), ("call-c2", "complete")]
    assert [c.error for c in fake.calls("chat.appendStream")][-1] == "message_not_in_streaming_state"
    assert [c.error for c in fake.calls("chat.appendStream")].count("message_not_in_streaming_state") == 1
    assert fake.count("chat.stopStream") == 0  # the stream was over; the reply went on with updates
    final = fake.last_call("chat.update")
    assert block_types(final.args["blocks"]) == ["task_card", "task_card", "markdown"]


def test_a_stream_that_expires_before_its_stop_is_finished_with_an_update(make_slack_fake):
    clock = ManualClock()
    fake = make_slack_fake(clock=clock, stream_lifetime=300)
    r = Reply(fake, STEPS, CHAT)

    async def scenario():
        await r.feed(call("c1"), text("Half"))
        clock.advance(301)
        await r.feed(ok("c1"), text(" and the rest."), settle=False)
        await r.end()

    run(scenario)
    message = r.message
    assert message.text == "Half and the rest."
    assert [(c.id, c.status, c.left_in_progress) for c in message.cards] == [("call-c1", "complete", False)]
    assert fake.last_call("chat.stopStream").error == "message_not_in_streaming_state"


# --- an alert thread: post, then chat.update with task_card blocks --------------------------------


def test_an_alert_threads_first_post_has_the_line_and_its_updates_the_cards_above_the_text(slack_fake):
    r = Reply(slack_fake, STEPS, ALERT)

    async def scenario():
        await r.feed(call("c1"))
        post = slack_fake.last_call("chat.postMessage")
        assert post.args["blocks"] == [
            {
                "type": "context",
                "block_id": "k1-line",
                "elements": [{"type": "plain_text", "text": 'Calling search(q="c1")'}],
            }
        ]
        assert post.args["text"] == 'Calling search(q="c1")'
        assert r.message.cards == []
        await r.feed(ok("c1"))
        await r.at(1.0)  # the update that shows the cards, once the throttle allows
        assert [(c.id, c.status) for c in r.message.cards] == [("call-c1", "complete")]
        await r.feed(text("All good."))
        await r.end()

    run(scenario)
    message = r.message
    assert not message.was_streamed
    assert message.text == "All good."
    assert [(c.id, c.status) for c in message.cards] == [("call-c1", "complete")]
    assert block_types(slack_fake.last_call("chat.update").args["blocks"]) == ["task_card", "markdown"]
    assert slack_fake.count("chat.startStream") == 0


def test_an_alert_thread_shows_the_latest_20_cards_under_the_count_of_the_rest(slack_fake):
    r = Reply(slack_fake, STEPS, ALERT)

    async def scenario():
        for n in range(23):
            await r.feed(call(f"c{n}"), ok(f"c{n}"))
        await r.feed(text("Done."))
        await r.end()

    run(scenario)
    message = r.message
    assert [c.id for c in message.cards] == [f"call-c{n}" for n in range(3, 23)]
    blocks = slack_fake.last_call("chat.update").args["blocks"]
    assert blocks[0]["elements"][0]["text"] == "3 earlier steps not shown"
    assert block_types(blocks) == ["context"] + ["task_card"] * 20 + ["markdown"]
    # Every update uses new block_ids (Slack's advice for edited blocks).
    ids = [b["block_id"] for u in slack_fake.calls("chat.update") for b in u.args.get("blocks", [])]
    assert len(ids) == len(set(ids))


def test_a_refused_alert_update_with_cards_is_sent_again_without_them_and_shows_the_line(slack_fake):
    slack_fake.configure_workspace(task_cards_enabled=False)
    r = Reply(slack_fake, STEPS, ALERT)

    async def scenario():
        await r.feed(call("c1"))
        await r.feed(ok("c1"))
        await r.at(1.0)
        assert [c.error for c in slack_fake.calls("chat.update")] == ["invalid_blocks", None]
        assert 'Ran search(q="c1")' in str(r.message.blocks)
        await r.feed(call("c2"))
        await r.feed(text("Answer."))
        await r.end()

    run(scenario)
    message = r.message
    assert (message.text, message.cards) == ("Answer.", [])
    assert [c.error for c in slack_fake.calls("chat.update")].count("invalid_blocks") == 1  # refused once


def test_an_alert_thread_in_the_activity_mode_is_one_line_until_the_text(slack_fake):
    r = Reply(slack_fake, ACTIVITY, ALERT)

    async def scenario():
        await r.feed(call("c1"))
        assert "Working…" in str(slack_fake.last_call("chat.postMessage").args["blocks"])
        await r.at(1.5)
        await r.feed(ok("c1"), call("c2"), bad("c2"))  # the second count change is in the throttle window
        assert "Working… (1 step)" in str(r.message.blocks)
        await r.at(3.0)
        await r.feed(call("c3"), ok("c3"))
        assert "Working… (3 steps, 1 failed)" in str(r.message.blocks)
        await r.feed(text("Done."))
        await r.end()

    run(scenario)
    assert (r.message.text, r.message.cards) == ("Done.", [])
    assert "search" not in str(r.message.blocks)  # the activity mode never names a tool


def test_an_alert_turn_with_nothing_to_show_posts_nothing(slack_fake):
    r = Reply(slack_fake, STEPS, ALERT)
    run(lambda: r.end(Ending.FAILED))
    assert r.messages() == []


# --- Slack's assistant status ---------------------------------------------------------------------


def test_the_assistant_status_is_set_at_the_start_after_each_write_but_the_last_and_cleared(slack_fake):
    r = Reply(slack_fake, SAA, ALERT, status=True)

    async def scenario():
        await r.begin()
        assert slack_fake.assistant_status(defaults.CHANNEL_ID, r.root) == ASSISTANT_STATUS_WORKING
        await r.feed(call("c1"))
        await r.feed(ok("c1"))
        await r.at(1.0)
        await r.feed(text("Done."), settle=False)  # the text rides with the last write
        await r.end()

    run(scenario)
    calls = slack_fake.calls()
    statuses = [c.args["status"] for c in calls if c.method == "assistant.threads.setStatus"]
    non_final_writes = writes(slack_fake) - 1
    assert statuses == [ASSISTANT_STATUS_WORKING] * (1 + non_final_writes) + [""]
    methods = [c.method for c in calls if c.method != "users.info"]
    assert methods[0] == "assistant.threads.setStatus"  # before the thread has any reply
    assert methods[-2:] == ["chat.update", "assistant.threads.setStatus"]  # the last write, then cleared
    assert slack_fake.assistant_status(defaults.CHANNEL_ID, r.root) is None


@pytest.mark.parametrize("error", ["missing_scope", "unknown_method"])
def test_a_workspace_that_cannot_set_a_status_is_told_once_and_never_asked_again(slack_fake, caplog, error):
    slack_fake.configure_workspace(assistant_status=error)
    first = Reply(slack_fake, SAA, ALERT, status=True)
    second = Reply(slack_fake, ACTIVITY, ALERT, status=True)

    async def scenario():
        for r in (first, second):
            await r.begin()
            await r.feed(call("c1"), ok("c1"), text("ok"))
            await r.end()

    with caplog.at_level(logging.INFO, logger="kourier.slack.writer"):
        run(scenario)
    assert slack_fake.count("assistant.threads.setStatus") == 1
    assert [r.levelno for r in caplog.records if r.msg == "slack.assistant_status_unavailable"] == [
        logging.INFO
    ]
    assert first.message.text == second.message.text == "ok"  # replies are unaffected


def test_any_other_status_error_stops_it_for_that_turn_only(slack_fake):
    slack_fake.fail("assistant.threads.setStatus", "channel_not_found")
    first = Reply(slack_fake, SAA, ALERT, status=True)
    second = Reply(slack_fake, SAA, ALERT, status=True)

    async def scenario():
        await first.begin()
        await first.feed(call("c1"), ok("c1"), text("ok"))
        await first.end()
        assert slack_fake.count("assistant.threads.setStatus") == 1
        await second.begin()
        await second.end()

    run(scenario)
    assert [c.error for c in slack_fake.calls("assistant.threads.setStatus")] == [
        "channel_not_found",
        None,
        None,
    ]
    assert first.message.text == "ok"


# --- a reply taken over from an earlier runner ----------------------------------------------------


def test_a_taken_over_stream_that_ends_in_a_failure_is_stopped_and_keeps_its_text(slack_fake):
    earlier = Reply(slack_fake, STEPS, CHAT)

    async def scenario():
        await earlier.feed(text("What the earlier runner wrote."))
        later = Reply(slack_fake, STEPS, CHAT, existing_ts=earlier.reply.ts)
        later.root = earlier.root
        await later.end(Ending.FAILED, notice_follows=True)

    run(scenario)
    message = earlier.message
    assert (message.text, message.streaming) == ("What the earlier runner wrote.", False)
    assert slack_fake.count("chat.update") == 0


# --- a reply taken over by a restarted process ------------------------------------------------------


def test_the_cards_a_stream_opens_are_told_before_the_write_that_shows_them(slack_fake):
    r = Reply(slack_fake, STEPS, CHAT)

    async def scenario():
        await r.feed(text("Looking. "))
        await r.feed(call("c1"))
        await r.feed(ok("c1"))
        await r.end()

    run(scenario)
    # Told with one write made (the stream's start): before the append that shows the card; then, once
    # the result's append is made, nothing is open.
    assert r.open_cards_told == [(["call-c1"], 1), ([], 2)]


def test_a_stream_taken_over_and_ended_by_a_failure_ends_the_cards_it_left_open(slack_fake):
    earlier = Reply(slack_fake, STEPS, CHAT)

    async def earlier_process():
        await earlier.feed(text("Looking. "), call("c1"))  # and then it dies

    run(earlier_process)
    [(left_open, _)] = [told for told in earlier.open_cards_told if told[0]]
    later = Reply(
        slack_fake,
        STEPS,
        CHAT,
        root=earlier.root,
        existing_ts=earlier.message.ts,
        adopted_cards=tuple(Card(card_id, "search(q=x)", CardStatus.IN_PROGRESS) for card_id in left_open),
    )
    run(lambda: later.end(Ending.FAILED, notice_follows=True))
    message = later.message
    assert not message.streaming
    assert message.text == "Looking. "
    assert [(c.id, c.status, c.output, c.left_in_progress) for c in message.cards] == [
        ("call-c1", "complete", NO_RESULT, False)
    ]
