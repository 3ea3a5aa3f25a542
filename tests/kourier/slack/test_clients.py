"""The product's Slack clients against the fake: what they repeat after a fault, what they check before
they repeat it, how a 429 holds a method back for a workspace, and what they never do."""

import asyncio
import time
import uuid

import pytest
from django.test import override_settings
from slack_sdk.errors import SlackApiError

from kourier import shared_cache, tracing
from kourier.slack import failures
from kourier.slack.budgets import forget_local_budgets
from kourier.slack.clients import (
    SLACK_TIMEOUT_SECONDS,
    RetryPolicy,
    SlackOutcomeUnknown,
    SlackRateLimited,
    SlackUnavailable,
    async_web_client,
    shared_session,
    web_client,
)
from simulator import defaults
from tests.support.metrics import sample

# Backoffs short enough for tests; the fake answers at once.
QUICK = RetryPolicy(backoff=0.01, max_backoff=0.02)
# The fake holds a timed-out request until the client gives up.
CLIENT_TIMEOUT_SECONDS = 1
KEYED = {"event_type": "kourier_notice", "event_payload": {"notice": "turn-1:notice"}}


class SteppedTime:
    """A clock that a client's waits move on, so a wait is seen without taking time."""

    def __init__(self) -> None:
        self.now = time.time()
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@pytest.fixture
def client_for(slack_fake):
    def make(kind: str, *, token: str | None = None, **options):
        with override_settings(SLACK_API_URL=slack_fake.url):
            maker = web_client if kind == "sync" else async_web_client
            options.setdefault("policy", QUICK)
            options.setdefault("timeout", CLIENT_TIMEOUT_SECONDS)
            return maker(token or slack_fake.bot_token, **options)

    return make


@pytest.fixture
def thread_ts(slack_fake) -> str:
    return slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, f"{slack_fake.bot_mention} hi")


def call(client, method: str, **kwargs):
    result = getattr(client, method)(**kwargs)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def replies(fake, thread_ts):
    return fake.thread(defaults.CHANNEL_ID, thread_ts)[1:]


# -- what is repeated, what is not --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_post_whose_answer_was_lost_and_that_cannot_be_checked_is_not_sent_again(
    slack_fake, client_for, kind
):
    slack_fake.fail("chat.postMessage", "disconnect_after_apply")
    with pytest.raises(SlackOutcomeUnknown):
        call(client_for(kind), "chat_postMessage", channel=defaults.CHANNEL_ID, text="once")
    assert [m.text for m in slack_fake.messages(defaults.CHANNEL_ID)] == ["once"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_update_whose_answer_was_lost_is_sent_again(slack_fake, client_for, kind):
    client = client_for(kind)
    ts = call(client, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    slack_fake.fail("chat.update", "disconnect_after_apply")
    call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="final")
    assert slack_fake.message(defaults.CHANNEL_ID, ts).text == "final"
    assert slack_fake.count("chat.update") == 2


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("error", ["http_500", "http_503", "internal_error", "fatal_error"])
def test_a_server_error_is_retried(slack_fake, client_for, kind, error):
    client = client_for(kind)
    ts = call(client, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    slack_fake.fail("chat.update", error)
    call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="final")
    assert slack_fake.message(defaults.CHANNEL_ID, ts).text == "final"
    assert [c.error for c in slack_fake.calls("chat.update")] == [error, None]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_timeout_is_retried(slack_fake, client_for, kind):
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hello")
    slack_fake.fail("reactions.add", "timeout")
    call(client_for(kind), "reactions_add", channel=defaults.CHANNEL_ID, timestamp=ts, name="eyes")
    assert [c.error for c in slack_fake.calls("reactions.add")] == ["timeout", None]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_server_that_keeps_failing_is_given_up_on_after_a_bounded_number_of_sends(
    slack_fake, client_for, kind
):
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hello")
    slack_fake.fail("reactions.add", "http_502", times=None)
    with pytest.raises(SlackApiError) as failed:
        call(client_for(kind), "reactions_add", channel=defaults.CHANNEL_ID, timestamp=ts, name="eyes")
    assert failed.value.response.status_code == 502
    assert slack_fake.count("reactions.add") == QUICK.attempts


def test_a_connection_that_keeps_dropping_is_given_up_on_as_unavailable(slack_fake, client_for):
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hello")
    slack_fake.fail("reactions.add", "disconnect", times=None)
    with pytest.raises(SlackUnavailable):
        call(client_for("async"), "reactions_add", channel=defaults.CHANNEL_ID, timestamp=ts, name="eyes")
    assert slack_fake.count("reactions.add") == QUICK.attempts


def test_the_error_of_a_refused_call_reaches_the_caller_at_once(slack_fake, client_for):
    with pytest.raises(SlackApiError) as refused:
        call(client_for("async"), "chat_postMessage", channel="C0NOWHERE", text="x")
    assert refused.value.response["error"] == "channel_not_found"
    assert slack_fake.count("chat.postMessage") == 1


# -- a post or a stream whose answer was lost is looked for before it is sent again -----------------


@pytest.mark.parametrize("fault", ["timeout_after_apply", "disconnect_after_apply"])
def test_a_keyed_thread_post_that_slack_applied_is_found_not_repeated(
    slack_fake, client_for, thread_ts, fault
):
    slack_fake.fail("chat.postMessage", fault)
    response = call(
        client_for("async"),
        "chat_postMessage",
        channel=defaults.CHANNEL_ID,
        thread_ts=thread_ts,
        text="Something went wrong.",
        metadata=KEYED,
    )
    [posted] = replies(slack_fake, thread_ts)
    assert response["ts"] == posted.ts
    assert slack_fake.count("chat.postMessage") == 1
    assert slack_fake.last_call("conversations.replies").args.get("include_all_metadata") in (
        True,
        "true",
        "1",
    )


@pytest.mark.parametrize("fault", ["timeout", "disconnect", "http_503"])
def test_a_keyed_thread_post_that_did_not_reach_slack_is_sent_again(slack_fake, client_for, thread_ts, fault):
    slack_fake.fail("chat.postMessage", fault)
    response = call(
        client_for("async"),
        "chat_postMessage",
        channel=defaults.CHANNEL_ID,
        thread_ts=thread_ts,
        text="Something went wrong.",
        metadata=KEYED,
    )
    [posted] = replies(slack_fake, thread_ts)
    assert response["ts"] == posted.ts
    assert posted.metadata == KEYED
    assert slack_fake.count("chat.postMessage") == 2


def test_another_post_with_other_metadata_is_not_taken_for_the_lost_one(slack_fake, client_for, thread_ts):
    client = client_for("async")
    other = {"event_type": "kourier_notice", "event_payload": {"notice": "turn-0:notice"}}
    call(
        client, "chat_postMessage", channel=defaults.CHANNEL_ID, thread_ts=thread_ts, text="a", metadata=other
    )
    slack_fake.fail("chat.postMessage", "timeout")
    call(
        client, "chat_postMessage", channel=defaults.CHANNEL_ID, thread_ts=thread_ts, text="b", metadata=KEYED
    )
    assert [m.text for m in replies(slack_fake, thread_ts)] == ["a", "b"]


def test_a_stream_that_started_though_its_answer_was_lost_is_found_not_started_twice(
    slack_fake, client_for, thread_ts
):
    slack_fake.fail("chat.startStream", "timeout_after_apply")
    client = client_for("async")
    started = call(
        client,
        "chat_startStream",
        channel=defaults.CHANNEL_ID,
        thread_ts=thread_ts,
        recipient_user_id=defaults.ADA,
        recipient_team_id=defaults.TEAM_ID,
        chunks=[{"type": "markdown_text", "text": "Hello"}],
    )
    [stream] = replies(slack_fake, thread_ts)
    assert started["ts"] == stream.ts
    assert stream.streaming
    assert slack_fake.count("chat.startStream") == 1
    call(client, "chat_stopStream", channel=defaults.CHANNEL_ID, ts=started["ts"], chunks=[])
    assert replies(slack_fake, thread_ts)[0].text == "Hello"


def test_a_stream_that_did_not_start_is_started_again(slack_fake, client_for, thread_ts):
    slack_fake.fail("chat.startStream", "timeout")
    started = call(
        client_for("async"),
        "chat_startStream",
        channel=defaults.CHANNEL_ID,
        thread_ts=thread_ts,
        recipient_user_id=defaults.ADA,
        recipient_team_id=defaults.TEAM_ID,
        chunks=[{"type": "markdown_text", "text": "Hello"}],
    )
    [stream] = replies(slack_fake, thread_ts)
    assert started["ts"] == stream.ts
    assert slack_fake.count("chat.startStream") == 2


def test_an_append_whose_answer_was_lost_is_not_repeated(slack_fake, client_for, thread_ts):
    client = client_for("async")
    ts = call(
        client,
        "chat_startStream",
        channel=defaults.CHANNEL_ID,
        thread_ts=thread_ts,
        recipient_user_id=defaults.ADA,
        recipient_team_id=defaults.TEAM_ID,
        chunks=[{"type": "markdown_text", "text": "Hello"}],
    )["ts"]
    slack_fake.fail("chat.appendStream", "timeout_after_apply")
    with pytest.raises(SlackOutcomeUnknown):
        call(
            client,
            "chat_appendStream",
            channel=defaults.CHANNEL_ID,
            ts=ts,
            chunks=[{"type": "markdown_text", "text": ", world"}],
        )
    assert slack_fake.count("chat.appendStream") == 1


# -- 429: one workspace's method waits, for every client ----------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_rate_limited_call_is_sent_again_after_retry_after(slack_fake, client_for, kind):
    slack_fake.fail("reactions.add", "ratelimited", retry_after=1)
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hello")
    call(
        client_for(kind, workspace=uuid.uuid4().hex),
        "reactions_add",
        channel=defaults.CHANNEL_ID,
        timestamp=ts,
        name="eyes",
    )
    assert [c.status for c in slack_fake.calls("reactions.add")] == [429, 200]


def test_a_429_holds_that_method_back_for_that_workspace_in_every_client(slack_fake, client_for):
    other_token = slack_fake.add_workspace("T0002").app.bot_token
    slack_fake.add_channel("C0002", "elsewhere", team="T0002")
    workspace = f"T0001-{uuid.uuid4().hex}"
    steps = SteppedTime()

    def client(**options):
        return client_for("async", clock=steps.clock, sleep=steps.sleep, **options)

    first = client(workspace=workspace, policy=RetryPolicy(rate_limit_retries=0))
    second = client(workspace=workspace)
    elsewhere = client(token=other_token, workspace=f"T0002-{uuid.uuid4().hex}")
    ts = call(second, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    slack_fake.fail("chat.update", "ratelimited", retry_after=7, team=defaults.TEAM_ID)

    with pytest.raises(SlackApiError) as limited:
        call(first, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="first")
    assert limited.value.response.status_code == 429

    # Another workspace's updates, and this workspace's other methods, go on without waiting.
    other_ts = call(elsewhere, "chat_postMessage", channel="C0002", text="draft")["ts"]
    call(elsewhere, "chat_update", channel="C0002", ts=other_ts, text="final")
    call(second, "reactions_add", channel=defaults.CHANNEL_ID, timestamp=ts, name="eyes")
    assert steps.waits == []

    # This workspace's next update waits the block out instead of drawing another 429, in any process.
    forget_local_budgets()
    call(second, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="second")
    assert steps.waits == [pytest.approx(7.0)]
    assert [(c.team_id, c.status) for c in slack_fake.calls("chat.update")] == [
        (defaults.TEAM_ID, 429),
        ("T0002", 200),
        (defaults.TEAM_ID, 200),
    ]
    assert slack_fake.message(defaults.CHANNEL_ID, ts).text == "second"


def test_a_block_longer_than_a_call_may_wait_fails_it_without_calling_slack(slack_fake, client_for):
    workspace = f"T0001-{uuid.uuid4().hex}"
    steps = SteppedTime()
    patient = client_for("async", workspace=workspace, clock=steps.clock, sleep=steps.sleep)
    hasty = client_for(
        "async",
        workspace=workspace,
        clock=steps.clock,
        sleep=steps.sleep,
        policy=RetryPolicy(max_wait=5.0),
    )
    ts = call(patient, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    slack_fake.fail("chat.update", "ratelimited", retry_after=30)
    call(patient, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="waited")
    assert steps.waits == [pytest.approx(30.0)]

    once = client_for(
        "async",
        workspace=workspace,
        clock=steps.clock,
        sleep=steps.sleep,
        policy=RetryPolicy(rate_limit_retries=0),
    )
    slack_fake.fail("chat.update", "ratelimited", retry_after=30)
    with pytest.raises(SlackApiError):
        call(once, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="again")
    calls_before = slack_fake.count("chat.update")
    with pytest.raises(SlackRateLimited) as refused:
        call(hasty, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="hurried")
    assert refused.value.response["error"] == "ratelimited"
    assert slack_fake.count("chat.update") == calls_before


def test_without_redis_a_429_still_holds_the_method_back_in_this_process(slack_fake, client_for, monkeypatch):
    def unreachable(*args, **kwargs):
        raise ConnectionError("redis is down")

    # The one step every budget takes in Redis (kourier/shared_cache.py).
    monkeypatch.setattr(shared_cache, "run_script", unreachable)
    steps = SteppedTime()
    client = client_for("async", workspace=f"T0001-{uuid.uuid4().hex}", clock=steps.clock, sleep=steps.sleep)
    ts = call(client, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    slack_fake.fail("chat.update", "ratelimited", retry_after=3)
    call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="final")
    assert steps.waits == [pytest.approx(3.0)]
    assert [c.status for c in slack_fake.calls("chat.update")] == [429, 200]


@override_settings(SLACK_CALL_LIMITS="chat.update=3/30")
def test_a_workspaces_updates_wait_their_turn_in_its_budget_across_clients(slack_fake, client_for):
    workspace = f"T0001-{uuid.uuid4().hex}"
    steps = SteppedTime()
    one, other = (
        client_for("async", workspace=workspace, clock=steps.clock, sleep=steps.sleep) for _ in range(2)
    )
    elsewhere = client_for(
        "async", workspace=f"T0002-{uuid.uuid4().hex}", clock=steps.clock, sleep=steps.sleep
    )
    ts = call(one, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    for n in range(3):
        call((one, other)[n % 2], "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text=f"v{n}")
        call(elsewhere, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text=f"w{n}")  # its own budget
    assert steps.waits == []

    # The budget is spent for this workspace, whichever client calls: the next update waits its turn.
    call(other, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="waited")
    assert steps.waits == [pytest.approx(30.5)]
    assert [c.status for c in slack_fake.calls("chat.update")] == [200] * 7


def test_a_call_made_with_little_patience_is_refused_without_reserving_or_calling_slack(
    slack_fake, client_for
):
    from kourier.slack.clients import patience

    steps = SteppedTime()
    client = client_for("async", workspace=f"T0001-{uuid.uuid4().hex}", clock=steps.clock, sleep=steps.sleep)
    with override_settings(SLACK_CALL_LIMITS="chat.update=1/60"):
        ts = call(client, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
        call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="first")
        with patience(5.0), pytest.raises(SlackRateLimited) as refused:
            call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="hurried")
        assert refused.value.response.headers["Retry-After"] == "61"
        assert asyncio.run(client.next_free("chat.update")) == pytest.approx(61.0)
        assert slack_fake.count("chat.update") == 1
        assert steps.waits == []


def test_auth_test_is_asked_once_per_token_and_process_whichever_client_asks(slack_fake, client_for):
    """Bolt's apps (one per Connection, made again when its secrets change), the outbox's checks and the
    alert posts' links all need who the token is: a burst of turns asked it about 0.6 times per turn."""
    clients = [client_for("async", workspace=f"T0001-{uuid.uuid4().hex}") for _ in range(3)]

    async def everyone_asks():
        return await asyncio.gather(*(client.identity() for client in clients for _ in range(4)))

    answers = asyncio.run(everyone_asks())
    assert {answer["user_id"] for answer in answers} == {slack_fake.workspace().app.bot_user_id}
    assert slack_fake.count("auth.test") == 1
    asyncio.run(clients[0].auth_test())  # asked plainly (the operator's "Test token"): Slack is asked
    assert slack_fake.count("auth.test") == 2


# -- every call is counted ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_each_429_is_counted_and_the_call_by_how_it_ended(slack_fake, client_for, kind):
    ok = sample("kourier_slack_calls_total", method="reactions.add", outcome="ok")
    limited = sample("kourier_slack_rate_limited_total", method="reactions.add")
    slack_fake.fail("reactions.add", "ratelimited", retry_after=1)
    ts = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hello")

    call(
        client_for(kind, workspace=uuid.uuid4().hex),
        "reactions_add",
        channel=defaults.CHANNEL_ID,
        timestamp=ts,
        name="eyes",
    )

    assert sample("kourier_slack_rate_limited_total", method="reactions.add") == limited + 1
    assert sample("kourier_slack_calls_total", method="reactions.add", outcome="ok") == ok + 1


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [("channel_not_found", "refused"), ("http_500", "server_error"), ("disconnect", "unavailable")],
)
def test_a_call_that_failed_is_counted_by_why(slack_fake, client_for, fault, outcome):
    before = sample("kourier_slack_calls_total", method="reactions.remove", outcome=outcome)
    slack_fake.fail("reactions.remove", fault, times=None)

    with pytest.raises(SlackApiError):
        call(client_for("async"), "reactions_remove", channel=defaults.CHANNEL_ID, timestamp="1.2", name="x")

    assert sample("kourier_slack_calls_total", method="reactions.remove", outcome=outcome) == before + 1


# -- the last failure an operator should see ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_refusal_that_names_a_fault_of_the_setup_is_kept_as_the_workspaces_last_failure(
    slack_fake, client_for, kind
):
    workspace = f"connection-{uuid.uuid4().hex}"
    client = client_for(kind, workspace=workspace)
    slack_fake.fail("reactions.add", "already_reacted")  # expected and handled: not shown
    slack_fake.fail("chat.postMessage", "not_in_channel")

    with pytest.raises(SlackApiError):
        call(client, "reactions_add", channel=defaults.CHANNEL_ID, timestamp="1.1", name="eyes")
    assert failures.last_failure(workspace) is None
    with pytest.raises(SlackApiError):
        call(client, "chat_postMessage", channel=defaults.CHANNEL_ID, text="hello")

    kept = failures.last_failure(workspace)
    assert (kept.method, kept.error) == ("chat.postMessage", "not_in_channel")


def test_a_call_slack_never_answered_is_kept_as_the_workspaces_last_failure(slack_fake, client_for):
    workspace = f"connection-{uuid.uuid4().hex}"
    slack_fake.fail("users.info", "http_503", times=None)

    with pytest.raises(SlackApiError):
        call(client_for("async", workspace=workspace), "users_info", user=defaults.ADA)

    kept = failures.last_failure(workspace)
    assert (kept.method, kept.error) == ("users.info", "internal_error")


def test_the_clients_made_on_a_loop_with_a_shared_session_call_slack_through_it(slack_fake, thread_ts):
    async def scenario():
        with override_settings(SLACK_API_URL=slack_fake.url):
            async with shared_session() as session:
                reacting, posting = (async_web_client(slack_fake.bot_token) for _ in range(2))
                await reacting.reactions_add(channel=defaults.CHANNEL_ID, timestamp=thread_ts, name="eyes")
                await posting.chat_postMessage(channel=defaults.CHANNEL_ID, thread_ts=thread_ts, text="hi")
                # A client with a timeout of its own keeps a session per call, as slack_sdk makes it.
                patient = async_web_client(slack_fake.bot_token, timeout=SLACK_TIMEOUT_SECONDS + 1)
            after = async_web_client(slack_fake.bot_token)
            return session, (reacting.session, posting.session, patient.session, after.session)

    session, used = asyncio.run(scenario())
    assert used == (session, session, None, None)
    assert session.closed
    assert [message.text for message in slack_fake.thread(defaults.CHANNEL_ID, thread_ts)[1:]] == ["hi"]


# -- what the trace is told of each call (kourier/tracing.py: ``call``) ---------------------------------


class ToldCall:
    def __init__(self, name, attributes):
        self.name, self.attributes, self.events = name, dict(attributes), []

    def set_attribute(self, key, value):
        self.attributes[key] = value

    def add_event(self, name, **attributes):
        self.events.append(name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None


@pytest.fixture
def told(monkeypatch):
    calls: list[ToldCall] = []

    def call(name, attributes):
        calls.append(ToldCall(name, attributes))
        return calls[-1]

    monkeypatch.setattr(tracing, "call", call)
    return calls


def test_the_trace_is_told_each_calls_method_and_outcome_a_429_and_a_retry(slack_fake, client_for, told):
    client = client_for("async", workspace=uuid.uuid4().hex)
    ts = call(client, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    slack_fake.fail("chat.update", "ratelimited", retry_after=1)
    call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="v1")
    slack_fake.fail("chat.update", "http_503")
    call(client, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="v2")
    with pytest.raises(SlackApiError):
        call(client, "chat_postMessage", channel="C0NOWHERE", text="x")

    assert [(c.name, c.attributes["slack.outcome"], c.events) for c in told] == [
        ("slack.chat.postMessage", "ok", []),
        ("slack.chat.update", "ok", ["slack.rate_limited"]),  # then waited out, as its budget's block
        ("slack.chat.update", "ok", ["slack.retry"]),
        ("slack.chat.postMessage", "refused", []),
    ]
    assert all(c.attributes["slack.method"] == c.name.removeprefix("slack.") for c in told)
    assert told[-1].attributes["slack.error"] == "channel_not_found"


@override_settings(SLACK_CALL_LIMITS="chat.update=3/30")
def test_a_wait_for_the_workspaces_budget_is_told_as_the_calls_own_not_as_a_fault(
    slack_fake, client_for, told
):
    workspace = f"T0001-{uuid.uuid4().hex}"
    steps = SteppedTime()
    one, other = (
        client_for("async", workspace=workspace, clock=steps.clock, sleep=steps.sleep) for _ in range(2)
    )
    ts = call(one, "chat_postMessage", channel=defaults.CHANNEL_ID, text="draft")["ts"]
    for n in range(3):  # the workspace's budget (3 a 30 s) is then spent
        call((one, other)[n % 2], "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text=f"v{n}")
    call(other, "chat_update", channel=defaults.CHANNEL_ID, ts=ts, text="waited")

    assert steps.waits == [pytest.approx(30.5)]
    waited = told[-1]
    assert (waited.attributes["kourier.budget_wait_ms"], waited.events) == (30500, [])
    assert all("kourier.budget_wait_ms" not in c.attributes for c in told[:-1])
