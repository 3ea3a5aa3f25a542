"""The Home tab as the fake plays it: views.publish checks a home view as Slack does and keeps it per
person, app_home_opened carries it, and a button pressed in it sends block_actions from the view."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from simulator import FakeMisuse, SlackFake
from simulator.defaults import ADA, BOT_TOKEN, GRACE

from .receiver import Receiver


def home(**changes: Any) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "home",
        "callback_id": "kourier_home",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": "Hello"}},
            {
                "type": "actions",
                "block_id": "decide",
                "elements": [
                    {
                        "type": "button",
                        "action_id": "approve",
                        "text": {"type": "plain_text", "text": "Approve"},
                        "value": "7",
                    }
                ],
            },
        ],
    }
    view.update(changes)
    return view


def error_of(call) -> str:
    with pytest.raises(SlackApiError) as raised:
        call()
    return raised.value.response["error"]


@pytest.fixture
def client(app_fake: SlackFake) -> WebClient:
    return WebClient(token=BOT_TOKEN, base_url=app_fake.url)


def test_a_published_home_view_is_the_persons_alone_and_comes_with_app_home_opened(
    app_fake: SlackFake, client: WebClient, receiver: Receiver
):
    answer = client.views_publish(user_id=ADA, view=home())
    assert answer["view"]["type"] == "home"
    assert answer["view"]["hash"]
    published = app_fake.home_view(ADA)
    assert published is not None
    assert published["blocks"] == home()["blocks"]
    assert app_fake.home_view(GRACE) is None
    app_fake.user_opens_home(ADA)
    event = json.loads(receiver.received[-1].body)["event"]
    assert (event["type"], event["tab"], event["user"]) == ("app_home_opened", "home", ADA)
    assert event["view"]["id"] == answer["view"]["id"]


def test_views_publish_refuses_what_slack_refuses(app_fake: SlackFake, client: WebClient):
    assert error_of(lambda: client.views_publish(user_id=ADA, view=home(type="modal"))) == "invalid_arguments"
    too_many = [{"type": "divider"}] * 101
    assert (
        error_of(lambda: client.views_publish(user_id=ADA, view=home(blocks=too_many))) == "invalid_arguments"
    )
    assert error_of(lambda: client.views_publish(user_id="U0NOBODY", view=home())) == "user_not_found"
    assert error_of(lambda: client.views_publish(user_id=ADA, view=home(), hash="1.stale")) == "hash_conflict"
    published = client.views_publish(user_id=ADA, view=home())["view"]
    client.views_publish(user_id=ADA, view=home(), hash=published["hash"])  # the current hash is taken
    app_fake.configure_workspace(home_tab_enabled=False)
    assert error_of(lambda: client.views_publish(user_id=ADA, view=home())) == "not_enabled"


def test_views_publish_is_limited_per_person(app_fake: SlackFake, client: WebClient):
    app_fake.rate_limits.enabled = True  # off by default for functional tests
    for _ in range(100):
        client.views_publish(user_id=ADA, view=home())
    assert error_of(lambda: client.views_publish(user_id=ADA, view=home())) == "ratelimited"
    client.views_publish(user_id=GRACE, view=home())  # another person's tab has its own budget


def test_a_button_pressed_in_the_home_tab_comes_from_the_view(
    app_fake: SlackFake, client: WebClient, receiver: Receiver
):
    with pytest.raises(FakeMisuse):
        app_fake.press_home_button(ADA, "approve")  # nothing published yet
    client.views_publish(user_id=ADA, view=home())
    receiver.received.clear()
    assert app_fake.press_home_button(ADA, "approve").ok
    payload = json.loads(parse_qs(receiver.received[-1].body.decode())["payload"][0])
    assert payload["type"] == "block_actions"
    assert payload["container"]["type"] == "view"
    assert "channel" not in payload
    assert "response_url" not in payload
    assert payload["actions"][0]["block_id"] == "decide"
    assert payload["actions"][0]["value"] == "7"
    with pytest.raises(FakeMisuse):
        app_fake.press_home_button(ADA, "deny")
