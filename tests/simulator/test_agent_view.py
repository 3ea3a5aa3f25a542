"""Slack's agent surface in the fake: opening the app's Messages tab, suggested prompts and thread
titles, through the real slack_sdk client and a receiver that verifies each event's signature."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient

from simulator import SlackFake
from simulator.defaults import ADA, CHANNEL_ID, GRACE
from tests.simulator.helpers import slack_error

from .receiver import Receiver

PROMPTS = [{"title": "Status", "message": "What is the status of the deploy?"}]


def test_opening_the_app_opens_an_im_and_sends_app_home_opened_on_the_messages_tab(
    app_fake: SlackFake, receiver: Receiver
) -> None:
    im = app_fake.user_opens_app(ADA)
    app_fake.wait_until(lambda: len(receiver.events()) == 1)
    [event] = receiver.events()
    assert event == {
        "type": "app_home_opened",
        "user": ADA,
        "channel": im,
        "tab": "messages",
        "event_ts": event["event_ts"],
    }
    assert im.startswith("D")
    assert app_fake.user_opens_app(ADA) == im  # the same conversation every time
    assert app_fake.user_opens_app(GRACE) != im


def test_a_message_in_the_im_is_a_message_event_of_channel_type_im(
    app_fake: SlackFake, receiver: Receiver
) -> None:
    im = app_fake.user_opens_app(ADA)
    ts = app_fake.user_says(ADA, im, "hello")
    app_fake.wait_until(lambda: len(receiver.events()) == 2)
    message = receiver.events()[1]
    assert (message["type"], message["channel_type"], message["ts"]) == ("message", "im", ts)


def test_suggested_prompts_go_on_the_messages_tab(app_fake: SlackFake, slack_client: WebClient) -> None:
    im = app_fake.user_opens_app(ADA)
    slack_client.assistant_threads_setSuggestedPrompts(channel_id=im, prompts=PROMPTS, title="Try")
    assert app_fake.suggested_prompts(im) == [("Status", "What is the status of the deploy?")]


def test_suggested_prompts_with_a_thread_ts_are_silently_ignored_in_the_agent_view(
    app_fake: SlackFake, slack_client: WebClient
) -> None:
    im = app_fake.user_opens_app(ADA)
    ts = app_fake.user_says(ADA, im, "hello")
    assert slack_client.assistant_threads_setSuggestedPrompts(channel_id=im, thread_ts=ts, prompts=PROMPTS)[
        "ok"
    ]
    assert app_fake.suggested_prompts(im) == []


@pytest.mark.parametrize(
    "prompts",
    [
        [],
        PROMPTS * 5,
        [{"title": "Status"}],
        [{"title": "", "message": "m"}],
    ],
    ids=["none", "five", "no message", "empty title"],
)
def test_suggested_prompts_are_one_to_four_with_a_title_and_a_message(
    app_fake: SlackFake, slack_client: WebClient, prompts: list
) -> None:
    im = app_fake.user_opens_app(ADA)
    assert slack_error(
        slack_client.assistant_threads_setSuggestedPrompts, channel_id=im, prompts=prompts
    ) == ("invalid_arguments")


def test_suggested_prompts_and_titles_need_the_apps_im(app_fake: SlackFake, slack_client: WebClient) -> None:
    set_prompts = slack_client.assistant_threads_setSuggestedPrompts
    assert slack_error(set_prompts, channel_id=CHANNEL_ID, prompts=PROMPTS) == "channel_not_found"
    assert slack_error(set_prompts, channel_id="D0NOPE", prompts=PROMPTS) == "channel_not_found"
    ts = app_fake.user_says(ADA, CHANNEL_ID, "hello")
    set_title = slack_client.assistant_threads_setTitle
    assert slack_error(set_title, channel_id=CHANNEL_ID, thread_ts=ts, title="t") == "channel_not_found"


def test_a_thread_gets_its_title(app_fake: SlackFake, slack_client: WebClient) -> None:
    im = app_fake.user_opens_app(ADA)
    ts = app_fake.user_says(ADA, im, "hello")
    slack_client.assistant_threads_setTitle(channel_id=im, thread_ts=ts, title="Greetings")
    assert app_fake.thread_title(im, ts) == "Greetings"
    set_title = slack_client.assistant_threads_setTitle
    assert (
        slack_error(set_title, channel_id=im, thread_ts="1700000000.000001", title="t") == "invalid_thread_ts"
    )
    assert slack_error(set_title, channel_id=im, thread_ts=ts, title="") == "invalid_arguments"


def test_without_assistant_write_both_methods_answer_missing_scope(
    app_fake: SlackFake, slack_client: WebClient
) -> None:
    im = app_fake.user_opens_app(ADA)
    app_fake.configure_workspace(assistant_status="missing_scope")
    error = slack_error(slack_client.assistant_threads_setSuggestedPrompts, channel_id=im, prompts=PROMPTS)
    assert error == "missing_scope"


def test_a_message_posted_to_a_persons_user_id_lands_in_their_direct_messages_with_the_app(
    slack_fake: SlackFake, slack_client: WebClient
) -> None:
    answer = slack_client.chat_postMessage(
        channel=ADA, text="Only members of this channel can stop the agent."
    )

    im = slack_fake.user_opens_app(ADA)
    assert answer["channel"] == im
    assert [m.text for m in slack_fake.app_messages_to(ADA)] == [
        "Only members of this channel can stop the agent."
    ]
    assert slack_fake.app_messages_to(GRACE) == []
