"""The simulator's page on the product's web port: served only while `serve` runs the simulator, its
API forwarded to the fake unchanged, refusals included."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client, override_settings

from simulator import control, demo
from simulator.fake import SlackFake
from tests.support.private_redis import free_port

RUN_TOKEN = "this-runs-token"


@pytest.fixture
def running_fake() -> Iterator[SlackFake]:
    """The fake as `manage.py serve` runs it: its API for this run's token, which the page is given."""
    fake = demo.build(demo.DemoSecrets("xoxb-demo-page", "page-secret"))
    control.mount_on(fake, token=RUN_TOKEN)
    fake.start()
    with override_settings(SIMULATOR_URL=fake.url.removesuffix("api/"), SIMULATOR_TOKEN=RUN_TOKEN):
        yield fake
    fake.stop()


@pytest.mark.parametrize(
    ("url", "token"),
    [("", ""), ("", RUN_TOKEN), ("http://127.0.0.1:8091/", "")],
    ids=["neither", "no address", "no run's token"],
)
def test_without_the_simulator_every_path_is_not_found(client: Client, url: str, token: str) -> None:
    with override_settings(SIMULATOR_URL=url, SIMULATOR_TOKEN=token):
        assert client.get("/simulator/").status_code == 404
        assert client.get("/simulator/simulator.js").status_code == 404
        assert client.get("/simulator/api/world").status_code == 404


def test_a_page_whose_run_ended_gets_no_answer_from_what_listens_there_now(running_fake: SlackFake) -> None:
    # Another run's simulator on the address this page was given: it refuses a token not its own.
    with override_settings(SIMULATOR_TOKEN="an-earlier-runs-token"):
        answer = Client().get("/simulator/api/world")
    assert (answer.status_code, answer.json()["error"]) == (403, "not_authed")


def test_the_page_has_its_message_box_its_script_and_a_csrf_cookie(
    client: Client, running_fake: SlackFake
) -> None:
    page = client.get("/simulator/")

    assert page.status_code == 200
    assert b'<label for="message">Message</label>' in page.content
    assert "csrftoken" in page.cookies
    assert client.get("/simulator/simulator.js")["Content-Type"].startswith("text/javascript")
    assert client.get("/simulator/simulator.css")["Content-Type"].startswith("text/css")
    assert client.get("/simulator/settings.py").status_code == 404


def test_the_api_is_forwarded_to_the_fake_refusals_included(running_fake: SlackFake) -> None:
    client = Client(enforce_csrf_checks=True)
    token = client.get("/simulator/").cookies["csrftoken"].value
    headers = {"X-CSRFToken": token}

    said = client.post(
        "/simulator/api/messages",
        {"as": "U0ADA", "channel": demo.CHANNEL_ID, "text": "@Agent Kourier hello"},
        content_type="application/json",
        headers=headers,
    )
    refused = client.post(
        "/simulator/api/messages",
        {"as": "U0ADA", "channel": demo.CHANNEL_ID, "text": ""},
        content_type="application/json",
        headers=headers,
    )

    assert said.status_code == 200
    assert said.json()["text"] == f"<@{demo.BOT_USER_ID}> hello"
    assert (refused.status_code, refused.json()["error"]) == (400, "no_text")
    assert [m.text for m in running_fake.messages(demo.CHANNEL_ID)] == [f"<@{demo.BOT_USER_ID}> hello"]


def test_a_post_without_the_csrf_token_is_refused_before_it_reaches_the_fake(running_fake: SlackFake) -> None:
    client = Client(enforce_csrf_checks=True)
    answer = client.post(
        "/simulator/api/messages",
        {"as": "U0ADA", "channel": demo.CHANNEL_ID, "text": "hello"},
        content_type="application/json",
    )
    assert answer.status_code == 403
    assert running_fake.messages(demo.CHANNEL_ID) == []


def test_a_fake_that_does_not_answer_is_said_as_such(client: Client) -> None:
    with override_settings(SIMULATOR_URL=f"http://127.0.0.1:{free_port()}/", SIMULATOR_TOKEN=RUN_TOKEN):
        answer = client.get("/simulator/api/world")
    assert (answer.status_code, answer.json()["error"]) == (502, "simulator_unreachable")
