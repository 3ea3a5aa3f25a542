"""Socket Mode as the fake speaks it: apps.connections.open, hello, envelopes and acks, retries,
disconnects, drops, and envelopes spread over an app's connections."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from simulator import SlackFake
from simulator.defaults import ADA, APP_ID, APP_TOKEN, BOT_TOKEN, CHANNEL_ID, TEAM_ID
from tests.simulator.helpers import FORM_BLOCKS

from .socket_app import SocketApp, ack_everything, ack_nothing

SHORT_ACK = 0.5  # the fake's three seconds, shortened so that the retry tests are quick


@pytest.fixture
def socket_fake(make_slack_fake: Callable[..., SlackFake]) -> SlackFake:
    fake = make_slack_fake(ack_timeout=SHORT_ACK, socket_retry_delays=(0.0, 0.1, 0.1))
    fake.deliver_events_over_socket_mode()
    return fake


@pytest.fixture
def make_app(socket_fake: SlackFake) -> Iterator[Callable[..., SocketApp]]:
    apps: list[SocketApp] = []

    def make(ack=ack_everything) -> SocketApp:
        app = SocketApp(socket_fake.url, APP_TOKEN, ack)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


def mention(fake: SlackFake, text: str = "hello") -> str:
    return fake.user_says(ADA, CHANNEL_ID, f"{fake.bot_mention} {text}", deliver="app_mention")


# apps.connections.open


def test_the_app_token_opens_a_websocket_url(socket_fake):
    answer = WebClient(base_url=socket_fake.url).apps_connections_open(app_token=APP_TOKEN)
    assert answer["url"].startswith("ws://127.0.0.1:")
    assert "ticket=" in answer["url"]
    assert f"app_id={APP_ID}" in answer["url"]


@pytest.mark.parametrize(
    ("token", "error"),
    [(BOT_TOKEN, "not_allowed_token_type"), ("xapp-1-unknown", "invalid_auth")],
)
def test_apps_connections_open_refuses_other_tokens(socket_fake, token, error):
    with pytest.raises(SlackApiError) as refused:
        WebClient(base_url=socket_fake.url).apps_connections_open(app_token=token)
    assert refused.value.response["error"] == error


def test_a_revoked_app_token_is_refused_and_its_sockets_close(socket_fake, make_app):
    app = make_app()
    link = app.connect()
    socket_fake.revoke_token(APP_TOKEN)
    app.wait(lambda: link.closed)
    with pytest.raises(SlackApiError) as refused:
        app.open_url()
    assert refused.value.response["error"] == "token_revoked"


def test_the_app_token_is_taken_from_the_authorization_header_only(socket_fake):
    answer = httpx.post(socket_fake.url + "apps.connections.open", data={"token": APP_TOKEN})
    assert answer.json() == {"ok": False, "error": "not_authed"}


# Connecting


def test_a_connection_is_greeted_with_hello(socket_fake, make_app):
    link = make_app().connect()
    [hello] = link.frames
    assert hello["type"] == "hello"
    assert hello["num_connections"] == 1
    assert hello["connection_info"] == {"app_id": APP_ID}
    assert [c.id for c in socket_fake.socket_connections()] == [1]


def test_a_url_is_good_for_one_connection(socket_fake, make_app):
    app = make_app()
    url = app.open_url()
    app.connect(url)
    with pytest.raises(Exception, match="401"):
        app.connect(url)


def test_an_eleventh_connection_is_told_too_many_websockets_and_closed(socket_fake, make_app):
    app = make_app()
    for _ in range(10):
        app.connect()
    eleventh = app.connect()
    app.wait(lambda: eleventh.closed)
    assert eleventh.frames == [{"type": "disconnect", "reason": "too_many_websockets"}]
    socket_fake.wait_until(lambda: len(socket_fake.socket_connections()) == 10)


# Envelopes and acks


def test_an_event_comes_in_an_events_api_envelope_and_the_ack_is_recorded(socket_fake, make_app):
    app = make_app()
    link = app.connect()
    ts = mention(socket_fake)
    app.wait(lambda: bool(link.envelopes))
    [envelope] = link.envelopes
    assert envelope["type"] == "events_api"
    assert envelope["accepts_response_payload"] is False
    assert (envelope["retry_attempt"], envelope["retry_reason"]) == (0, "")
    payload = envelope["payload"]
    assert payload["type"] == "event_callback"
    assert payload["team_id"] == TEAM_ID
    assert payload["event"]["type"] == "app_mention"
    assert payload["event"]["ts"] == ts
    socket_fake.wait_until(lambda: bool(socket_fake.deliveries(ts=ts)))
    [delivery] = socket_fake.deliveries(ts=ts)
    assert delivery.ok
    assert delivery.envelope_id == envelope["envelope_id"]
    [sent] = socket_fake.socket_envelopes()
    assert sent.acked_in_time
    assert sent.ack_connection == 1
    assert sent.ack_delay is not None


def test_a_press_comes_in_an_interactive_envelope_and_waits_for_its_ack(socket_fake, make_app):
    app = make_app()
    link = app.connect()
    posted = WebClient(token=BOT_TOKEN, base_url=socket_fake.url).chat_postMessage(
        channel=CHANNEL_ID, text="Pick", blocks=FORM_BLOCKS
    )
    delivery = socket_fake.press_button(ADA, CHANNEL_ID, posted["ts"], "submit", choices={"choice": "b"})
    assert delivery.ok
    assert delivery.kind == "block_actions"
    [envelope] = [e for e in link.envelopes if e["type"] == "interactive"]
    assert envelope["payload"]["type"] == "block_actions"
    assert envelope["payload"]["actions"][0]["action_id"] == "submit"
    assert envelope["payload"]["state"]["values"]["question"]["choice"]["selected_option"]["value"] == "b"


def test_an_unacked_event_is_sent_again_with_retry_attempt_and_reason(socket_fake, make_app):
    app = make_app(ack=ack_nothing)
    link = app.connect()
    mention(socket_fake)
    app.wait(lambda: len(link.envelopes) == 4)
    attempts = [(e["retry_attempt"], e["retry_reason"]) for e in link.envelopes]
    assert attempts == [(0, ""), (1, "timeout"), (2, "timeout"), (3, "timeout")]
    assert len({e["envelope_id"] for e in link.envelopes}) == 4
    assert len({e["payload"]["event_id"] for e in link.envelopes}) == 1
    socket_fake.wait_until(lambda: len(socket_fake.deliveries()) == 4)
    assert all(d.error == "timeout" for d in socket_fake.deliveries())


def test_an_event_acked_in_time_is_not_sent_again(socket_fake, make_app):
    app = make_app()
    link = app.connect()
    mention(socket_fake)
    socket_fake.wait_until(lambda: len(socket_fake.deliveries()) == 1)
    socket_fake.redeliver(socket_fake.deliveries()[0])  # the one way a second copy comes: a test sends it
    assert [e["retry_attempt"] for e in link.envelopes] == [0, 1]


def test_an_unacked_press_is_not_sent_again(socket_fake, make_app):
    app = make_app(ack=ack_nothing)
    link = app.connect()
    posted = WebClient(token=BOT_TOKEN, base_url=socket_fake.url).chat_postMessage(
        channel=CHANNEL_ID, text="Pick", blocks=FORM_BLOCKS
    )
    delivery = socket_fake.press_button(ADA, CHANNEL_ID, posted["ts"], "submit", choices={"choice": "a"})
    assert delivery.error == "timeout"
    mention(socket_fake)  # an event sent after it, to know the socket has carried on
    app.wait(lambda: any(e["type"] == "events_api" for e in link.envelopes))
    assert len([e for e in link.envelopes if e["type"] == "interactive"]) == 1


def test_an_ack_on_another_connection_of_the_app_counts(socket_fake, make_app):
    forwarded: list[dict[str, Any]] = []
    app = make_app(ack=lambda envelope: forwarded.append(envelope))
    first, second = app.connect(), app.connect()
    mention(socket_fake)
    app.wait(lambda: bool(forwarded))
    [envelope] = forwarded
    other = second if envelope in first.envelopes else first
    app.send(other, {"envelope_id": envelope["envelope_id"]})
    socket_fake.wait_until(lambda: bool(socket_fake.deliveries()))
    assert socket_fake.deliveries()[0].ok
    assert socket_fake.socket_envelopes()[0].ack_connection == other.number


def test_frames_that_ack_nothing_are_kept_apart(socket_fake, make_app):
    app = make_app()
    link = app.connect()
    app.send(link, {"envelope_id": "not-one-of-ours"})
    socket_fake.wait_until(lambda: bool(socket_fake.socket_refused_frames))
    assert json.loads(socket_fake.socket_refused_frames[0]) == {"envelope_id": "not-one-of-ours"}


def test_a_test_can_send_any_frame_and_any_envelope(socket_fake, make_app):
    app = make_app(ack=ack_nothing)
    link = app.connect()
    socket_fake.send_socket_frame("not json {")
    envelope = socket_fake.send_socket_envelope("no_such_type", {"x": 1})
    assert not envelope.acked_in_time
    with app.changed:
        assert link.frames[1:] == [{"not_json": "not json {"}, json.loads(envelope.frame)]


# Spreading, disconnects and drops


def test_envelopes_are_spread_over_the_apps_open_connections(socket_fake, make_app):
    app = make_app()
    first, second = app.connect(), app.connect()
    for number in range(6):
        mention(socket_fake, f"number {number}")
    app.wait(lambda: len(first.envelopes) + len(second.envelopes) == 6)
    assert len(first.envelopes) == 3
    assert len(second.envelopes) == 3


@pytest.mark.parametrize("reason", ["refresh_requested", "warning"])
def test_disconnect_warns_then_closes_and_new_envelopes_go_elsewhere(socket_fake, make_app, reason):
    app = make_app()
    first, second = app.connect(), app.connect()
    socket_fake.socket_disconnect(reason, connection=1, close_after=0.5)
    app.wait(lambda: bool(first.of_type("disconnect")))
    assert first.of_type("disconnect")[0]["reason"] == reason
    for number in range(2):
        mention(socket_fake, f"number {number}")
    app.wait(lambda: len(second.envelopes) == 2)
    app.wait(lambda: first.closed)
    assert first.envelopes == []
    assert not second.closed
    [closed] = [c for c in socket_fake.socket_connections(open_only=False) if c.id == 1]
    assert closed.close_reason == reason


def test_a_dropped_connection_gets_no_word_and_its_unacked_event_comes_again_elsewhere(socket_fake, make_app):
    silent = make_app(ack=ack_nothing)
    dropped = silent.connect()
    mention(socket_fake)
    silent.wait(lambda: bool(dropped.envelopes))
    socket_fake.socket_drop(connection=1)
    silent.wait(lambda: dropped.closed)
    assert dropped.of_type("disconnect") == []
    healthy = make_app()
    other = healthy.connect()
    healthy.wait(lambda: bool(other.envelopes))
    assert other.envelopes[0]["retry_attempt"] >= 1
    assert other.envelopes[0]["payload"]["event_id"] == dropped.envelopes[0]["payload"]["event_id"]


def test_the_sdks_own_socket_mode_client_connects_and_acks(socket_fake):
    """slack_sdk's aiohttp SocketModeClient, as Bolt's handler uses it, works against the fake."""

    async def run() -> list[SocketModeRequest]:
        received: list[SocketModeRequest] = []
        client = SocketModeClient(app_token=APP_TOKEN, web_client=AsyncWebClient(base_url=socket_fake.url))

        async def listener(client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
            received.append(request)
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

        client.socket_mode_request_listeners.append(listener)
        await client.connect()
        await asyncio.to_thread(mention, socket_fake)
        await asyncio.to_thread(socket_fake.wait_until, lambda: bool(socket_fake.deliveries()))
        await client.close()
        return received

    [request] = asyncio.run(run())
    assert request.type == "events_api"
    assert socket_fake.deliveries()[0].ok


def test_with_wait_for_acks_a_message_returns_its_acked_deliveries(socket_fake, make_app):
    socket_fake.deliver_events_over_socket_mode(wait_for_acks=True)
    make_app().connect()
    deliveries = socket_fake.user_says(ADA, CHANNEL_ID, f"{socket_fake.bot_mention} hi", deliver="both")
    assert isinstance(deliveries, str)  # the ts, as ever; the acks are in by now:
    assert [(d.kind, d.ok) for d in socket_fake.deliveries()] == [("app_mention", True), ("message", True)]
