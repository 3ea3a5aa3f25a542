"""Reading the workspace as a person would: threads, messages, reactions, ephemerals, and waiting for the app."""

from __future__ import annotations

import threading

import pytest
from slack_sdk import WebClient

from simulator import SlackFake
from simulator.defaults import ADA, CHANNEL_ID, GRACE, TEAM_ID


def test_a_thread_reads_in_order_with_everything_a_person_sees(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, f"{slack_fake.bot_mention} status?")
    slack_client.reactions_add(channel=CHANNEL_ID, timestamp=root, name="hourglass_flowing_sand")
    slack_fake.user_reacts(GRACE, CHANNEL_ID, root, "eyes")
    metadata = {"event_type": "kourier_reply", "event_payload": {"turn": "T1"}}
    answer = slack_client.chat_postMessage(
        channel=CHANNEL_ID, thread_ts=root, text="All green", metadata=metadata
    )
    stream = slack_client.chat_startStream(
        channel=CHANNEL_ID,
        thread_ts=root,
        recipient_user_id=ADA,
        recipient_team_id=TEAM_ID,
        markdown_text="Work",
    )
    follow_up = slack_fake.user_says(GRACE, CHANNEL_ID, "thanks", thread_ts=answer["ts"])

    thread = slack_fake.thread(CHANNEL_ID, root)

    assert [m.ts for m in thread] == [root, answer["ts"], stream["ts"], follow_up]
    first, reply, streaming, last = thread
    assert (first.user, first.is_bot, first.reply_count) == (ADA, False, 3)
    assert first.reactions == {"hourglass_flowing_sand": [slack_fake.bot_user_id], "eyes": [GRACE]}
    assert (reply.is_bot, reply.text, reply.metadata, reply.thread_ts) == (True, "All green", metadata, root)
    assert (streaming.streaming, streaming.stream_phase, streaming.text) == (True, "streaming", "Work")
    assert (last.user, last.text) == (GRACE, "thanks")
    assert slack_fake.thread(CHANNEL_ID, answer["ts"]) == thread  # any ts in the thread opens it


def test_a_deleted_root_with_replies_stays_as_a_tombstone(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    root = slack_client.chat_postMessage(channel=CHANNEL_ID, text="alert")["ts"]
    slack_fake.user_says(ADA, CHANNEL_ID, "looking", thread_ts=root)
    slack_client.chat_delete(channel=CHANNEL_ID, ts=root)
    tombstone, reply = slack_fake.thread(CHANNEL_ID, root)
    assert (tombstone.subtype, tombstone.text, reply.text) == (
        "tombstone",
        "This message was deleted.",
        "looking",
    )
    replies = slack_client.conversations_replies(channel=CHANNEL_ID, ts=root)["messages"]
    assert [m.get("subtype") for m in replies] == ["tombstone", None]


def test_unknown_messages_are_an_error_not_an_empty_thread(slack_fake: SlackFake) -> None:
    with pytest.raises(KeyError):
        slack_fake.thread(CHANNEL_ID, "1500000000.000100")
    with pytest.raises(KeyError):
        slack_fake.message(CHANNEL_ID, "1500000000.000100")


def test_the_channel_shows_top_level_messages_only(slack_client: WebClient, slack_fake: SlackFake) -> None:
    root = slack_fake.user_says(ADA, CHANNEL_ID, "one")
    slack_client.chat_postMessage(channel=CHANNEL_ID, thread_ts=root, text="in the thread")
    slack_client.chat_postMessage(channel=CHANNEL_ID, text="two")
    assert [m.text for m in slack_fake.messages(CHANNEL_ID)] == ["one", "two"]


def test_ephemerals_show_only_to_their_person_and_channel(
    slack_client: WebClient, slack_fake: SlackFake
) -> None:
    slack_fake.add_channel("C0002", "other", members=[ADA])
    slack_client.chat_postEphemeral(channel=CHANNEL_ID, user=ADA, text="here")
    slack_client.chat_postEphemeral(channel="C0002", user=ADA, text="there")
    assert [e.text for e in slack_fake.ephemerals(ADA)] == ["here", "there"]
    assert [e.text for e in slack_fake.ephemerals(ADA, channel="C0002")] == ["there"]
    assert slack_fake.messages(CHANNEL_ID) == []


def test_a_test_can_wait_for_the_app_without_sleeping(slack_fake: SlackFake) -> None:
    client = WebClient(token=slack_fake.bot_token, base_url=slack_fake.url)
    app = threading.Thread(target=lambda: client.chat_postMessage(channel=CHANNEL_ID, text="later"))
    app.start()
    call = slack_fake.wait_for_call("chat.postMessage")
    app.join()
    assert call.args["text"] == "later"
    with pytest.raises(TimeoutError):
        slack_fake.wait_for_call("chat.update", timeout=0.1)
