"""Signed requests Slack never sends, through the real web process: each is answered 4xx, or 200 and
dropped with a log line saying why, and none stores a row or enqueues work."""

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
import redis

from sessions.models import Session, ThreadNote, Turn
from simulator import defaults

pytestmark = pytest.mark.slow

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
TEXT = "words that never reach a log"  # the mention's text: logged nowhere, whatever is wrong around it


def envelope(event: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "event_callback", "team_id": defaults.TEAM_ID, "api_app_id": defaults.APP_ID,
        "event_id": "Ev0BAD", "event_time": 1700000000,
        "authorizations": [{"team_id": defaults.TEAM_ID, "user_id": defaults.BOT_USER_ID, "is_bot": True}],
    }  # fmt: skip
    if event is not None:
        body["event"] = event
    return {**body, **overrides}


def mention(**overrides: Any) -> dict[str, Any]:
    """An app_mention at the top level of the bound channel, with some fields replaced (None: left out)."""
    event = {"type": "app_mention", "user": defaults.ADA, "text": f"<@{defaults.BOT_USER_ID}> {TEXT}",
             "ts": "1700000000.000100", "channel": defaults.CHANNEL_ID, "event_ts": "1700000000.000100"}  # fmt: skip
    event.update(overrides)
    return envelope({key: value for key, value in event.items() if value is not None})


def direct_message(**overrides: Any) -> dict[str, Any]:
    """A person's message to the app in their im (the world's Binding takes channels only)."""
    event = {"type": "message", "channel_type": "im", "user": defaults.ADA, "text": TEXT,
             "ts": "1700000000.000200", "channel": "D0ADA", "event_ts": "1700000000.000200"}  # fmt: skip
    event.update(overrides)
    return envelope({key: value for key, value in event.items() if value is not None})


def as_json(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def as_form(payload: Any) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    status: int
    reason: str  # what the web process's log line names
    content_type: str = JSON


# DATA_UPLOAD_MAX_MEMORY_SIZE is Django's default, 2.5 MiB.
HUGE = as_json(mention(text="x" * (3 * 1024 * 1024)))

CASES = [
    Case("not JSON", b'{"type": "event_callback", ', 400, "Bolt cannot read it (JSONDecodeError)"),
    Case("JSON that is not an object", as_json([mention()]), 400,
         "Bolt cannot read it (AttributeError)"),
    Case("empty", b"", 400, "no type"),
    Case("form data without a payload", b"text=hello", 400, "no type", FORM),
    Case("a form payload that is not JSON", b"payload=%7Bnot", 400,
         "Bolt cannot read it (JSONDecodeError)", FORM),
    Case("not UTF-8", as_json(mention()).replace(TEXT.encode(), b"\xff\xfe"), 400, "not UTF-8"),
    Case("an event without a channel", as_json(mention(channel=None)), 200, "no channel"),
    Case("an event without a user", as_json(mention(user=None)), 200, "no user"),
    Case("event.text a list", as_json(mention(text=[TEXT])), 200, "text is not a string"),
    Case("event.channel a list", as_json(mention(channel=[defaults.CHANNEL_ID])), 200,
         "channel is not a string"),
    # Bolt itself cannot read a channel that is a number: the door refuses the body.
    Case("event.channel a number", as_json(mention(channel=1)), 400,
         "Bolt cannot read it (TypeError)"),
    Case("thread_ts an object", as_json(mention(thread_ts={"ts": "1"})), 200, "thread_ts is not a string"),
    Case("an unknown event type", as_json(envelope({"type": "emoji_changed", "subtype": "add"})), 200,
         "event type not used: emoji_changed"),
    Case("an event_callback without an event", as_json(envelope()), 400, "event_callback without an event"),
    Case("an event that is not an object", as_json(envelope(event=TEXT)), 400, "event_callback without an event"),
    Case("team_id an object", as_json({**mention(), "team_id": {"id": defaults.TEAM_ID}}), 400,
         "team_id is not a string"),
    Case("a url_verification without a challenge", as_json({"type": "url_verification"}), 400,
         "url_verification without a challenge"),
    Case("a block_actions without actions", as_form({"type": "block_actions", "user": {"id": defaults.ADA}}),
         400, "block_actions without actions", FORM),
    Case("a body over the size limit", HUGE, 413, "body over the size limit"),
    Case("a direct message without a user", as_json(direct_message(user=None)), 200, "no user"),
    Case("a direct message no Binding takes", as_json(direct_message()), 200,
         "no Binding takes this Connection's direct messages"),
    Case("app_home_opened without a channel", as_json(envelope({"type": "app_home_opened", "user": defaults.ADA,
         "tab": "messages", "event_ts": "1700000000.000100"})), 200, "no channel"),
    Case("a slash command without a channel", urlencode({"command": "/kourier", "text": TEXT,
         "user_id": defaults.ADA, "response_url": "https://example.com/not-slacks"}).encode(),
         400, "slash command without channel_id", FORM),
    Case("a message_action without a callback_id", as_form({"type": "message_action", "user": {"id": defaults.ADA},
         "message": {"ts": "1700000000.000100", "text": TEXT}}), 400, "message_action without a callback_id", FORM),
    Case("a slash command's text over Slack's length", urlencode({"command": "/kourier", "text": "x" * 4001,
         "channel_id": defaults.CHANNEL_ID, "user_id": defaults.ADA,
         "response_url": "https://example.com/not-slacks"}).encode(),
         200, "slash command text over the length Slack allows", FORM),
    Case("assistant_thread_started without its thread", as_json(envelope({"type": "assistant_thread_started",
         "event_ts": "1700000000.000100"})), 200, "assistant_thread_started without an assistant_thread"),
]  # fmt: skip


@pytest.fixture
def world(make_world):
    # DEBUG: the line for an event type not used is a debug line.
    return make_world(workers=0, env={"LOG_LEVEL": "DEBUG"})


def stored() -> tuple[int, int, int]:
    return Session.objects.count(), Turn.objects.count(), ThreadNote.objects.count()


def queued_tasks(world) -> int:
    return redis.Redis.from_url(world.stack.env["REDIS_URL"]).llen(world.stack.env["CELERY_QUEUE"])


def reasons_logged(world, since_line: int) -> list[str]:
    lines = (world.stack.logs / "web.log").read_text(errors="replace").splitlines()[since_line:]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    return [record["reason"] for record in records if "reason" in record]


def web_log_lines(world) -> int:
    return len((world.stack.logs / "web.log").read_text(errors="replace").splitlines())


def test_a_well_formed_mention_sent_the_same_way_is_stored_and_enqueued(world):
    delivery = world.slack.deliver_raw(as_json(mention()))
    assert delivery.status == 200
    assert (stored(), queued_tasks(world)) == ((1, 1, 0), 1)


def test_bad_input_is_answered_4xx_or_dropped_and_stores_nothing(world):
    outcomes, expected = {}, {}
    for case in CASES:
        log_start = web_log_lines(world)
        delivery = world.slack.deliver_raw(case.body, content_type=case.content_type)
        outcomes[case.name] = (
            delivery.status,
            reasons_logged(world, log_start),
            stored(),
            queued_tasks(world),
        )
        expected[case.name] = (case.status, [case.reason], (0, 0, 0), 0)
    assert outcomes == expected
    assert TEXT not in (world.stack.logs / "web.log").read_text(errors="replace")
