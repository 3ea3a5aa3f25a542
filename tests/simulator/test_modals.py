"""Modals as the fake plays them: views.open exchanges a press's trigger_id once within three
seconds and checks the view's limits; a person submits (view_submission, the app's response_action
deciding what they see next) or closes it (view_closed when the view asked), over HTTP and Socket Mode."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from simulator import FakeMisuse, ManualClock, SlackFake
from simulator.defaults import ADA, APP_TOKEN, BOT_TOKEN, CHANNEL_ID, GRACE, TEAM_ID
from tests.simulator.helpers import FORM_BLOCKS

from .receiver import SIGNING_SECRET, Receiver
from .socket_app import SocketApp

REASON_INPUT = {
    "type": "input",
    "block_id": "reason",
    "label": {"type": "plain_text", "text": "Why?"},
    "element": {"type": "plain_text_input", "action_id": "text", "max_length": 20},
}


def modal(**changes: Any) -> dict[str, Any]:
    view = {
        "type": "modal",
        "callback_id": "deny-reason",
        "private_metadata": '{"interaction": 7}',
        "title": {"type": "plain_text", "text": "Deny"},
        "submit": {"type": "plain_text", "text": "Deny"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "notify_on_close": True,
        "blocks": [REASON_INPUT],
    }
    view.update(changes)
    return view


def pressed(fake: SlackFake, receiver: Receiver, client: WebClient, user: str = GRACE) -> str:
    """A person presses a button; the trigger_id the app got with it."""
    prompt = client.chat_postMessage(channel=CHANNEL_ID, text="Which?", blocks=FORM_BLOCKS)
    fake.wait_for_deliveries()
    fake.press_button(user, CHANNEL_ID, prompt["ts"], "submit", choices={"choice": "b"})
    return receiver.interactions()[-1]["trigger_id"]


def test_a_trigger_opens_a_modal_the_person_sees_and_submits(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    trigger_id = pressed(app_fake, receiver, slack_client)

    opened = slack_client.views_open(trigger_id=trigger_id, view=modal())

    assert opened["view"]["id"].startswith("V")
    assert opened["view"]["callback_id"] == "deny-reason"
    [shown] = app_fake.modals(GRACE)
    assert (shown.title, shown.private_metadata, shown.errors) == ("Deny", '{"interaction": 7}', {})
    assert app_fake.modals(ADA) == []

    delivery = app_fake.submit_modal(GRACE, {"text": "too risky"})

    assert delivery.ok
    assert delivery.kind == "view_submission"
    request = receiver.received[-1]
    assert request.signature_valid
    payload = request.json()
    assert payload["type"] == "view_submission"
    assert (payload["user"]["id"], payload["team"]["id"]) == (GRACE, TEAM_ID)
    assert payload["view"]["id"] == shown.id
    assert payload["view"]["private_metadata"] == '{"interaction": 7}'
    assert payload["view"]["state"]["values"] == {
        "reason": {"text": {"type": "plain_text_input", "value": "too risky"}}
    }
    assert app_fake.modals(GRACE) == []
    assert app_fake.modals(GRACE, open_only=False)[0].close_reason == "submitted"


def test_a_trigger_is_exchanged_once_within_three_seconds(
    make_slack_fake: Callable[..., SlackFake], receiver: Receiver
) -> None:
    clock = ManualClock()
    fake = make_slack_fake(clock=clock)
    fake.deliver_events_to(receiver.url, SIGNING_SECRET)
    client = WebClient(token=fake.bot_token, base_url=fake.url)
    first = pressed(fake, receiver, client)
    client.views_open(trigger_id=first, view=modal())
    late = pressed(fake, receiver, client)
    clock.advance(3.5)

    errors = []
    for trigger_id in (first, late, "123.456.abcdef"):
        with pytest.raises(SlackApiError) as refused:
            client.views_open(trigger_id=trigger_id, view=modal())
        errors.append(refused.value.response["error"])

    assert errors == ["exchanged_trigger_id", "expired_trigger_id", "invalid_trigger_id"]


@pytest.mark.parametrize(
    ("view", "message"),
    [
        (modal(title={"type": "plain_text", "text": "x" * 25}), "must be less than 25 characters"),
        (modal(blocks=[{"type": "divider"}] * 101), "/view/blocks"),
        (modal(private_metadata="x" * 3001), "must be less than 3001 characters"),
        (modal(submit=None), "submit is required"),
        (modal(type="home"), "must be modal"),
    ],
)
def test_views_open_refuses_a_view_over_slacks_limits(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient, view: dict[str, Any], message: str
) -> None:
    trigger_id = pressed(app_fake, receiver, slack_client)
    view = {key: value for key, value in view.items() if value is not None}
    with pytest.raises(SlackApiError) as refused:
        slack_client.views_open(trigger_id=trigger_id, view=view)
    assert refused.value.response["error"] == "invalid_arguments"
    assert any(message in line for line in refused.value.response["response_metadata"]["messages"])
    assert app_fake.modals(GRACE) == []


def test_errors_in_the_apps_answer_keep_the_modal_open_with_them(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    slack_client.views_open(trigger_id=pressed(app_fake, receiver, slack_client), view=modal())
    receiver.answer_interactive = lambda payload: json.dumps(
        {"response_action": "errors", "errors": {"reason": "Say why in words."}}
    ).encode()

    app_fake.submit_modal(GRACE, {"text": "?"})

    [shown] = app_fake.modals(GRACE)
    assert shown.errors == {"reason": "Say why in words."}
    receiver.answer_interactive = None
    app_fake.submit_modal(GRACE, {"text": "too risky"})
    assert app_fake.modals(GRACE) == []


def test_a_person_cannot_submit_an_empty_required_input_or_too_long_a_text(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    slack_client.views_open(trigger_id=pressed(app_fake, receiver, slack_client), view=modal())
    with pytest.raises(FakeMisuse):
        app_fake.submit_modal(GRACE, {})
    with pytest.raises(FakeMisuse):
        app_fake.submit_modal(GRACE, {"text": "x" * 21})
    with pytest.raises(FakeMisuse):
        app_fake.submit_modal(ADA, {"text": "not hers"})


def test_closing_tells_the_app_only_when_the_view_asked(
    app_fake: SlackFake, receiver: Receiver, slack_client: WebClient
) -> None:
    slack_client.views_open(trigger_id=pressed(app_fake, receiver, slack_client), view=modal())
    delivery = app_fake.close_modal(GRACE)
    assert delivery is not None
    assert delivery.kind == "view_closed"
    closed = receiver.received[-1].json()
    assert (closed["type"], closed["is_cleared"]) == ("view_closed", False)
    assert closed["view"]["callback_id"] == "deny-reason"

    slack_client.views_open(
        trigger_id=pressed(app_fake, receiver, slack_client), view=modal(notify_on_close=False)
    )
    before = len(receiver.received)
    assert app_fake.close_modal(GRACE) is None
    assert len(receiver.received) == before
    assert app_fake.modals(GRACE) == []


def test_over_socket_mode_a_submission_accepts_a_response_payload(
    make_slack_fake: Callable[..., SlackFake],
) -> None:
    fake = make_slack_fake(ack_timeout=2.0)
    fake.deliver_events_over_socket_mode()

    def ack(envelope: dict[str, Any]) -> dict[str, Any]:
        if envelope["payload"].get("type") == "view_submission":
            errors = {"reason": "Say why in words."}
            return {
                "envelope_id": envelope["envelope_id"],
                "payload": {"response_action": "errors", "errors": errors},
            }
        if envelope["payload"].get("type") == "block_actions":
            pressed_triggers.append(envelope["payload"]["trigger_id"])
        return {"envelope_id": envelope["envelope_id"]}

    pressed_triggers: list[str] = []
    app = SocketApp(fake.url, APP_TOKEN, ack)
    try:
        link = app.connect()
        client = WebClient(token=BOT_TOKEN, base_url=fake.url)
        prompt = client.chat_postMessage(channel=CHANNEL_ID, text="Which?", blocks=FORM_BLOCKS)
        fake.press_button(GRACE, CHANNEL_ID, prompt["ts"], "submit", choices={"choice": "b"})
        client.views_open(trigger_id=pressed_triggers[0], view=modal())

        delivery = fake.submit_modal(GRACE, {"text": "?"})

        assert (delivery.ok, delivery.kind) == (True, "view_submission")
        [envelope] = [e for e in link.envelopes if e["payload"].get("type") == "view_submission"]
        assert (envelope["type"], envelope["accepts_response_payload"]) == ("interactive", True)
        assert fake.modals(GRACE)[0].errors == {"reason": "Say why in words."}
    finally:
        app.close()
