"""Reading Socket Mode frames, acks and the backoff: the pure parts of kourier/slack/socket_mode.py
(the connection itself is proven against the Slack fake's websocket in tests/e2e/test_socket_mode*.py)."""

import asyncio
import json

import pytest
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from kourier.slack.socket_mode import (
    Backoff,
    Control,
    Envelope,
    Skipped,
    SocketModeLink,
    ack_message,
    read_frame,
    retry_headers,
)
from simulator import defaults

EVENT = {"type": "event_callback", "team_id": "T1", "event": {"type": "app_mention", "text": "hi"}}


def envelope_frame(**fields) -> str:
    frame = {
        "envelope_id": "e1",
        "type": "events_api",
        "payload": EVENT,
        "accepts_response_payload": False,
        "retry_attempt": 0,
        "retry_reason": "",
    }
    return json.dumps({**frame, **fields})


def test_an_events_api_envelope_is_read_with_its_retry_fields():
    read = read_frame(envelope_frame(retry_attempt=2, retry_reason="timeout"))
    assert read == Envelope("e1", "events_api", EVENT, False, 2, "timeout")


def test_hello_and_disconnect_are_control_frames_with_the_reason():
    assert read_frame(json.dumps({"type": "hello", "num_connections": 1})) == Control("hello")
    assert read_frame(json.dumps({"type": "disconnect", "reason": "refresh_requested"})) == Control(
        "disconnect", "refresh_requested"
    )


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (
            '{"envelope_id": "e9", "type": "events_api", "pay',
            Skipped("e9", "unknown", "not JSON", "unreadable"),
        ),
        ("not json at all", Skipped(None, "unknown", "not JSON", "unreadable")),
        ("[1, 2]", Skipped(None, "unknown", "not a JSON object", "unreadable")),
        (
            json.dumps({"type": "events_api", "payload": EVENT}),
            Skipped(None, "events_api", "no envelope_id", "unreadable"),
        ),
        (
            envelope_frame(type="workflow_step"),
            Skipped("e1", "workflow_step", "envelope type not used: workflow_step", "ignored"),
        ),
        (envelope_frame(payload="text"), Skipped("e1", "events_api", "not a JSON object", "unreadable")),
        (
            envelope_frame(payload={"type": "event_callback"}),
            Skipped("e1", "events_api", "event_callback without an event", "unreadable"),
        ),
        (
            envelope_frame(type="interactive", payload={"type": "block_actions", "actions": "x"}),
            Skipped("e1", "interactive", "block_actions without actions", "unreadable"),
        ),
    ],
)
def test_a_frame_that_cannot_be_dispatched_says_why_and_what_to_ack(frame, expected):
    assert read_frame(frame) == expected


def test_a_long_unknown_type_is_cut_in_what_is_logged():
    read = read_frame(envelope_frame(type="x" * 500))
    assert isinstance(read, Skipped)
    assert len(read.type) == 40


def test_retries_carry_slacks_http_retry_headers_and_first_deliveries_none():
    first = Envelope("e1", "events_api", EVENT, False, 0, "")
    again = Envelope("e2", "events_api", EVENT, False, 1, "timeout")
    assert retry_headers(first) == {}
    assert retry_headers(again) == {"x-slack-retry-num": "1", "x-slack-retry-reason": "timeout"}


def test_an_ack_carries_the_listeners_answer_only_when_the_envelope_accepts_one():
    answer = BoltResponse(status=200, body='{"response_action": "clear"}')
    assert ack_message("e1", answer, True) == {"envelope_id": "e1", "payload": {"response_action": "clear"}}
    assert ack_message("e1", answer, False) == {"envelope_id": "e1"}
    assert ack_message("e1", BoltResponse(status=200, body=""), True) == {"envelope_id": "e1"}


def test_the_backoff_grows_to_its_cap_with_jitter_below_each_step():
    backoff = Backoff(first=1.0, factor=2.0, cap=8.0)
    for attempt, ceiling in enumerate([1.0, 2.0, 4.0, 8.0, 8.0]):
        delays = [backoff.delay(attempt) for _ in range(50)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)


def run_link_until(fake, app, condition) -> None:
    """Runs a SocketModeLink against the fake's websocket until ``condition`` holds, then stops it."""

    async def run() -> None:
        link = SocketModeLink("test", app, defaults.APP_TOKEN, AsyncWebClient(base_url=fake.url))
        running = asyncio.create_task(link.run(grace=5))
        await asyncio.to_thread(fake.wait_for_socket_connections, 1, 10)
        await asyncio.to_thread(
            fake.user_says, defaults.ADA, defaults.CHANNEL_ID, f"{fake.bot_mention} hi", deliver="app_mention"
        )
        await asyncio.to_thread(fake.wait_until, condition, 10)
        link.stop()
        await running

    asyncio.run(run())


def bolt_app(fake, listener) -> AsyncApp:
    app = AsyncApp(
        client=AsyncWebClient(base_url=fake.url, token=defaults.BOT_TOKEN),
        signing_secret="not-used-over-socket-mode",
        process_before_response=True,
    )
    app.event("app_mention")(listener)
    return app


def test_an_envelope_whose_listener_fails_is_not_acked_so_slack_sends_it_again(make_slack_fake):
    fake = make_slack_fake(ack_timeout=0.5, socket_retry_delays=(0.0,))
    fake.deliver_events_over_socket_mode()
    heard = []

    async def failing(event) -> None:
        heard.append(event["ts"])
        raise RuntimeError("the database is down")

    def retried_and_timed_out() -> bool:
        envelopes = fake.socket_envelopes()
        return len(envelopes) == 2 and all(e.delivery is not None for e in envelopes)

    run_link_until(fake, bolt_app(fake, failing), retried_and_timed_out)
    envelopes = fake.socket_envelopes()
    assert [e.retry_attempt for e in envelopes] == [0, 1]
    assert [e.acked_at for e in envelopes] == [None, None]
    assert len(heard) == 2


def test_an_envelope_is_acked_once_its_listener_returned_and_a_retry_says_so(make_slack_fake):
    fake = make_slack_fake()
    fake.deliver_events_over_socket_mode()
    headers = []

    async def taking(event, request) -> None:
        headers.append(request.headers.get("x-slack-retry-num"))

    run_link_until(fake, bolt_app(fake, taking), lambda: bool(fake.deliveries()))
    [envelope] = fake.socket_envelopes()
    assert envelope.acked_in_time
    assert headers == [None]


def test_a_slash_commands_envelope_is_read_with_the_commands_fields_as_its_payload():
    fields = {
        "command": "/kourier",
        "text": "hi",
        "channel_id": "C1",
        "user_id": "U1",
        "response_url": "https://x",
    }
    read = read_frame(envelope_frame(type="slash_commands", payload=fields, accepts_response_payload=True))
    assert isinstance(read, Envelope)
    assert (read.type, read.payload, read.accepts_response_payload) == ("slash_commands", fields, True)
    half = read_frame(envelope_frame(type="slash_commands", payload={**fields, "user_id": None}))
    assert half == Skipped("e1", "slash_commands", "slash command without user_id", "unreadable")
