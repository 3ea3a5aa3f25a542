"""A slash command and a message shortcut as the fake sends them: a signed form of Slack's fields, or a
signed message_action payload, each with a response_url that answers the person privately."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import httpx
import pytest

from simulator import FakeMisuse, SlackFake
from simulator.defaults import ADA, CHANNEL_ID, GRACE, TEAM_ID

from .receiver import Receiver


def form_of(receiver: Receiver) -> dict[str, str]:
    [request] = receiver.received
    assert request.signature_valid
    assert request.headers["content-type"].startswith("application/x-www-form-urlencoded")
    return {key: values[0] for key, values in parse_qs(request.body.decode(), keep_blank_values=True).items()}


def test_a_typed_command_is_a_signed_form_of_slacks_fields_with_its_text_escaped(
    app_fake: SlackFake, receiver: Receiver
):
    delivery = app_fake.user_types_command(
        ADA, CHANNEL_ID, "why is <checkout> & co slow?", command="/kourier"
    )
    assert delivery.ok
    fields = form_of(receiver)
    assert "payload" not in fields
    assert fields["command"] == "/kourier"
    assert fields["text"] == "why is &lt;checkout&gt; &amp; co slow?"
    assert (fields["team_id"], fields["channel_id"], fields["user_id"]) == (TEAM_ID, CHANNEL_ID, ADA)
    assert "/actions/T0001/" in fields["response_url"]
    assert fields["trigger_id"]


def test_a_commands_response_url_answers_the_person_privately_in_the_channel(
    app_fake: SlackFake, receiver: Receiver
):
    app_fake.user_types_command(ADA, CHANNEL_ID, "status")
    answer = httpx.post(form_of(receiver)["response_url"], json={"text": "Nothing waits for you."})
    assert answer.json() == {"ok": True}
    [line] = app_fake.ephemerals(ADA, CHANNEL_ID)
    assert (line.text, line.thread_ts) == ("Nothing waits for you.", None)
    assert app_fake.messages(CHANNEL_ID) == []


def test_a_person_cannot_type_a_command_where_they_are_not_or_one_without_a_slash(app_fake: SlackFake):
    app_fake.add_user("U0OUT", "Outsider")
    with pytest.raises(FakeMisuse):
        app_fake.user_types_command("U0OUT", CHANNEL_ID, "hello")
    with pytest.raises(FakeMisuse):
        app_fake.user_types_command(ADA, CHANNEL_ID, "hello", command="kourier")


def test_a_shortcut_sends_message_action_with_the_message_whole(app_fake: SlackFake, receiver: Receiver):
    ts = app_fake.user_says(GRACE, CHANNEL_ID, "the build is red")
    receiver.received.clear()
    delivery = app_fake.user_uses_shortcut(ADA, CHANNEL_ID, ts, callback_id="ask_about_message")
    assert delivery.ok
    [request] = receiver.received
    assert request.signature_valid
    payload = json.loads(parse_qs(request.body.decode())["payload"][0])
    assert payload["type"] == "message_action"
    assert payload["callback_id"] == "ask_about_message"
    assert payload["user"]["id"] == ADA
    assert payload["channel"]["id"] == CHANNEL_ID
    assert payload["message_ts"] == ts
    assert (payload["message"]["ts"], payload["message"]["user"], payload["message"]["text"]) == (
        ts,
        GRACE,
        "the build is red",
    )
    httpx.post(payload["response_url"], json={"text": "Only you see this."})
    assert [e.text for e in app_fake.ephemerals(ADA, CHANNEL_ID)] == ["Only you see this."]


def test_a_shortcut_on_a_message_that_is_not_there_is_refused(app_fake: SlackFake):
    with pytest.raises(FakeMisuse):
        app_fake.user_uses_shortcut(ADA, CHANNEL_ID, "1700000000.000100")
