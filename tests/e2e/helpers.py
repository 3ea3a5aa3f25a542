"""What the end-to-end tests share: waiting for the product (bounded, failing with what never came),
reading the thread as people see it, pressing a prompt's buttons, and the worlds they start. The
test modules import from here, never from one another."""

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest
from django.db import connections
from prometheus_client.parser import text_string_to_metric_families

from interactions.prompts import SUBMIT_ACTION
from kourier.a2a.dialects.kagent import DENIAL_REASON
from kourier.slack.blocks import STOP_BLOCK_PREFIX
from kourier.slack.outbox import PostKind
from sessions.models import PostIntent, Turn
from simulator import defaults
from simulator.fake import SlackFake
from tests.factories import ConnectionFactory
from tests.fakes.a2a_agent import HITL_EXTENSION, ReceivedMessage, kagent
from tests.fakes.a2a_agent.kagent import PendingTool
from tests.fakes.a2a_agent.steps import Step, text, tool_result
from tests.support.stack import REPO_ROOT

ACK = "hourglass_flowing_sand"
WAIT = 30.0  # a bound to fail on, not a speed: generous for a busy 2-core host


def replies(world, thread_ts):
    """The product's messages in the thread, in order."""
    return [message for message in world.slack.thread(world.channel, thread_ts)[1:] if message.is_bot]


def wait_for_reply_count(world, thread_ts, count, *, done=True):
    def ready():
        found = replies(world, thread_ts)
        return len(found) >= count and (not done or not any(m.streaming for m in found))

    world.slack.wait_until(ready, timeout=WAIT)
    return replies(world, thread_ts)


def poll_until(condition, timeout: float, interval: float = 0.1) -> bool:
    """Re-checks ``condition`` until it holds or ``timeout`` passes. For conditions that read the
    database: the Slack fake's ``wait_until`` holds the fake's lock while it checks, so a database read
    there would hold up every Slack call the product makes meanwhile."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)  # polling a condition, bounded by the deadline
    return True


def wait_for(condition, what: str, *, timeout: float = WAIT) -> None:
    """Waits until ``condition`` (a read of the database) holds; fails saying what never came."""
    if not poll_until(condition, timeout):
        pytest.fail(f"{what}: not within {timeout} s")


def wait_for_turns_to_end(world, count, *, timeout=WAIT):
    """Waits until ``count`` turns have ended and the product is done with each: its failure notice
    posted, its acknowledgment reaction taken off (the last thing a runner does for a turn). Only then
    can a test count what the product did, for nothing more is coming for those turns."""

    def ended():
        return Turn.objects.exclude(state__in=[Turn.State.QUEUED, Turn.State.RUNNING])

    def done():
        return (
            ended().count() >= count
            and not ended().filter(acknowledged=True).exists()
            and not PostIntent.objects.filter(
                turn__in=ended(), kind=PostKind.NOTICE, state=PostIntent.State.INTENDED
            ).exists()
        )

    if not poll_until(done, timeout):
        turns = list(Turn.objects.order_by("message_ts").values_list("message_ts", "state", "acknowledged"))
        owed = list(
            PostIntent.objects.filter(kind=PostKind.NOTICE, state=PostIntent.State.INTENDED).values_list(
                "turn__message_ts", flat=True
            )
        )
        pytest.fail(
            f"{count} turns were not over within {timeout} s; turns (message, state, reaction on): "
            f"{turns}; notices never posted for: {owed}"
        )


def bot_messages(world, thread_ts):
    """Every message of the product in the thread, the root left out."""
    return [m for m in world.slack.thread(world.channel, thread_ts)[1:] if m.is_bot]


def has_controls(blocks) -> bool:
    """Whether a message has a prompt's controls (buttons, or inputs with a Submit); a running turn's
    Stop button (sessions/stops.py) is not a prompt's."""
    return any(
        block.get("type") in ("actions", "input")
        and not str(block.get("block_id", "")).startswith(STOP_BLOCK_PREFIX)
        for block in blocks
    )


def wait_for_prompt(world, thread_ts, *, timeout: float = WAIT):
    """The thread's prompt (a question's or an approval's), once the product has posted it."""

    def prompt():
        found = [m for m in bot_messages(world, thread_ts) if has_controls(m.blocks)]
        return found[0] if found else None

    world.slack.wait_until(lambda: prompt() is not None, timeout=timeout)
    return prompt()


def press(world, prompt_ts, action, *, user=defaults.GRACE, choices=None):
    """``user`` presses a prompt's button, as Slack delivers it; Slack needs its 200 whatever the press."""
    delivery = world.slack.press_button(user, world.channel, prompt_ts, action, choices=choices or {})
    assert delivery.status == 200
    return delivery


def approvals_world(make_world, agent, **fields):
    """A world whose Binding puts questions and tool approvals to the thread (kagent's dialect)."""
    return make_world(agent_url=agent.url, dialect="kagent-v1", ask_user=True, tool_approvals=True, **fields)


def decisions_received(received: ReceivedMessage) -> dict:
    """The tool decisions a continuation carried to the agent (kagent's HITL extension)."""
    return received.metadata[HITL_EXTENSION]


# The tools an approvals test pauses for (CHECK's token a secret the product must redact), and an
# agent that pauses for them, then runs those approved.
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape
ADD = PendingTool("call_add", "add_numbers", {"a": 2, "b": 3}, approval_id="adk-add")
CHECK = PendingTool("call_check", "check_status", {"service": "db", "token": SECRET}, approval_id="adk-check")


def pause_then_finish(tools):
    def script(received: ReceivedMessage) -> list[Step]:
        if received.is_continuation:
            approvals = decisions_received(received)["approvals"]
            ran = [
                tool
                for tool in tools
                if any(a["id"] == tool.approval_id and a["approved"] for a in approvals)
            ]
            results = [
                tool_result(tool.call_id, tool.name, {"result": "ok"})
                if tool in ran
                else tool_result(
                    tool.call_id,
                    tool.name,
                    {"result": f"Tool call was rejected by user. Reason: {DENIAL_REASON}"},
                )
                for tool in tools
            ]
            return [*results, text(f"Ran {len(ran)} of {len(tools)} tools.")]
        return [text("I need to run some tools."), *kagent.v1.approval_pause(tools)]

    return script


def manage(world, *args: str) -> subprocess.CompletedProcess:
    """Runs ``manage.py ARGS`` as an operator would beside the running product: its own process, the
    product's environment."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        env=world.stack.env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


BOT_TOKEN_ENV = "KOURIER_E2E_BOT_TOKEN"


APP_TOKEN_ENV = "KOURIER_E2E_APP_TOKEN"


SIGNING_SECRET_ENV = "KOURIER_E2E_SIGNING_SECRET"


OTHER_APP_SECRET_ENV = "KOURIER_E2E_OTHER_APP_SIGNING_SECRET"


OTHER_APP_SECRET = "another-apps-signing-secret"


def another_app() -> dict[str, str]:
    """A second Connection, "other": another Slack app of the same workspace (its own signing secret).
    Call it before make_world and pass what it returns as make_world's env."""
    ConnectionFactory(name="other", bot_token_env=BOT_TOKEN_ENV, signing_secret_env=OTHER_APP_SECRET_ENV)
    return {OTHER_APP_SECRET_ENV: OTHER_APP_SECRET}


def through_another_app(world) -> None:
    """From now on Slack delivers to the other app (another_app): its requests signed with its secret."""
    world.slack.deliver_events_to(f"{world.stack.base_url}/slack/events/other", OTHER_APP_SECRET)


def assert_acked(slack: SlackFake, ts: str) -> None:
    """Every event Slack sent the app about message ``ts`` was answered 200 in time."""
    answers = [(delivery.kind, delivery.status) for delivery in slack.deliveries(ts=ts)]
    assert answers, f"Slack sent the app no event for {ts}"
    assert answers == [(kind, 200) for kind, _ in answers]


# Slack's budgets for a burst test that is not about them (SLACK_CALL_LIMITS, as an operator may set
# it): with the published 20 stream starts a minute, one channel's fifty answers take half a minute
# (twenty streamed, then a post a second); allowed a hundred, they take seconds. The fake enforces no
# limit in such tests (its default); tests/e2e/test_slack_budgets.py is where budgets are under test.
ROOMY_STREAM_BUDGETS = {"SLACK_CALL_LIMITS": "chat.startStream=100/60,chat.stopStream=100/60"}


def mentions_at(world, count: int, per_second: float) -> list[str]:
    """``count`` people's mentions in new threads, ``per_second`` of them a second (sent from a few
    threads at their moments, as people post whatever the app does); their ts, in order."""
    import time

    start = time.monotonic()

    def say(number: int) -> str:
        time.sleep(max(0.0, start + number / per_second - time.monotonic()))  # pacing the sender
        return world.slack.user_says(
            defaults.ADA, world.channel, f"{world.slack.bot_mention} number {number}", deliver="app_mention"
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(say, range(count)))


def wait_until_answered(world, thread_ts_list: list[str], timeout: float = 120.0) -> None:
    world.slack.wait_until(
        lambda: all(len(replies(world, ts)) >= 1 for ts in thread_ts_list), timeout=timeout
    )


TRIGGER_TOKEN_ENV = "KOURIER_E2E_TRIGGER_TOKEN"


TRIGGER_TOKEN = "trigger-s3cret"


# "prometheus" keeps a thread per alert (threadPer: alert); "grouped" is the default, a thread per
# Alertmanager group (the real Alertmanager's tests are in test_alertmanager.py).
TRIGGERS = [
    {"name": "prometheus", "kind": "alertmanager", "token_env": TRIGGER_TOKEN_ENV, "thread_per": "alert"},
    {"name": "grouped", "kind": "alertmanager", "token_env": TRIGGER_TOKEN_ENV},
    {"name": "hooks", "kind": "generic", "token_env": TRIGGER_TOKEN_ENV},
]


FIRST_START = "2024-05-01T10:00:00.123456789Z"


def am_alert(name="DiskFull", *, status="firing", starts_at=FIRST_START, fingerprint=None, **labels):
    return {
        "status": status,
        "labels": {"alertname": name, "severity": "critical", "instance": "db-1", **labels},
        "annotations": {"summary": f"{name} on db-1"},
        "startsAt": starts_at,
        "endsAt": "2024-05-01T11:00:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.example/graph?g0.expr=up",
        "fingerprint": fingerprint or f"fp-{name.lower()}",
    }


def group(*alerts, status="firing"):
    return {
        "version": "4",
        "groupKey": '{}:{alertname="DiskFull"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "kourier",
        "groupLabels": {"alertname": "DiskFull"},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.example",
        "alerts": list(alerts),
    }


def deliver(world, body, *, trigger="prometheus", binding=None, token=TRIGGER_TOKEN, headers=None, raw=None):
    binding = binding or world.binding.name
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(
        f"{world.stack.base_url}/triggers/{binding}/{trigger}", content=content, headers=sent, timeout=WAIT
    )


def roots(world):
    return world.slack.messages(world.channel)


def thread_of(world, root_ts):
    return [m for m in world.slack.thread(world.channel, root_ts)[1:] if m.is_bot]


def wait_for_thread(world, count):
    """The alert's thread once it shows ``count`` bot messages, none still streaming."""

    def ready():
        found = roots(world)
        if not found:
            return False
        replies = thread_of(world, found[-1].ts)
        return len(replies) >= count and not any(m.streaming for m in replies)

    world.slack.wait_until(ready, timeout=WAIT)
    return thread_of(world, roots(world)[-1].ts)


QUESTIONS = [
    kagent.Question("Which database should I use?", ["PostgreSQL", "MySQL", "SQLite"]),
    kagent.Question("Which features?", ["Auth", "Caching", "Search"], multiple=True),
    kagent.Question("Anything else?"),
]


def answers_received(received: ReceivedMessage) -> dict:
    [payload] = [part["metadata"] for part in received.parts if "metadata" in part] or [received.metadata]
    return payload[HITL_EXTENSION]


def ask_then_finish(received: ReceivedMessage) -> list[Step]:
    if received.is_continuation:
        return [text("Thanks, carrying on.")]
    return kagent.v1.ask_user_pause(QUESTIONS, request_id="adk-ask")


def _has_submit(blocks) -> bool:
    return any(
        element.get("action_id") == SUBMIT_ACTION
        for block in blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    )


def submit(world, prompt_ts, *, user=defaults.GRACE, choices=None):
    delivery = world.slack.press_button(user, world.channel, prompt_ts, SUBMIT_ACTION, choices=choices or {})
    assert delivery.status == 200  # Slack needs its 200 within three seconds, whatever the press
    return delivery


METRICS_TOKEN = "e2e-metrics-token"


def scrape(world, url: str | None = None) -> dict[str, list]:
    """The web's /metrics, or the one at ``url``."""
    response = httpx.get(
        url or f"{world.stack.base_url}/metrics",
        headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return {family.name: family.samples for family in text_string_to_metric_families(response.text)}


def wait_for_ready(url: str, process: subprocess.Popen, timeout: float = 60) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "serve exited at start"
        try:
            response = httpx.get(url, timeout=2)
            if response.status_code == 200:
                return response
        except httpx.TransportError:
            pass
        time.sleep(0.2)  # polling for the service to come up, not timing a race
    raise TimeoutError(f"{url} was not ready within {timeout} s")


BROWSER_TIMEOUT_MS = 60_000  # a busy 2-core host can take seconds to render a page or start the browser


def chromium_path() -> str | None:
    path = os.environ.get("KOURIER_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    return path if path and os.access(path, os.X_OK) else None


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must run the browser test (.ci/run installs both)")
    pytest.skip(reason)


@contextmanager
def synchronous_orm_calls() -> Iterator[None]:
    """The test's ORM calls while Playwright's sync API runs.

    That API keeps its event loop marked as running in this thread, so Django would take these plain
    synchronous calls for calls from async code: the flag that allows them is set only around them,
    never in the processes under test. They also run in Playwright's greenlet, whose context is its
    own and so is its database connection: it is closed here, or the test database could not be
    dropped after the run."""
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield
    finally:
        connections.close_all()
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
