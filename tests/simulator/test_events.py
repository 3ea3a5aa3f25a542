"""Events API and interactivity deliveries, checked by a receiver that verifies signatures with SignatureVerifier."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from slack_sdk import WebClient

from simulator import FakeMisuse, SlackFake
from simulator.defaults import ADA, APP_ID, CHANNEL_ID, GRACE, TEAM_ID
from tests.simulator.helpers import FORM_BLOCKS

from .receiver import SIGNING_SECRET, Receiver


def event_types(receiver: Receiver) -> list[str]:
    return [event.get("subtype") or event["type"] for event in receiver.events()]


def test_a_mention_delivers_app_mention_and_message(app_fake: SlackFake, receiver: Receiver) -> None:
    ts = app_fake.user_says(ADA, CHANNEL_ID, f"{app_fake.bot_mention} hello")

    assert [request.signature_valid for request in receiver.received] == [True, True]
    envelopes = [request.json() for request in receiver.received]
    assert [e["event"]["type"] for e in envelopes] == ["app_mention", "message"]
    for envelope in envelopes:
        assert envelope["type"] == "event_callback"
        assert (envelope["team_id"], envelope["api_app_id"]) == (TEAM_ID, APP_ID)
        assert envelope["token"] == "fake-verification-token"
        assert isinstance(envelope["event_time"], int)
        assert envelope["authorizations"] == [
            {
                "enterprise_id": None,
                "team_id": TEAM_ID,
                "user_id": app_fake.bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ]
        event = envelope["event"]
        assert (event["user"], event["text"], event["ts"], event["event_ts"], event["channel"]) == (
            ADA,
            f"<@{app_fake.bot_user_id}> hello",
            ts,
            ts,
            CHANNEL_ID,
        )
        assert event["client_msg_id"]
        assert "thread_ts" not in event
    assert envelopes[0]["event_id"] != envelopes[1]["event_id"]
    assert "channel_type" not in envelopes[0]["event"]
    assert envelopes[1]["event"]["channel_type"] == "channel"
    assert [(d.status, d.ok, d.acked_in_time) for d in app_fake.deliveries(ts=ts)] == [(200, True, True)] * 2


def test_a_thread_reply_names_its_thread(app_fake: SlackFake, receiver: Receiver) -> None:
    root = app_fake.user_says(ADA, CHANNEL_ID, "a question", deliver="none")
    reply = app_fake.user_says(GRACE, CHANNEL_ID, f"{app_fake.bot_mention} and?", thread_ts=root)
    mention, message = receiver.events()
    assert (mention["thread_ts"], message["thread_ts"], message["parent_user_id"]) == (root, root, ADA)
    assert "parent_user_id" not in mention
    assert mention["ts"] == message["ts"] == reply


def test_delivery_order_and_choice(app_fake: SlackFake, receiver: Receiver) -> None:
    app_fake.user_says(ADA, CHANNEL_ID, "no mention")
    app_fake.user_says(ADA, CHANNEL_ID, f"{app_fake.bot_mention} one", order="message_first")
    app_fake.user_says(ADA, CHANNEL_ID, f"{app_fake.bot_mention} two", deliver="app_mention")
    app_fake.user_says(ADA, CHANNEL_ID, f"{app_fake.bot_mention} three", deliver="message")
    assert event_types(receiver) == ["message", "message", "app_mention", "app_mention", "message"]


def test_both_events_can_arrive_at_once(app_fake: SlackFake, receiver: Receiver) -> None:
    # Each request waits for the other inside the receiver: sent one after the other, they would not meet.
    meeting = threading.Barrier(2, timeout=5)
    receiver.before_answer = lambda _request: meeting.wait()
    app_fake.user_says(ADA, CHANNEL_ID, f"{app_fake.bot_mention} hi", concurrent=True)
    assert [d.status for d in app_fake.deliveries()] == [200, 200]
    assert sorted(event_types(receiver)) == ["app_mention", "message"]


def test_redelivery_is_the_same_event_with_retry_headers(app_fake: SlackFake, receiver: Receiver) -> None:
    app_fake.user_says(ADA, CHANNEL_ID, "hello")
    first = app_fake.deliveries()[0]
    again = app_fake.redeliver(first, retry_num=2, reason="http_timeout")
    original, retry = receiver.received
    assert retry.signature_valid
    assert retry.body == original.body
    assert (retry.headers["x-slack-retry-num"], retry.headers["x-slack-retry-reason"]) == (
        "2",
        "http_timeout",
    )
    assert "x-slack-retry-num" not in original.headers
    assert (again.event_id, again.retry_num) == (first.event_id, 2)


def test_the_apps_own_messages_come_back_as_events(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    posted = slack_client.chat_postMessage(channel=CHANNEL_ID, text="mine")
    slack_client.chat_update(channel=CHANNEL_ID, ts=posted["ts"], text="mine, edited")
    app_fake.wait_for_deliveries()
    slack_client.chat_delete(channel=CHANNEL_ID, ts=posted["ts"])
    app_fake.wait_for_deliveries()
    posted_event, changed, deleted = receiver.events()
    assert (posted_event["bot_id"], posted_event["user"], posted_event["text"]) == (
        app_fake.bot_id,
        app_fake.bot_user_id,
        "mine",
    )
    assert (changed["subtype"], changed["message"]["text"], changed["previous_message"]["text"]) == (
        "message_changed",
        "mine, edited",
        "mine",
    )
    assert (deleted["subtype"], deleted["deleted_ts"]) == ("message_deleted", posted["ts"])
    assert [request.signature_valid for request in receiver.received] == [True, True, True]


def test_echoes_can_be_switched_off(
    slack_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    slack_fake.deliver_events_to(receiver.url, SIGNING_SECRET, echo_own_messages=False)
    slack_client.chat_postMessage(channel=CHANNEL_ID, text="quiet")
    slack_fake.wait_for_deliveries()
    slack_fake.user_says(ADA, CHANNEL_ID, "a person's message still comes")
    slack_fake.wait_for_deliveries()
    assert [event.get("text") for event in receiver.events()] == ["a person's message still comes"]


def test_people_edit_and_delete(app_fake: SlackFake, receiver: Receiver) -> None:
    ts = app_fake.user_says(ADA, CHANNEL_ID, "typo")
    app_fake.user_edits(ADA, CHANNEL_ID, ts, f"{app_fake.bot_mention} fixed")
    app_fake.user_deletes(ADA, CHANNEL_ID, ts)
    posted, changed, deleted = receiver.events()
    assert (changed["subtype"], changed["message"]["text"], changed["message"]["edited"]["user"]) == (
        "message_changed",
        f"<@{app_fake.bot_user_id}> fixed",
        ADA,
    )
    assert deleted["deleted_ts"] == ts
    assert app_fake.messages(CHANNEL_ID) == []
    with pytest.raises(FakeMisuse):
        app_fake.user_edits(GRACE, CHANNEL_ID, posted["ts"], "not hers")


def test_other_bots_post_with_their_bot_id(app_fake: SlackFake, receiver: Receiver) -> None:
    alerts = app_fake.add_bot("U0ALERTS", "alertmanager")
    app_fake.join(CHANNEL_ID, alerts.id)
    app_fake.bot_says(alerts.id, CHANNEL_ID, f"{app_fake.bot_mention} CPU high")
    _joined, mention, message = receiver.events()
    assert (mention["type"], mention["bot_id"]) == ("app_mention", alerts.bot_id)
    assert (message["bot_id"], message["user"]) == (alerts.bot_id, alerts.id)


def test_someone_joining_or_leaving_a_channel_the_app_is_in_is_told_to_the_app(
    app_fake: SlackFake, receiver: Receiver
) -> None:
    app_fake.leave(CHANNEL_ID, GRACE)
    app_fake.leave(CHANNEL_ID, GRACE)  # not a member any more: nothing happens
    app_fake.join(CHANNEL_ID, GRACE)
    left, joined = receiver.events()
    assert (left["type"], left["user"], left["channel"], left["channel_type"]) == (
        "member_left_channel",
        GRACE,
        CHANNEL_ID,
        "C",
    )
    assert (joined["type"], joined["user"]) == ("member_joined_channel", GRACE)


def test_a_direct_message_is_a_message_event_only(app_fake: SlackFake, receiver: Receiver) -> None:
    app_fake.add_dm("D0ADA", ADA)
    app_fake.user_says(ADA, "D0ADA", f"{app_fake.bot_mention} hi")
    (event,) = receiver.events()
    assert (event["type"], event["channel_type"]) == ("message", "im")


def test_no_events_from_a_channel_the_app_is_not_in(app_fake: SlackFake, receiver: Receiver) -> None:
    app_fake.add_channel("C0002", "elsewhere", members=[ADA], bot_is_member=False)
    app_fake.user_says(ADA, "C0002", f"{app_fake.bot_mention} hello?")
    assert receiver.received == []


def test_reactions_by_people_are_delivered(app_fake: SlackFake, receiver: Receiver) -> None:
    ts = app_fake.user_says(ADA, CHANNEL_ID, "hello", deliver="none")
    app_fake.user_reacts(GRACE, CHANNEL_ID, ts, "eyes")
    (event,) = receiver.events()
    assert (event["type"], event["user"], event["reaction"], event["item"]["ts"]) == (
        "reaction_added",
        GRACE,
        "eyes",
        ts,
    )


def test_pressing_a_button_sends_a_signed_block_actions_form(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    root = app_fake.user_says(ADA, CHANNEL_ID, "ask me", deliver="none")
    prompt = slack_client.chat_postMessage(
        channel=CHANNEL_ID, thread_ts=root, text="Which?", blocks=FORM_BLOCKS
    )
    app_fake.wait_for_deliveries()
    receiver.received.clear()

    delivery = app_fake.press_button(GRACE, CHANNEL_ID, prompt["ts"], "submit", choices={"choice": "b"})

    assert delivery.ok
    (request,) = receiver.received
    assert request.signature_valid
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.body.startswith(b"payload=")
    payload = request.json()
    assert payload["type"] == "block_actions"
    assert payload["user"] == {"id": GRACE, "username": "grace", "name": "grace", "team_id": TEAM_ID}
    assert payload["container"] == {
        "type": "message",
        "message_ts": prompt["ts"],
        "channel_id": CHANNEL_ID,
        "is_ephemeral": False,
        "thread_ts": root,
    }
    assert payload["message"]["ts"] == prompt["ts"]
    assert payload["message"]["blocks"] == FORM_BLOCKS
    (action,) = payload["actions"]
    assert (action["type"], action["action_id"], action["block_id"], action["value"]) == (
        "button",
        "submit",
        "buttons",
        "prompt-1",
    )
    assert payload["state"]["values"]["question"]["choice"]["selected_option"]["value"] == "b"
    assert payload["state"]["values"]["buttons"]["pick"] == {"type": "static_select", "selected_option": None}
    assert payload["response_url"].startswith("http://127.0.0.1:")
    assert payload["trigger_id"]


def test_choosing_an_option_sends_it(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    prompt = slack_client.chat_postMessage(channel=CHANNEL_ID, text="Which?", blocks=FORM_BLOCKS)
    app_fake.choose(ADA, CHANNEL_ID, prompt["ts"], "pick", "x")
    action = receiver.interactions()[-1]["actions"][0]
    assert (action["type"], action["selected_option"]["value"]) == ("static_select", "x")


def test_a_person_can_only_use_what_is_there(app_fake: SlackFake, slack_client: WebClient) -> None:
    prompt = slack_client.chat_postMessage(channel=CHANNEL_ID, text="Which?", blocks=FORM_BLOCKS)
    with pytest.raises(FakeMisuse):
        app_fake.press_button(ADA, CHANNEL_ID, prompt["ts"], "no-such-button")
    with pytest.raises(FakeMisuse):
        app_fake.press_button(ADA, CHANNEL_ID, prompt["ts"], "submit", choices={"choice": "z"})
    with pytest.raises(FakeMisuse):
        app_fake.press_button(ADA, CHANNEL_ID, prompt["ts"], "pick")  # a select is chosen, not pressed
    app_fake.add_channel("G0SECRET", "secret", members=[ADA], private=True)
    secret = slack_client.chat_postMessage(channel="G0SECRET", text="Which?", blocks=FORM_BLOCKS)
    app_fake.add_user("U0OUT", "Out Sider")
    with pytest.raises(FakeMisuse):
        app_fake.press_button("U0OUT", "G0SECRET", secret["ts"], "submit")


def test_anyone_in_the_workspace_can_use_a_public_channels_messages_without_joining(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    prompt = slack_client.chat_postMessage(channel=CHANNEL_ID, text="Which?", blocks=FORM_BLOCKS)
    app_fake.add_user("U0OUT", "Out Sider")
    assert app_fake.press_button("U0OUT", CHANNEL_ID, prompt["ts"], "submit").ok
    assert receiver.interactions()[-1]["user"]["id"] == "U0OUT"


def test_an_ephemeral_prompt_is_answered_through_its_response_url(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    shown = slack_client.chat_postEphemeral(channel=CHANNEL_ID, user=ADA, text="Only you", blocks=FORM_BLOCKS)
    app_fake.press_button(ADA, CHANNEL_ID, shown["message_ts"], "submit")
    payload = receiver.interactions()[-1]
    assert payload["container"]["is_ephemeral"] is True
    assert "message" not in payload
    answer = httpx.post(payload["response_url"], json={"replace_original": True, "text": "Thanks"})
    assert answer.status_code == 200
    assert [e.text for e in app_fake.ephemerals(ADA)] == ["Thanks"]
    httpx.post(payload["response_url"], json={"delete_original": True})
    assert app_fake.ephemerals(ADA) == []
    assert [c.method for c in app_fake.calls("response_url")] == ["response_url", "response_url"]


def test_block_actions_can_be_sent_exactly_as_given(app_fake: SlackFake, receiver: Receiver) -> None:
    ts = app_fake.user_says(ADA, CHANNEL_ID, "anything", deliver="none")
    actions = [{"action_id": "made_up", "block_id": "b", "type": "button", "value": "v", "action_ts": "1.2"}]
    delivery = app_fake.send_block_actions(
        ADA, CHANNEL_ID, ts, actions, {"b": {"x": {"type": "plain_text_input"}}}
    )
    payload = receiver.received[0].json()
    assert (payload["actions"], payload["state"]["values"]) == (
        actions,
        {"b": {"x": {"type": "plain_text_input"}}},
    )
    assert delivery.payload == payload


def test_url_verification(app_fake: SlackFake, receiver: Receiver) -> None:
    delivery = app_fake.send_url_verification(
        challenge="3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    )
    assert delivery.response_json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}
    assert receiver.received[0].json()["type"] == "url_verification"


@pytest.mark.parametrize(
    ("sign", "status"), [("valid", 200), ("forged", 401), ("stale", 401), ("missing", 401)]
)
def test_requests_can_be_signed_badly(
    app_fake: SlackFake, receiver: Receiver, sign: Any, status: int
) -> None:
    body = {"type": "event_callback", "event": {"type": "message", "text": "hi"}}
    delivery = app_fake.deliver_raw(body, sign=sign)
    assert delivery.status == status
    assert json.loads(receiver.received[0].body) == body


def test_a_slow_ack_is_a_failed_delivery(
    make_slack_fake: Callable[..., SlackFake], receiver: Receiver
) -> None:
    fake = make_slack_fake(ack_timeout=0.2)
    fake.deliver_events_to(receiver.url, SIGNING_SECRET)
    release = threading.Event()
    receiver.before_answer = lambda _request: release.wait(5)
    try:
        fake.user_says(ADA, CHANNEL_ID, "hello")
    finally:
        release.set()
    (delivery,) = fake.deliveries()
    assert (delivery.ok, delivery.error, delivery.status) == (False, "timeout", None)
