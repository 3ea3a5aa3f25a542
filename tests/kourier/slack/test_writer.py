"""The reply writer against the Slack fake, through the real AsyncWebClient over HTTP."""

import asyncio
import json

import pytest
from django.test import override_settings
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from kourier.progress import Card, CardStatus, View, Write, WriteKind
from kourier.slack.blocks import feedback_block
from kourier.slack.clients import RetryPolicy, async_web_client
from kourier.slack.outbox import PostKind, part_key
from kourier.slack.reply_content import ANSWER_CUT_LINE, MESSAGE_TEXT_LIMIT, NO_OUTPUT_TEXT
from kourier.slack.reply_modes import IllegalReplyMove, ReplyMode
from kourier.slack.writer import ReplyTarget, SlackReply
from simulator import defaults
from simulator.clock import ManualClock
from tests.support.memory_outbox import MemoryOutbox

REPLY_KEY = "turn-key-1"


@pytest.fixture
def thread_ts(slack_fake) -> str:
    return slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi")


def target(thread_ts: str) -> ReplyTarget:
    return ReplyTarget(defaults.CHANNEL_ID, thread_ts, defaults.ADA, defaults.TEAM_ID, REPLY_KEY)


def reply_in(fake, thread_ts):
    messages = fake.thread(defaults.CHANNEL_ID, thread_ts)[1:]
    return messages


def make_reply(fake, thread_ts, *, live=True, stream=True, min_interval=0.0) -> SlackReply:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.url, timeout=5)
    return SlackReply(client, target(thread_ts), live=live, stream=stream, min_interval=min_interval)


async def settle(reply: SlackReply) -> None:
    # Lets a scheduled write run before the test looks.
    await reply.settled()


def test_a_live_answer_streams_into_one_message(slack_fake, thread_ts):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        await reply.show("Hello")
        await settle(reply)
        assert reply_in(slack_fake, thread_ts)[0].streaming
        await reply.show("Hello, world")
        await settle(reply)
        await reply.finish("Hello, world. Done.")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "Hello, world. Done."
    assert not message.streaming
    assert message.metadata == {"event_type": "kourier_reply", "event_payload": {"reply": REPLY_KEY}}
    assert slack_fake.count("chat.startStream") == 1
    assert slack_fake.count("chat.stopStream") == 1
    assert slack_fake.last_call("chat.startStream").args["recipient_user_id"] == defaults.ADA


def test_writes_are_coalesced_and_the_latest_text_wins(slack_fake, thread_ts):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts, min_interval=30)
        await reply.show("a")
        await settle(reply)
        for n in range(50):
            await reply.show("a" + "b" * n)
        await reply.finish("final answer")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "final answer"
    assert slack_fake.count("chat.appendStream") == 0
    assert (
        slack_fake.count("chat.startStream")
        + slack_fake.count("chat.stopStream")
        + slack_fake.count("chat.update")
        == 3
    )


def test_a_refused_stream_falls_back_to_post_and_update(slack_fake, thread_ts):
    slack_fake.configure_workspace(streams_enabled=False)

    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        await reply.show("Hel")
        await settle(reply)
        await reply.show("Hello")
        await settle(reply)
        await reply.finish("Hello!")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "Hello!"
    assert not message.was_streamed
    assert slack_fake.count("chat.postMessage") == 1
    assert slack_fake.count("chat.update") == 2


def test_an_expired_stream_goes_on_with_chat_update_in_the_same_message(make_slack_fake):
    clock = ManualClock()
    fake = make_slack_fake(clock=clock, stream_lifetime=300)
    thread_ts = fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{fake.bot_mention} hi")

    async def scenario():
        reply = make_reply(fake, thread_ts)
        await reply.show("part one")
        await settle(reply)
        clock.advance(301)
        await reply.show("part one, part two")
        await settle(reply)
        await reply.finish("part one, part two, part three")

    asyncio.run(scenario())
    [message] = reply_in(fake, thread_ts)
    assert message.text == "part one, part two, part three"
    assert fake.count("chat.update") >= 1


def test_final_output_posts_once_at_the_end(slack_fake, thread_ts):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts, live=False)
        await reply.show("partial")
        await settle(reply)
        assert reply_in(slack_fake, thread_ts) == []
        await reply.finish("the whole answer")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "the whole answer"
    assert slack_fake.count("chat.postMessage") == 1
    assert slack_fake.count("chat.startStream") == 0


def test_text_rewritten_after_it_streamed_is_rewritten_in_the_message(slack_fake, thread_ts):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        await reply.show("draft that will change")
        await settle(reply)
        await reply.finish("the corrected answer")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "the corrected answer"


def test_an_empty_answer_shows_no_output(slack_fake, thread_ts):
    asyncio.run(make_reply(slack_fake, thread_ts).finish(""))
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == NO_OUTPUT_TEXT


def test_an_answer_longer_than_a_message_continues_in_the_next(slack_fake, thread_ts):
    answer = ("word " * 3000).strip()
    asyncio.run(make_reply(slack_fake, thread_ts).finish(answer))
    messages = reply_in(slack_fake, thread_ts)
    assert len(messages) == 2
    assert " ".join(m.text for m in messages).split() == answer.split()


def test_stop_leaves_a_stream_with_the_text_it_had(slack_fake, thread_ts):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        await reply.show("half an answer")
        await settle(reply)
        await reply.stop()

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert (message.text, message.streaming) == ("half an answer", False)


# -- the reply's mode ---------------------------------------------------------------------------------


def test_a_reply_begins_in_the_mode_its_thread_asks_for(slack_fake, thread_ts):
    client = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
    chat = SlackReply(client, target(thread_ts), live=True, stream=True)
    alert = SlackReply(client, target(thread_ts), live=True, stream=False)
    final = SlackReply(client, target(thread_ts), live=False, stream=True)
    taken_over = SlackReply(client, target(thread_ts), live=True, stream=True, existing_ts=thread_ts)
    assert [reply.mode for reply in (chat, alert, final, taken_over)] == [
        ReplyMode.NOT_STARTED,
        ReplyMode.MESSAGE,
        ReplyMode.MESSAGE,
        ReplyMode.TAKEN_OVER,
    ]


def test_a_live_chat_reply_streams_then_ends(slack_fake, thread_ts):
    modes = []

    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        modes.append(reply.mode)
        await reply.show("Hello")
        await settle(reply)
        modes.append(reply.mode)
        await reply.finish("Hello, world.")
        modes.append(reply.mode)

    asyncio.run(scenario())
    assert modes == [ReplyMode.NOT_STARTED, ReplyMode.STREAMING, ReplyMode.ENDED]


def test_a_refused_stream_leaves_the_reply_a_message(slack_fake, thread_ts):
    slack_fake.configure_workspace(streams_enabled=False)

    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        await reply.show("Hello")
        await settle(reply)
        return reply.mode

    assert asyncio.run(scenario()) is ReplyMode.MESSAGE
    assert slack_fake.count("chat.postMessage") == 1


def test_a_reply_that_gave_its_stream_up_never_streams_again(slack_fake, thread_ts):
    slack_fake.fail("chat.appendStream", "timeout_after_apply")

    async def scenario():
        reply = product_reply(slack_fake, thread_ts)
        await reply.show("Hello")
        await settle(reply)
        await reply.show("Hello, world")
        await settle(reply)
        given_up = reply.mode
        await reply.show("Hello, world, again")
        await settle(reply)
        return given_up, reply.mode

    assert asyncio.run(scenario()) == (ReplyMode.MESSAGE, ReplyMode.MESSAGE)
    assert slack_fake.count("chat.startStream") == 1
    assert slack_fake.count("chat.appendStream") == 1
    assert slack_fake.last_call("chat.update").args["markdown_text"] == "Hello, world, again"


def test_a_reply_that_ended_writes_nothing_more_and_refuses_to_move(slack_fake, thread_ts):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        await reply.finish("Done.")
        reply.write([Write(WriteKind.UPDATE, View(None, (), "Later", "Later"), text_changed=True)])
        await settle(reply)
        with pytest.raises(IllegalReplyMove):
            reply._move_to(ReplyMode.STREAMING)
        return reply.mode

    assert asyncio.run(scenario()) is ReplyMode.ENDED
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "Done."
    assert len(slack_fake.calls()) == 1


# -- posts made once: keys in metadata, the outbox, lost answers -------------------------------------


QUICK = RetryPolicy(backoff=0.01, max_backoff=0.02)


def product_client(fake):
    with override_settings(SLACK_API_URL=fake.url):
        return async_web_client(fake.bot_token, timeout=1, policy=QUICK)


def product_reply(fake, thread_ts, outbox=None, *, stream=True, live=True) -> SlackReply:
    return SlackReply(
        product_client(fake), target(thread_ts), live=live, stream=stream, min_interval=0.0, outbox=outbox
    )


def earlier_post(fake, thread_ts: str, text: str, metadata: dict) -> str:
    """A post an earlier process made before it died."""
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.url, timeout=5)
    response = asyncio.run(
        client.chat_postMessage(
            channel=defaults.CHANNEL_ID, thread_ts=thread_ts, text=text, metadata=metadata
        )
    )
    return response["ts"]


def test_a_reply_post_that_timed_out_after_slack_made_it_is_not_posted_twice(slack_fake, thread_ts):
    slack_fake.fail("chat.postMessage", "timeout_after_apply")
    outbox = MemoryOutbox()
    posted: list[str] = []

    async def on_posted(ts: str) -> None:
        posted.append(ts)

    async def scenario():
        reply = SlackReply(
            product_client(slack_fake),
            target(thread_ts),
            live=False,
            stream=False,
            outbox=outbox,
            on_posted=on_posted,
        )
        await reply.finish("the whole answer")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "the whole answer"
    assert slack_fake.count("chat.postMessage") == 1
    assert posted == [message.ts]
    assert outbox.confirmed() == {REPLY_KEY: message.ts}


def test_a_stream_start_that_timed_out_after_slack_made_it_is_streamed_on(slack_fake, thread_ts):
    slack_fake.fail("chat.startStream", "timeout_after_apply")

    async def scenario():
        reply = product_reply(slack_fake, thread_ts)
        await reply.show("Hello")
        await settle(reply)
        await reply.show("Hello, world")
        await settle(reply)
        await reply.finish("Hello, world. Done.")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "Hello, world. Done."
    assert slack_fake.count("chat.startStream") == 1


def test_an_append_whose_answer_was_lost_gives_the_stream_up_without_showing_text_twice(
    slack_fake, thread_ts
):
    slack_fake.fail("chat.appendStream", "timeout_after_apply")

    async def scenario():
        reply = product_reply(slack_fake, thread_ts)
        await reply.show("Hello")
        await settle(reply)
        await reply.show("Hello, world")
        await settle(reply)
        await reply.show("Hello, world, again")
        await settle(reply)
        await reply.finish("Hello, world, again. Done.")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "Hello, world, again. Done."
    assert not message.streaming
    assert slack_fake.count("chat.appendStream") == 1
    assert message.metadata == {"event_type": "kourier_reply", "event_payload": {"reply": REPLY_KEY}}


def test_a_reply_an_earlier_process_posted_but_never_confirmed_is_taken_over(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(REPLY_KEY, PostKind.REPLY))
    earlier = earlier_post(
        slack_fake, thread_ts, "half", {"event_type": "kourier_reply", "event_payload": {"reply": REPLY_KEY}}
    )
    asyncio.run(product_reply(slack_fake, thread_ts, outbox, stream=False).finish("the whole answer"))
    [message] = reply_in(slack_fake, thread_ts)
    assert (message.ts, message.text) == (earlier, "the whole answer")
    assert slack_fake.count("chat.postMessage") == 1  # the earlier process's


def test_a_stream_an_earlier_process_began_but_never_confirmed_is_taken_over(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(REPLY_KEY, PostKind.REPLY))

    async def earlier_process():
        started = await product_client(slack_fake).chat_startStream(
            channel=defaults.CHANNEL_ID,
            thread_ts=thread_ts,
            recipient_user_id=defaults.ADA,
            recipient_team_id=defaults.TEAM_ID,
            chunks=[{"type": "markdown_text", "text": "half"}],
        )
        return started["ts"]

    earlier = asyncio.run(earlier_process())
    asyncio.run(product_reply(slack_fake, thread_ts, outbox).finish("the whole answer"))
    [message] = reply_in(slack_fake, thread_ts)
    assert (message.ts, message.text, message.streaming) == (earlier, "the whole answer", False)
    assert slack_fake.count("chat.startStream") == 1
    assert outbox.confirmed() == {REPLY_KEY: earlier}
    # Rewritten, it carries the reply's key: a later lost stream start is never mistaken for it.
    assert message.metadata == {"event_type": "kourier_reply", "event_payload": {"reply": REPLY_KEY}}


def test_the_parts_of_a_long_answer_are_posted_once_each(slack_fake, thread_ts):
    answer = ("word " * 3000).strip()
    outbox = MemoryOutbox()
    asyncio.run(product_reply(slack_fake, thread_ts, outbox, live=False).finish(answer))
    # A restarted process writes the answer again: the reply is updated, the part is not posted again.
    asyncio.run(product_reply(slack_fake, thread_ts, outbox, live=False).finish(answer))
    messages = reply_in(slack_fake, thread_ts)
    assert len(messages) == 2
    assert messages[1].metadata == {
        "event_type": "kourier_reply",
        "event_payload": {"reply": REPLY_KEY, "part": "2"},
    }
    assert set(outbox.confirmed()) == {REPLY_KEY, part_key(REPLY_KEY, 2)}
    assert slack_fake.count("chat.postMessage") == 2


def test_a_last_write_slack_fails_still_stops_the_stream_with_its_text(slack_fake, thread_ts):
    reply = product_reply(slack_fake, thread_ts)
    # Not a fault a retry helps: the stop is refused once, and the turn hears of it.
    slack_fake.fail("chat.stopStream", "invalid_arguments")

    async def scenario():
        await reply.show("Half of it. ")
        await settle(reply)
        with pytest.raises(SlackApiError):
            await reply.finish("Half of it. The rest.")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "Half of it. "
    assert not message.streaming
    assert [c.error for c in slack_fake.calls("chat.stopStream")] == ["invalid_arguments", None]


def everything_sent(fake) -> str:
    """Every text and chunk the reply sent to Slack, as Slack received them, one call per line."""
    sent = []
    for call in fake.calls():
        args = call.args
        sent += [str(args.get(name, "")) for name in ("text", "markdown_text", "blocks", "chunks")]
    return "\n".join(sent)


STEERED_ANSWER = "<!channel> urgent: log in at [https://good.example](https://evil.example) <@U0ADA>"


def test_a_streamed_answer_never_sends_a_broadcast_or_a_disguised_link_even_across_chunks(
    slack_fake, thread_ts
):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts)
        for end in (6, 10, 40, len(STEERED_ANSWER)):  # "<!chan", then the rest: a form split between writes
            await reply.show(STEERED_ANSWER[:end])
            await settle(reply)
        await reply.finish(STEERED_ANSWER)

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    streamed = "".join(
        chunk.get("text", "")
        for method in ("chat.startStream", "chat.appendStream", "chat.stopStream")
        for call in slack_fake.calls(method)
        for chunk in call.args.get("chunks") or []
    )
    for shown in (message.text, streamed, everything_sent(slack_fake)):
        assert "<!channel>" not in shown
        assert "](https://evil.example)" not in shown
        assert "<@U0ADA>" not in shown
    assert "urgent: log in at https://evil.example" in message.text


def test_an_alert_threads_notification_text_and_cards_are_neutralized_too(slack_fake, thread_ts):
    card = Card("call-1", "page(<!here> <!subteam^S0OPS|@ops>)", CardStatus.IN_PROGRESS)
    view = View(None, (card,), "", card.title)

    async def scenario():
        reply = make_reply(slack_fake, thread_ts, stream=False)
        await reply.end([Write(WriteKind.STOP, view, changed=(card,), first=True)])

    asyncio.run(scenario())
    sent = everything_sent(slack_fake)
    assert "<!here>" not in sent
    assert "<!subteam" not in sent
    assert slack_fake.last_call("chat.postMessage").args["text"].startswith("page(")


def test_a_binding_that_allows_mentions_lets_the_agent_mention_a_person_but_never_the_channel(
    slack_fake, thread_ts
):
    async def scenario():
        client = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
        reply = SlackReply(client, target(thread_ts), live=False, stream=False, allow_user_mentions=True)
        await reply.finish("<@U0ADA> please look <!here>")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text.startswith("<@U0ADA> please look ")
    assert "<!here>" not in message.text


def test_an_answer_past_the_most_messages_stops_there_with_a_line_saying_how_much_was_cut(
    slack_fake, thread_ts
):
    answer = "".join(f"line {n:05d} of the answer\n" for n in range(2000))  # about 46,000 characters

    async def scenario():
        client = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
        await SlackReply(client, target(thread_ts), live=False, stream=False, max_messages=2).finish(answer)

    asyncio.run(scenario())
    first, last = reply_in(slack_fake, thread_ts)
    shown, _, line = last.text.rpartition("\n\n")
    not_posted = len(answer) - len(first.text) - len(shown)
    assert line == ANSWER_CUT_LINE.format(messages=2, characters=not_posted)
    assert 20_000 < not_posted < len(answer)
    assert answer.startswith(first.text)
    assert len(last.text) <= MESSAGE_TEXT_LIMIT


def test_an_answer_the_runner_kept_only_the_start_of_counts_what_it_did_not_keep(slack_fake, thread_ts):
    async def scenario():
        client = AsyncWebClient(token=slack_fake.bot_token, base_url=slack_fake.url, timeout=5)
        reply = SlackReply(client, target(thread_ts), live=False, stream=False, max_messages=2)
        reply.note_not_kept(1_000_000)
        await reply.finish("the start")

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "the start\n\n" + ANSWER_CUT_LINE.format(messages=2, characters=1_000_000)


FEEDBACK = feedback_block(7)


@pytest.mark.parametrize(
    ("live", "rewritten"),
    [(True, False), (True, True), (False, False)],
    ids=["a stream stopped", "a stream rewritten at its end", "final output"],
)
def test_closing_blocks_go_under_the_last_write_only_and_the_words_stay(
    slack_fake, thread_ts, live, rewritten
):
    async def scenario():
        reply = make_reply(slack_fake, thread_ts, live=live)
        await reply.show("draft that will change" if rewritten else "The pods")
        await settle(reply)
        await reply.finish("The pods are fine.", closing_blocks=[FEEDBACK])

    asyncio.run(scenario())
    [message] = reply_in(slack_fake, thread_ts)
    assert message.text == "The pods are fine."
    assert [b for b in message.blocks if b["type"] == "actions"] == [FEEDBACK]
    updates_and_posts = slack_fake.calls("chat.postMessage") + slack_fake.calls("chat.update")
    assert all("kourier-feedback" not in json.dumps(call.args) for call in updates_and_posts[:-1])
