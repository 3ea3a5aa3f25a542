"""A turn's Slack calls are noted with their method, outcome and retries while a recording is on,
bounded, and nothing is kept outside one; the Slack client notes each of its calls so."""

import asyncio
import uuid

import pytest
from django.test import override_settings
from slack_sdk.errors import SlackApiError

from kourier.slack import call_log
from kourier.slack.clients import RetryPolicy, async_web_client
from simulator import defaults


def test_calls_are_noted_with_their_outcome_and_retries_only_while_recording():
    with call_log.call("chat.postMessage") as outside:
        assert outside is None
    with call_log.recording() as record:
        with call_log.call("chat.postMessage") as noted:
            call_log.retried()
            noted.outcome = "rate_limited"
        with call_log.call("reactions.add"):
            pass

    assert [(c["method"], c["outcome"], c["retries"]) for c in record.calls] == [
        ("chat.postMessage", "rate_limited", 1),
        ("reactions.add", "ok", 0),
    ]
    assert all(c["ms"] >= 0 and c["at"] > 0 for c in record.calls)


def test_a_recording_keeps_a_bounded_number_of_calls_and_counts_the_rest():
    with call_log.recording() as record:
        for _ in range(call_log.MAX_CALLS + 5):
            with call_log.call("chat.appendStream"):
                pass

    assert len(record.calls) == call_log.MAX_CALLS
    assert record.dropped == 5


def test_the_clients_calls_are_noted_a_429_waited_out_as_a_retry_and_a_refusal_by_its_error(slack_fake):
    slack_fake.fail("reactions.add", "ratelimited", retry_after=1)
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hello")
    with override_settings(SLACK_API_URL=slack_fake.url):
        client = async_web_client(
            slack_fake.bot_token,
            workspace=uuid.uuid4().hex,
            policy=RetryPolicy(backoff=0.01, max_backoff=0.02),
        )

    async def calls() -> call_log.Recording:
        with call_log.recording() as record:
            await client.reactions_add(channel=defaults.CHANNEL_ID, timestamp=ts, name="eyes")
            with pytest.raises(SlackApiError):
                await client.chat_postMessage(channel="C0NOWHERE", text="hi")
        return record

    record = asyncio.run(calls())

    assert [(c["method"], c["outcome"], c["retries"]) for c in record.calls] == [
        ("reactions.add", "ok", 1),
        ("chat.postMessage", "channel_not_found", 0),
    ]
