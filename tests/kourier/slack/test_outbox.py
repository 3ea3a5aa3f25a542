"""Posts made once, against the Slack fake over HTTP: the keys in their metadata, the caller's Outbox,
and posts whose answer was lost, looked for in the thread."""

import asyncio

import pytest
from django.test import override_settings
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.clients import RetryPolicy, async_web_client
from kourier.slack.outbox import (
    EarlierPost,
    IntentState,
    PostKind,
    intend_reply,
    notice_key,
    notice_metadata,
    part_key,
    part_metadata,
    post_notice,
    post_once,
    reply_metadata,
)
from simulator import defaults
from tests.support.memory_outbox import MemoryOutbox

REPLY_KEY = "turn-key-1"
NOTICE_KEY = notice_key(REPLY_KEY)
QUICK = RetryPolicy(backoff=0.01, max_backoff=0.02)


@pytest.fixture
def thread_ts(slack_fake) -> str:
    return slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi")


def reply_in(fake, thread_ts):
    return fake.thread(defaults.CHANNEL_ID, thread_ts)[1:]


def product_client(fake):
    with override_settings(SLACK_API_URL=fake.url):
        return async_web_client(fake.bot_token, timeout=1, policy=QUICK)


def earlier_post(fake, thread_ts: str, text: str, metadata: dict) -> str:
    """A post an earlier process made before it died."""
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.url, timeout=5)
    response = asyncio.run(
        client.chat_postMessage(
            channel=defaults.CHANNEL_ID, thread_ts=thread_ts, text=text, metadata=metadata
        )
    )
    return response["ts"]


def earlier_stream(fake, thread_ts: str) -> str:
    """A stream an earlier process began before it died (a stream carries no metadata until it stops)."""

    async def start():
        started = await product_client(fake).chat_startStream(
            channel=defaults.CHANNEL_ID,
            thread_ts=thread_ts,
            recipient_user_id=defaults.ADA,
            recipient_team_id=defaults.TEAM_ID,
            chunks=[{"type": "markdown_text", "text": "half"}],
        )
        return started["ts"]

    return asyncio.run(start())


def the_reply_intended(fake, thread_ts, outbox, *, streams=True) -> EarlierPost | None:
    return asyncio.run(
        intend_reply(product_client(fake), outbox, REPLY_KEY, defaults.CHANNEL_ID, thread_ts, streams=streams)
    )


# -- keys and metadata: stored in the outbox and in Slack, so kept as they are ----------------------


def test_a_replys_parts_and_notices_have_keys_of_their_own_derived_from_its_key():
    assert part_key(REPLY_KEY, 2) == "turn-key-1:part-2"
    assert notice_key(REPLY_KEY) == "turn-key-1:notice"
    assert notice_key(REPLY_KEY, "expired") == "turn-key-1:expired"


def test_each_post_carries_its_key_in_its_metadata():
    assert reply_metadata(REPLY_KEY) == {"event_type": "kourier_reply", "event_payload": {"reply": REPLY_KEY}}
    assert part_metadata(REPLY_KEY, 2) == {
        "event_type": "kourier_reply",
        "event_payload": {"reply": REPLY_KEY, "part": "2"},
    }
    assert notice_metadata(NOTICE_KEY) == {
        "event_type": "kourier_notice",
        "event_payload": {"notice": NOTICE_KEY},
    }


# -- notices and parts ------------------------------------------------------------------------------


def test_a_notice_carries_its_key_and_is_confirmed(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    ts = asyncio.run(
        post_notice(
            product_client(slack_fake),
            defaults.CHANNEL_ID,
            thread_ts,
            "It failed.",
            key=NOTICE_KEY,
            outbox=outbox,
        )
    )
    [notice] = reply_in(slack_fake, thread_ts)
    assert notice.ts == ts
    assert notice.metadata == notice_metadata(NOTICE_KEY)
    assert outbox.confirmed() == {NOTICE_KEY: ts}


def test_a_confirmed_notice_is_not_posted_again_after_a_restart(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    first = asyncio.run(
        post_notice(
            product_client(slack_fake),
            defaults.CHANNEL_ID,
            thread_ts,
            "It failed.",
            key=NOTICE_KEY,
            outbox=outbox,
        )
    )
    again = asyncio.run(
        post_notice(
            product_client(slack_fake),
            defaults.CHANNEL_ID,
            thread_ts,
            "It failed.",
            key=NOTICE_KEY,
            outbox=outbox,
        )
    )
    assert again == first
    assert len(reply_in(slack_fake, thread_ts)) == 1
    assert slack_fake.count("chat.postMessage") == 1
    assert slack_fake.count("conversations.replies") == 0


def test_an_intended_notice_that_reached_slack_is_found_after_a_restart(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    # An earlier process recorded the intent and posted, then died before it confirmed.
    asyncio.run(outbox.intend(NOTICE_KEY, PostKind.NOTICE))
    posted = earlier_post(slack_fake, thread_ts, "It failed.", notice_metadata(NOTICE_KEY))
    ts = asyncio.run(
        post_notice(
            product_client(slack_fake),
            defaults.CHANNEL_ID,
            thread_ts,
            "It failed.",
            key=NOTICE_KEY,
            outbox=outbox,
        )
    )
    assert ts == posted
    assert len(reply_in(slack_fake, thread_ts)) == 1
    assert outbox.confirmed() == {NOTICE_KEY: posted}


def test_an_intended_notice_that_never_reached_slack_is_posted_after_a_restart(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(NOTICE_KEY, PostKind.NOTICE))
    ts = asyncio.run(
        post_notice(
            product_client(slack_fake),
            defaults.CHANNEL_ID,
            thread_ts,
            "It failed.",
            key=NOTICE_KEY,
            outbox=outbox,
        )
    )
    [notice] = reply_in(slack_fake, thread_ts)
    assert notice.ts == ts
    assert slack_fake.count("conversations.replies") == 1
    assert outbox.confirmed() == {NOTICE_KEY: ts}


def test_a_notice_without_a_key_is_posted_with_a_key_of_its_own(slack_fake, thread_ts):
    ts = asyncio.run(post_notice(product_client(slack_fake), defaults.CHANNEL_ID, thread_ts, "It expired."))
    [notice] = reply_in(slack_fake, thread_ts)
    assert notice.ts == ts
    assert notice.metadata["event_type"] == "kourier_notice"
    assert notice.metadata["event_payload"]["notice"].startswith("notice-")


def test_a_notice_keeps_its_fixed_text_with_its_intent_and_a_part_does_not(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(
        post_notice(
            product_client(slack_fake),
            defaults.CHANNEL_ID,
            thread_ts,
            "It failed.",
            key=NOTICE_KEY,
            outbox=outbox,
        )
    )
    part = part_key(REPLY_KEY, 2)
    asyncio.run(
        post_once(
            product_client(slack_fake),
            defaults.CHANNEL_ID,
            thread_ts,
            key=part,
            kind=PostKind.PART,
            metadata=part_metadata(REPLY_KEY, 2),
            outbox=outbox,
            markdown_text="the rest of the answer",
        )
    )
    assert outbox.records[NOTICE_KEY]["text"] == "It failed."
    assert outbox.records[part]["text"] == ""
    assert set(outbox.confirmed()) == {NOTICE_KEY, part}


# -- a reply's message: intended before its first post or stream ------------------------------------


def test_a_new_reply_is_only_recorded(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    assert the_reply_intended(slack_fake, thread_ts, outbox) is None
    assert outbox.records[REPLY_KEY]["kind"] is PostKind.REPLY
    assert slack_fake.calls() == []


def test_a_confirmed_reply_is_its_earlier_message_without_asking_slack(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(REPLY_KEY, PostKind.REPLY))
    asyncio.run(outbox.confirm(REPLY_KEY, "1700000000.000100"))
    earlier = the_reply_intended(slack_fake, thread_ts, outbox)
    assert earlier == EarlierPost("1700000000.000100", IntentState.CONFIRMED)
    assert slack_fake.calls() == []


def test_a_pending_reply_is_found_by_its_metadata_and_left_for_the_reply_to_confirm(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(REPLY_KEY, PostKind.REPLY))
    posted = earlier_post(slack_fake, thread_ts, "half", reply_metadata(REPLY_KEY))
    assert the_reply_intended(slack_fake, thread_ts, outbox) == EarlierPost(posted, IntentState.PENDING)
    assert outbox.confirmed() == {}


def test_a_pending_reply_that_streamed_is_found_as_the_stream_this_bot_began(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(REPLY_KEY, PostKind.REPLY))
    started = earlier_stream(slack_fake, thread_ts)
    assert the_reply_intended(slack_fake, thread_ts, outbox) == EarlierPost(started, IntentState.PENDING)


def test_a_pending_reply_that_never_streams_is_not_looked_for_among_streams(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(REPLY_KEY, PostKind.REPLY))
    earlier_stream(slack_fake, thread_ts)
    assert the_reply_intended(slack_fake, thread_ts, outbox, streams=False) is None
    assert slack_fake.count("conversations.replies") == 1
    assert slack_fake.count("auth.test") == 0


def test_a_pending_reply_that_never_reached_slack_is_not_found(slack_fake, thread_ts):
    outbox = MemoryOutbox()
    asyncio.run(outbox.intend(REPLY_KEY, PostKind.REPLY))
    assert the_reply_intended(slack_fake, thread_ts, outbox) is None
    assert slack_fake.count("conversations.replies") == 2  # by its metadata, then among streams
