"""The stream state machine (docs/slack-platform.md §1), through the real clients and slack_sdk's
ChatStream helper."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.messages.chunk import MarkdownTextChunk, PlanUpdateChunk, TaskUpdateChunk
from slack_sdk.models.metadata import Metadata
from slack_sdk.web.async_client import AsyncWebClient

from simulator import ManualClock, SlackFake
from simulator.defaults import ADA, CHANNEL_ID, GRACE, TEAM_ID

FEEDBACK_BLOCKS = [
    {
        "type": "actions",
        "block_id": "feedback",
        "elements": [{"type": "button", "action_id": "good", "text": {"type": "plain_text", "text": "Good"}}],
    }
]


def task(task_id: str, status: str, title: str = "Searching") -> dict[str, Any]:
    return {"type": "task_update", "id": task_id, "title": title, "status": status}


def slack_error(call: Callable[..., Any], **kwargs: Any) -> str:
    with pytest.raises(SlackApiError) as failure:
        call(**kwargs)
    return failure.value.response["error"]


def start_stream(client: WebClient, thread_ts: str, **kwargs: Any) -> str:
    answer = client.chat_startStream(
        channel=CHANNEL_ID, thread_ts=thread_ts, recipient_user_id=ADA, recipient_team_id=TEAM_ID, **kwargs
    )
    return answer["ts"]


@pytest.fixture
def root(slack_fake: SlackFake) -> str:
    return slack_fake.user_says(ADA, CHANNEL_ID, f"{slack_fake.bot_mention} find it")


def test_chat_stream_helper_end_to_end(slack_client: WebClient, slack_fake: SlackFake, root: str) -> None:
    streamer = slack_client.chat_stream(
        channel=CHANNEL_ID, thread_ts=root, recipient_team_id=TEAM_ID, recipient_user_id=ADA, buffer_size=10
    )
    streamer.append(markdown_text="Hello")
    assert slack_fake.count("chat.startStream") == 0  # still in the helper's buffer
    streamer.append(markdown_text=", world. ")
    assert streamer.ts is not None
    live = slack_fake.message(CHANNEL_ID, streamer.ts)
    assert (live.streaming, live.text) == (True, "Hello, world. ")

    streamer.append(chunks=[TaskUpdateChunk(id="t1", title="Searching", status="in_progress")])
    streamer.append(chunks=[TaskUpdateChunk(id="t2", title="Reading", status="in_progress")])
    streamer.append(markdown_text="Done")
    streamer.stop(
        chunks=[TaskUpdateChunk(id="t1", title="Searched", status="complete")],
        blocks=FEEDBACK_BLOCKS,
        metadata=Metadata(event_type="kourier_reply", event_payload={"turn": "t1"}),
    )

    thread = slack_fake.thread(CHANNEL_ID, root)
    assert [m.ts for m in thread] == [root, streamer.ts]
    reply = thread[1]
    assert (reply.streaming, reply.stream_phase, reply.text) == (False, "stopped", "Hello, world. Done")
    assert [(c.id, c.title, c.status, c.left_in_progress) for c in reply.cards] == [
        ("t1", "Searched", "complete", False),
        ("t2", "Reading", "error", True),  # stopped while in progress: shown as failed
    ]
    assert reply.blocks == FEEDBACK_BLOCKS
    assert reply.metadata == {"event_type": "kourier_reply", "event_payload": {"turn": "t1"}}
    assert reply.bot_id == slack_fake.bot_id


def test_async_chat_stream_helper(
    async_slack_client: AsyncWebClient, slack_fake: SlackFake, root: str
) -> None:
    async def stream() -> str:
        streamer = await async_slack_client.chat_stream(
            channel=CHANNEL_ID, thread_ts=root, recipient_team_id=TEAM_ID, recipient_user_id=ADA
        )
        await streamer.append(markdown_text="short")  # buffered
        await streamer.stop(markdown_text=" answer")  # starts, then stops with the buffer as a chunk
        assert streamer.ts is not None
        return streamer.ts

    ts = asyncio.run(stream())
    assert slack_fake.message(CHANNEL_ID, ts).text == "short answer"
    assert [c.method for c in slack_fake.calls()] == ["chat.startStream", "chat.stopStream"]


def test_start_refusals(slack_client: WebClient, slack_fake: SlackFake, root: str) -> None:
    start = slack_client.chat_startStream
    assert slack_error(start, channel=CHANNEL_ID, thread_ts=root, recipient_team_id=TEAM_ID) == (
        "missing_recipient_user_id"
    )
    assert slack_error(start, channel=CHANNEL_ID, thread_ts=root, recipient_user_id=ADA) == (
        "missing_recipient_team_id"
    )
    assert slack_error(
        start, channel=CHANNEL_ID, thread_ts=root, recipient_user_id="U0NOBODY", recipient_team_id=TEAM_ID
    ) == ("user_not_found")
    recipient = {"recipient_user_id": ADA, "recipient_team_id": TEAM_ID}
    assert slack_error(start, channel="C9999", thread_ts=root, **recipient) == "channel_not_found"
    assert slack_error(
        start,
        channel=CHANNEL_ID,
        thread_ts=root,
        markdown_text="a",
        chunks=[MarkdownTextChunk(text="b")],
        **recipient,
    ) == ("cannot_provide_both_markdown_text_and_chunks")
    assert slack_error(
        start, channel=CHANNEL_ID, thread_ts=root, chunks=[task("t1", "completed")], **recipient
    ) == ("invalid_chunks")
    slack_fake.configure_workspace(streams_enabled=False)
    assert slack_error(start, channel=CHANNEL_ID, thread_ts=root, **recipient) == "feature_not_enabled"
    assert [m.ts for m in slack_fake.thread(CHANNEL_ID, root)] == [root]  # no refused start left a message


def test_a_dm_stream_needs_no_recipient(slack_client: WebClient, slack_fake: SlackFake) -> None:
    slack_fake.add_dm("D0ADA", ADA)
    question = slack_fake.user_says(ADA, "D0ADA", "hi")
    answer = slack_client.chat_startStream(channel="D0ADA", thread_ts=question, markdown_text="hello")
    assert slack_fake.message("D0ADA", answer["ts"]).streaming


def test_a_stream_is_locked_to_its_first_content_form(slack_client: WebClient, root: str) -> None:
    text_stream = start_stream(slack_client, root, markdown_text="text first")
    slack_client.chat_appendStream(channel=CHANNEL_ID, ts=text_stream, markdown_text=" more")
    chunk = [MarkdownTextChunk(text="x")]
    assert slack_error(slack_client.chat_appendStream, channel=CHANNEL_ID, ts=text_stream, chunks=chunk) == (
        "streaming_mode_mismatch"
    )
    assert slack_error(slack_client.chat_stopStream, channel=CHANNEL_ID, ts=text_stream, chunks=chunk) == (
        "streaming_mode_mismatch"
    )

    chunk_stream = start_stream(slack_client, root)  # no content yet: nothing is locked
    slack_client.chat_appendStream(channel=CHANNEL_ID, ts=chunk_stream, chunks=[task("t1", "pending")])
    assert slack_error(
        slack_client.chat_stopStream, channel=CHANNEL_ID, ts=chunk_stream, markdown_text="end"
    ) == ("streaming_mode_mismatch")
    slack_client.chat_stopStream(channel=CHANNEL_ID, ts=chunk_stream, chunks=[])


def test_a_task_update_with_a_known_id_updates_that_card(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    ts = start_stream(slack_client, root, chunks=[task("t1", "pending", "Plan")], task_display_mode="plan")
    append = slack_client.chat_appendStream
    append(
        channel=CHANNEL_ID,
        ts=ts,
        chunks=[PlanUpdateChunk(title="The plan"), task("t2", "in_progress", "Search")],
    )
    append(channel=CHANNEL_ID, ts=ts, chunks=[{**task("t1", "complete", "Planned"), "output": "3 steps"}])
    view = slack_fake.message(CHANNEL_ID, ts)
    assert [(c.id, c.title, c.status, c.output) for c in view.cards] == [
        ("t1", "Planned", "complete", "3 steps"),
        ("t2", "Search", "in_progress", None),
    ]
    assert view.plan_title == "The plan"
    assert view.card("t2").left_in_progress is False  # still streaming, so not yet an error


def test_a_stopped_stream_takes_no_more(slack_client: WebClient, root: str) -> None:
    ts = start_stream(slack_client, root, markdown_text="hi")
    slack_client.chat_stopStream(channel=CHANNEL_ID, ts=ts)
    assert slack_error(slack_client.chat_appendStream, channel=CHANNEL_ID, ts=ts, markdown_text="x") == (
        "message_not_in_streaming_state"
    )
    assert (
        slack_error(slack_client.chat_stopStream, channel=CHANNEL_ID, ts=ts)
        == "message_not_in_streaming_state"
    )
    assert slack_error(slack_client.chat_appendStream, channel=CHANNEL_ID, ts=root, markdown_text="x") == (
        "message_not_owned_by_app"
    )


def test_a_streaming_message_cannot_be_edited(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    ts = start_stream(slack_client, root, markdown_text="partial")
    assert (
        slack_error(slack_client.chat_update, channel=CHANNEL_ID, ts=ts, text="whole")
        == "streaming_state_conflict"
    )
    slack_client.chat_stopStream(channel=CHANNEL_ID, ts=ts)
    slack_client.chat_update(channel=CHANNEL_ID, ts=ts, text="whole")
    assert slack_fake.message(CHANNEL_ID, ts).text == "whole"


def test_stop_takes_at_most_50_blocks(slack_client: WebClient, root: str) -> None:
    ts = start_stream(slack_client, root, markdown_text="hi")
    stop = slack_client.chat_stopStream
    assert (
        slack_error(stop, channel=CHANNEL_ID, ts=ts, blocks=[{"type": "divider"}] * 51)
        == "msg_blocks_too_many"
    )
    assert slack_error(stop, channel=CHANNEL_ID, ts=ts, blocks=[{"type": "header"}]) == "invalid_blocks"
    stop(channel=CHANNEL_ID, ts=ts, blocks=[{"type": "divider"}] * 50)


def test_blocks_chunks_show_before_the_blocks_of_the_stop(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    context = {"type": "context", "elements": [{"type": "mrkdwn", "text": "step"}]}
    ts = start_stream(slack_client, root, chunks=[{"type": "blocks", "blocks": [context]}])
    slack_client.chat_stopStream(channel=CHANNEL_ID, ts=ts, blocks=FEEDBACK_BLOCKS)
    assert slack_fake.message(CHANNEL_ID, ts).blocks == [context, *FEEDBACK_BLOCKS]


def test_streams_expire_five_minutes_after_they_start(make_slack_fake: Callable[..., SlackFake]) -> None:
    clock = ManualClock()
    fake = make_slack_fake(clock=clock)
    client = WebClient(token=fake.bot_token, base_url=fake.url)
    root = fake.user_says(ADA, CHANNEL_ID, "go")
    ts = start_stream(client, root, chunks=[task("t1", "in_progress")])
    clock.advance(299)
    client.chat_appendStream(channel=CHANNEL_ID, ts=ts, chunks=[MarkdownTextChunk(text="still here")])
    clock.advance(1)  # appends do not extend the lifetime
    assert slack_error(
        client.chat_appendStream, channel=CHANNEL_ID, ts=ts, chunks=[MarkdownTextChunk(text="x")]
    ) == ("message_not_in_streaming_state")
    assert slack_error(client.chat_stopStream, channel=CHANNEL_ID, ts=ts) == "message_not_in_streaming_state"
    expired = fake.message(CHANNEL_ID, ts)
    assert (expired.stream_phase, expired.text, expired.card("t1").status) == (
        "expired",
        "still here",
        "error",
    )
    client.chat_update(channel=CHANNEL_ID, ts=ts, text="the whole answer")  # the documented recovery
    assert fake.message(CHANNEL_ID, ts).text == "the whole answer"


def test_a_short_stream_lifetime_expires_in_real_time(
    slack_client: WebClient, slack_fake: SlackFake, root: str
) -> None:
    slack_fake.configure_workspace(stream_lifetime=0.2)
    ts = start_stream(slack_client, root, markdown_text="hi")
    slack_fake.wait_until(lambda: not slack_fake.message(CHANNEL_ID, ts).streaming, timeout=5)
    assert slack_error(slack_client.chat_appendStream, channel=CHANNEL_ID, ts=ts, markdown_text="x") == (
        "message_not_in_streaming_state"
    )


@pytest.mark.filterwarnings("ignore:The top-level `text` argument is missing")
def test_task_cards_can_be_refused(slack_client: WebClient, slack_fake: SlackFake, root: str) -> None:
    slack_fake.configure_workspace(task_cards_enabled=False)
    assert slack_error(
        slack_client.chat_startStream,
        channel=CHANNEL_ID,
        thread_ts=root,
        recipient_user_id=ADA,
        recipient_team_id=TEAM_ID,
        chunks=[task("t1", "in_progress")],
    ) == ("invalid_chunks")
    ts = start_stream(slack_client, root, chunks=[MarkdownTextChunk(text="text still streams")])
    assert slack_error(
        slack_client.chat_appendStream, channel=CHANNEL_ID, ts=ts, chunks=[task("t1", "pending")]
    ) == ("invalid_chunks")
    card = {"type": "task_card", "task_id": "t1", "title": "Search", "status": "complete"}
    assert slack_error(slack_client.chat_postMessage, channel=CHANNEL_ID, blocks=[card]) == "invalid_blocks"
    plan = {"type": "plan", "title": "Plan", "tasks": [card]}
    posted = slack_client.chat_postMessage(channel=CHANNEL_ID, text="alert")
    assert slack_error(slack_client.chat_update, channel=CHANNEL_ID, ts=posted["ts"], blocks=[plan]) == (
        "invalid_blocks"
    )


def test_task_card_blocks_show_as_cards(slack_client: WebClient, slack_fake: SlackFake) -> None:
    card = {"type": "task_card", "task_id": "t1", "title": "Search", "status": "complete", "block_id": "c1"}
    posted = slack_client.chat_postMessage(channel=CHANNEL_ID, text="Search", blocks=[card])
    assert [(c.id, c.status) for c in slack_fake.message(CHANNEL_ID, posted["ts"]).cards] == [
        ("t1", "complete")
    ]


def test_a_person_can_stop_a_stream(slack_client: WebClient, slack_fake: SlackFake, root: str) -> None:
    ts = start_stream(slack_client, root, markdown_text="hi")
    slack_fake.user_stops_stream(CHANNEL_ID, ts)
    assert slack_error(slack_client.chat_appendStream, channel=CHANNEL_ID, ts=ts, markdown_text="x") == (
        "stopped_by_user"
    )


def test_the_recipient_may_be_someone_else_in_the_channel(slack_client: WebClient, root: str) -> None:
    started = slack_client.chat_startStream(
        channel=CHANNEL_ID,
        thread_ts=root,
        recipient_user_id=GRACE,
        recipient_team_id=TEAM_ID,
        markdown_text="hi",
    )
    assert started["ok"] is True
