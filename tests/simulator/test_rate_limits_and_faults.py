"""Rate limits (docs/slack-platform.md §4.7) and injected faults, as the real clients experience them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, cast

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from simulator import ManualClock, SlackFake
from simulator.defaults import ADA, CHANNEL_ID, TEAM_ID
from simulator.rate_limits import RateLimiter

# slack_sdk annotates ``timeout`` as int but hands it to urlopen/aiohttp, which take fractions of a second.
SHORT_TIMEOUT = cast(int, 0.3)


def rejection(call: Callable[..., Any], **kwargs: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as failure:
        call(**kwargs)
    return failure.value


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=1_800_000_000.0)


@pytest.fixture
def fake(make_slack_fake: Callable[..., SlackFake], clock: ManualClock) -> SlackFake:
    return make_slack_fake(clock=clock, rate_limits=True)


@pytest.fixture
def client(fake: SlackFake) -> WebClient:
    return WebClient(token=fake.bot_token, base_url=fake.url)


def start_stream(client: WebClient, thread_ts: str) -> None:
    client.chat_startStream(
        channel=CHANNEL_ID,
        thread_ts=thread_ts,
        recipient_user_id=ADA,
        recipient_team_id=TEAM_ID,
        markdown_text="x",
    )


def test_tier_2_allows_20_stream_starts_a_minute(
    client: WebClient, fake: SlackFake, clock: ManualClock
) -> None:
    root = fake.user_says(ADA, CHANNEL_ID, "go")
    for _ in range(20):
        start_stream(client, root)
        clock.advance(1)
    refused = rejection(start_stream, client=client, thread_ts=root)
    assert refused.response.status_code == 429
    assert refused.response["error"] == "ratelimited"
    assert refused.response.headers["Retry-After"] == "40"  # the first call leaves the window 40 s from now
    clock.advance(40)
    start_stream(client, root)  # a sliding window: one call has left it


def test_tiers_3_and_4(client: WebClient, fake: SlackFake) -> None:
    posted = client.chat_postMessage(channel=CHANNEL_ID, text="v0")
    for number in range(50):
        client.chat_update(channel=CHANNEL_ID, ts=posted["ts"], text=f"v{number}")
    assert (
        rejection(client.chat_update, channel=CHANNEL_ID, ts=posted["ts"], text="x").response.status_code
        == 429
    )
    for _ in range(100):
        client.users_info(user=ADA)
    assert rejection(client.users_info, user=ADA).response.status_code == 429
    client.auth_test()  # a Special method with no budget here


def test_limits_are_per_workspace_and_method(client: WebClient, fake: SlackFake) -> None:
    fake.rate_limits.set_budget("users.info", 1)
    fake.rate_limits.set_budget("auth.test", 1)
    client.users_info(user=ADA)
    client.auth_test()  # another method's budget
    other = fake.add_workspace("T0002")
    fake.add_user("U0BOB", "Bob Other", team="T0002")
    WebClient(token=other.app.bot_token, base_url=fake.url).users_info(
        user="U0BOB"
    )  # another workspace's budget
    assert rejection(client.users_info, user=ADA).response.status_code == 429


def test_post_message_allows_about_one_a_second_per_channel(
    client: WebClient, fake: SlackFake, clock: ManualClock
) -> None:
    fake.add_channel("C0002", "other")
    for _ in range(5):
        client.chat_postMessage(channel=CHANNEL_ID, text="burst")
    assert rejection(client.chat_postMessage, channel=CHANNEL_ID, text="x").response.status_code == 429
    client.chat_postMessage(channel="C0002", text="another channel has its own budget")
    clock.advance(4.5)
    assert (
        rejection(client.chat_postMessage, channel=CHANNEL_ID, text="x").response.headers["Retry-After"]
        == "1"
    )
    clock.advance(0.5)  # five posts in five seconds: the burst has drained
    client.chat_postMessage(channel=CHANNEL_ID, text="later")


def test_slack_sdk_retry_handler_honours_retry_after(fake: SlackFake) -> None:
    fake.fail("chat.postMessage", "ratelimited", retry_after=0)
    client = WebClient(token=fake.bot_token, base_url=fake.url, retry_handlers=[RateLimitErrorRetryHandler()])
    client.chat_postMessage(channel=CHANNEL_ID, text="second try")
    assert [c.status for c in fake.calls("chat.postMessage")] == [429, 200]


def test_budgets_are_off_by_default_and_can_be_scaled(make_slack_fake: Callable[..., SlackFake]) -> None:
    relaxed = make_slack_fake(rate_limits=True, rate_limit_multiplier=2)
    client = WebClient(token=relaxed.bot_token, base_url=relaxed.url)
    for _ in range(10):
        client.chat_postMessage(channel=CHANNEL_ID, text="x")
    assert rejection(client.chat_postMessage, channel=CHANNEL_ID, text="x").response.status_code == 429
    unlimited = make_slack_fake()  # the functional tests' fake
    client = WebClient(token=unlimited.bot_token, base_url=unlimited.url)
    for _ in range(30):
        client.chat_postMessage(channel=CHANNEL_ID, text="x")


def test_the_limiter_counts_a_sliding_window() -> None:
    clock = ManualClock(start=0)
    limiter = RateLimiter(clock)
    limiter.set_budget("m", calls=2, window=10)
    assert limiter.admit("T", "m") is None
    clock.advance(6)
    assert limiter.admit("T", "m") is None
    assert limiter.admit("T", "m") == 4
    clock.advance(4)
    assert limiter.admit("T", "m") is None  # the first call is out of the window
    assert limiter.admit("T", "m") == 6  # the call at 6 s leaves the window at 16 s


def test_injected_429_is_what_the_async_client_sees(fake: SlackFake) -> None:
    fake.fail("reactions.add", "ratelimited", retry_after=7)
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.url)
    ts = fake.user_says(ADA, CHANNEL_ID, "hi")

    async def react() -> SlackApiError:
        try:
            await client.reactions_add(channel=CHANNEL_ID, timestamp=ts, name="eyes")
        except SlackApiError as refusal:
            return refusal
        raise AssertionError("expected a 429")

    refused = asyncio.run(react())
    assert (refused.response.status_code, refused.response.headers["Retry-After"]) == (429, "7")
    assert fake.message(CHANNEL_ID, ts).reactions == {}


def test_injected_server_errors_and_slack_errors(client: WebClient, fake: SlackFake) -> None:
    fake.fail("chat.postMessage", "http_503")
    refused = rejection(client.chat_postMessage, channel=CHANNEL_ID, text="x")
    assert refused.response.status_code == 503
    fake.fail("chat.postMessage", "restricted_action_thread_locked")
    refused = rejection(client.chat_postMessage, channel=CHANNEL_ID, text="x")
    assert (refused.response.status_code, refused.response["error"]) == (
        200,
        "restricted_action_thread_locked",
    )
    fake.fail("chat.update", "missing_scope", needed="chat:write")
    posted = client.chat_postMessage(channel=CHANNEL_ID, text="third time lucky")
    assert rejection(client.chat_update, channel=CHANNEL_ID, ts=posted["ts"], text="y").response[
        "needed"
    ] == ("chat:write")
    assert [m.text for m in fake.messages(CHANNEL_ID)] == ["third time lucky"]


def test_a_fault_can_pick_calls_by_their_arguments(client: WebClient, fake: SlackFake) -> None:
    fault = fake.fail(
        "chat.postMessage", "http_500", times=None, when=lambda args: args.get("text") == "doomed"
    )
    client.chat_postMessage(channel=CHANNEL_ID, text="fine")
    for _ in range(2):
        assert (
            rejection(client.chat_postMessage, channel=CHANNEL_ID, text="doomed").response.status_code == 500
        )
    assert fault.hits == 2
    fake.clear_faults()
    client.chat_postMessage(channel=CHANNEL_ID, text="doomed")


def test_a_timeout_drops_the_call(client: WebClient, fake: SlackFake) -> None:
    fake.fail("chat.postMessage", "timeout")
    impatient = WebClient(token=fake.bot_token, base_url=fake.url, timeout=SHORT_TIMEOUT)
    with pytest.raises(TimeoutError):
        impatient.chat_postMessage(channel=CHANNEL_ID, text="lost")
    assert fake.count("chat.postMessage") == 1  # held once, and the client gave up on it
    assert fake.messages(CHANNEL_ID) == []
    assert (fake.last_call("chat.postMessage").error, fake.last_call("chat.postMessage").applied) == (
        "timeout",
        False,
    )


def test_a_timeout_after_apply_loses_only_the_answer(fake: SlackFake) -> None:
    fake.fail("chat.postMessage", "timeout_after_apply")
    impatient = WebClient(token=fake.bot_token, base_url=fake.url, timeout=SHORT_TIMEOUT)
    with pytest.raises(TimeoutError):
        impatient.chat_postMessage(channel=CHANNEL_ID, text="posted, but the app never heard")
    assert [m.text for m in fake.messages(CHANNEL_ID)] == ["posted, but the app never heard"]
    lost = fake.last_call("chat.postMessage")
    assert lost.response is not None
    assert (lost.status, lost.applied, lost.response["ok"]) == (None, True, True)


def test_the_async_client_times_out_too(fake: SlackFake) -> None:
    fake.fail("users.info", "timeout")
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.url, timeout=SHORT_TIMEOUT)
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(client.users_info(user=ADA))


def test_a_disconnect_after_apply_is_retried_by_slack_sdk_into_a_duplicate(
    client: WebClient, fake: SlackFake
) -> None:
    """slack_sdk's default ConnectionErrorRetryHandler retries a dropped connection once."""
    fake.fail("chat.postMessage", "disconnect_after_apply")
    client.chat_postMessage(channel=CHANNEL_ID, text="once?")
    assert [m.text for m in fake.messages(CHANNEL_ID)] == ["once?", "once?"]


def test_a_held_request_does_not_block_stopping(make_slack_fake: Callable[..., SlackFake]) -> None:
    fake = make_slack_fake()
    fake.fail("auth.test", "timeout")
    client = WebClient(token=fake.bot_token, base_url=fake.url, timeout=30, retry_handlers=[])
    outcome: list[BaseException] = []
    caller = threading.Thread(target=lambda: _capture(outcome, client.auth_test))
    caller.start()
    fake.wait_for_call("auth.test")
    fake.stop()  # lets the held request go rather than waiting for it
    caller.join(timeout=60)  # longer than the client's own timeout: a request never let go shows below
    assert not caller.is_alive(), "the held request still waits after the fake stopped"
    [failure] = outcome
    # The client saw the connection end without an answer; it did not give up waiting for one.
    assert not isinstance(failure, TimeoutError), failure


def _capture(outcome: list[BaseException], call: Callable[[], Any]) -> None:
    try:
        call()
    except BaseException as failure:
        outcome.append(failure)
