"""The fake's HTTP server answers programs on this machine, never a page of another site: a browser's
Origin or Sec-Fetch-Site, or a Host that is not this server on loopback, is a 403 that reaches no
handler (DNS rebinding included)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from simulator import control, demo
from simulator.fake import SlackFake
from simulator.server import cross_site_refusal

PORT = 8100
OWN = {"host": f"127.0.0.1:{PORT}"}


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        (OWN, None),  # slack_sdk, the page's forwarder: no Origin, no Sec-Fetch-Site
        ({"host": f"localhost:{PORT}"}, None),
        ({"host": f"[::1]:{PORT}"}, None),
        ({**OWN, "sec-fetch-site": "none"}, None),  # the address typed in the browser's bar
        ({**OWN, "sec-fetch-site": "same-origin"}, None),
        ({**OWN, "origin": f"http://127.0.0.1:{PORT}"}, None),
        ({**OWN, "sec-fetch-site": "cross-site"}, "sec-fetch-site"),
        ({**OWN, "sec-fetch-site": "same-site"}, "sec-fetch-site"),  # another port of 127.0.0.1
        ({**OWN, "origin": "https://evil.example"}, "origin"),
        ({**OWN, "origin": "http://127.0.0.1:8000"}, "origin"),  # the product's own page, in a browser
        ({**OWN, "origin": "null"}, "origin"),  # a sandboxed frame, a file
        ({"host": f"evil.example:{PORT}"}, "host"),  # a name made to resolve to 127.0.0.1
        ({"host": "127.0.0.1"}, "host"),
        ({"host": f"127.0.0.1:{PORT + 1}"}, "host"),
        ({}, "host"),
    ],
)
def test_a_request_from_a_page_of_another_site_is_told_apart_by_its_headers(headers, refused):
    assert cross_site_refusal(headers, PORT) == refused


@pytest.fixture
def running() -> Iterator[SlackFake]:
    fake = demo.build(demo.DemoSecrets("xoxb-demo-server", "server-secret"))
    control.mount_on(fake)
    fake.start()
    yield fake
    fake.stop()


@pytest.mark.parametrize(
    "headers",
    [{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Host": "evil.example"}],
)
@pytest.mark.parametrize("path", ["simulator/api/messages", "api/chat.postMessage"])
def test_the_simulators_port_refuses_a_cross_site_post_and_nothing_happens(running, headers, path):
    base = running.url.removesuffix("api/")
    body = {"as": demo.PEOPLE[0].id, "channel": demo.CHANNEL_ID, "text": "sent by another site"}

    answer = httpx.post(base + path, json=body, headers=headers, timeout=10)

    assert (answer.status_code, answer.json()["error"]) == (403, "cross_site_request")
    assert running.messages(demo.CHANNEL_ID) == []
    assert running.calls() == []  # the Web API recorded no call either


def test_the_same_post_from_a_program_on_this_machine_is_answered(running):
    base = running.url.removesuffix("api/")
    body = {"as": demo.PEOPLE[0].id, "channel": demo.CHANNEL_ID, "text": "hello"}

    answer = httpx.post(base + "simulator/api/messages", json=body, timeout=10)

    assert answer.status_code == 200
    assert [message.text for message in running.messages(demo.CHANNEL_ID)] == ["hello"]


def test_a_host_the_fake_is_told_it_is_known_by_is_answered_as_its_own():
    assert (
        cross_site_refusal({"host": f"slack.kourier.test:{PORT}"}, PORT, ("127.0.0.1", "slack.kourier.test"))
        is None
    )
    assert (
        cross_site_refusal({"host": f"evil.example:{PORT}"}, PORT, ("127.0.0.1", "slack.kourier.test"))
        == "host"
    )


def test_a_fake_with_a_public_host_names_it_in_its_urls_and_answers_requests_naming_it(make_slack_fake):
    fake = make_slack_fake(public_host="slack.kourier.test")
    port = int(fake.url.split(":")[2].split("/")[0])
    direct = f"http://127.0.0.1:{port}/api/auth.test"

    named = httpx.post(direct, headers={"Host": f"slack.kourier.test:{port}"}, data={"token": fake.bot_token})
    other = httpx.post(direct, headers={"Host": f"evil.example:{port}"}, data={"token": fake.bot_token})

    assert fake.url == f"http://slack.kourier.test:{port}/api/"
    assert (named.status_code, named.json()["ok"]) == (200, True)
    assert other.status_code == 403
