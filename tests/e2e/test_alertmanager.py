"""Alert threads against a real Prometheus Alertmanager (Debian's prometheus-alertmanager): alerts are
pushed through its v2 API as Prometheus pushes them, and Alertmanager sends its own webhooks, with
send_resolved and a bearer token, to the trigger on Kourier's real web process; the worker posts
through the Slack fake and runs each thread's turn against the A2A fake.

Its group_wait, group_interval and repeat_interval are seconds, so every kind of re-send happens
within a test. Without the binary the tests are skipped, outside CI; under CI (CI=true, as .ci/run
sets) they fail, since .ci/run installs it.
"""

import os
import signal
from datetime import UTC, datetime, timedelta
from urllib.parse import urlparse

import pytest

from alerts import messages
from alerts.models import Alert, AlertMember, AlertPost
from sessions.models import Turn
from tests.fakes.a2a_agent import steps
from tests.support.alertmanager import INSTALL_HINT, Alertmanager, Receiver, alertmanager_path, config

pytestmark = pytest.mark.slow

WAIT = 45.0
TOKEN_ENV = "KOURIER_E2E_ALERTMANAGER_TOKEN"
TOKEN = "alertmanager-s3cret"
TRIGGERS = [
    {"name": "prometheus", "kind": "alertmanager", "token_env": TOKEN_ENV},
    {"name": "capped", "kind": "alertmanager", "token_env": TOKEN_ENV, "max_threads_per_hour": 1},
    {"name": "per-alert", "kind": "alertmanager", "token_env": TOKEN_ENV, "thread_per": "alert"},
]
STARTED = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
CRASHING = {"alertname": "PodCrashLooping", "namespace": "shop", "severity": "warning"}
WEB_1 = {**CRASHING, "pod": "web-1"}
WEB_2 = {**CRASHING, "pod": "web-2"}


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must run the Alertmanager tests (.ci/run installs it)")
    pytest.skip(reason)


@pytest.fixture
def world(make_world, a2a_agent):
    a2a_agent.script([steps.text("Looking into it.")])
    return make_world(agent_url=a2a_agent.url, triggers=TRIGGERS, env={TOKEN_ENV: TOKEN})


@pytest.fixture
def alertmanager(world, tmp_path):
    """Alertmanager with four receivers: everything to the trigger ``prometheus``; alerts labelled
    storm="yes" to ``capped`` (one thread an hour); alerts labelled token="wrong" with a wrong token;
    alerts labelled per="alert" to ``per-alert`` (threadPer: alert, the default cap of 20)."""
    binary = alertmanager_path()
    if binary is None:
        skip_or_fail(f"Alertmanager is not installed ({INSTALL_HINT})")
    assert binary is not None
    base = f"{world.stack.base_url}/triggers/{world.binding.name}"
    manager = Alertmanager(binary, tmp_path)
    manager.start(
        config(
            [
                Receiver("kourier", f"{base}/prometheus", TOKEN),
                Receiver("storm", f"{base}/capped", TOKEN, matchers=('storm="yes"',)),
                Receiver("wrong-token", f"{base}/prometheus", "not-the-token", matchers=('token="wrong"',)),
                Receiver("per-alert", f"{base}/per-alert", TOKEN, matchers=('per="alert"',)),
            ]
        )
    )
    _alertmanager.append(manager)
    yield manager
    manager.stop()
    _alertmanager.remove(manager)


def roots(world):
    return world.slack.messages(world.channel)


def thread_of(world, root):
    return [m for m in world.slack.thread(world.channel, root.ts)[1:] if m.is_bot]


def texts(world, root):
    return [m.text for m in thread_of(world, root)]


def wait_for(world, condition, what, *, timeout=WAIT):
    try:
        world.slack.wait_until(condition, timeout=timeout)
    except TimeoutError:
        raise AssertionError(
            f"no {what} within {timeout} s; Alertmanager's log ends:\n{_log_tail()}"
        ) from None


_alertmanager: list[Alertmanager] = []


def _log_tail() -> str:
    return (
        "\n".join(line[:300] for line in _alertmanager[-1].log().splitlines()[-12:]) if _alertmanager else ""
    )


def wait_for_note(world, root, text):
    wait_for(world, lambda: text in texts(world, root), f"the note {text!r}")


def test_one_thread_per_group_across_re_sends_with_a_join_a_partial_and_a_full_resolve(
    world, alertmanager, a2a_agent
):
    alertmanager.fire(WEB_1, starts_at=STARTED, summary="web-1 restarts")
    wait_for(world, lambda: len(roots(world)) == 1 and thread_of(world, roots(world)[0]), "the thread")
    [root] = roots(world)
    # group_interval and repeat_interval re-send the group: still one thread, one investigation.
    sent = alertmanager.sent()
    wait_for(world, lambda: alertmanager.sent() >= sent + 2, "two re-sends")
    assert (len(roots(world)), Turn.objects.count()) == (1, 1)

    alertmanager.fire(WEB_2, starts_at=STARTED)
    wait_for_note(world, root, messages.joined_note(["PodCrashLooping namespace=shop pod=web-2"]))
    alertmanager.resolve(WEB_1, starts_at=STARTED)
    wait_for_note(world, root, messages.partly_resolved_note(["PodCrashLooping namespace=shop pod=web-1"], 1))
    alertmanager.resolve(WEB_2, starts_at=STARTED)
    wait_for(world, lambda: Alert.objects.get().state == Alert.State.RESOLVED, "the group resolved")
    wait_for(world, lambda: len(thread_of(world, root)) == 4, "the closing note")

    reply, _joined, _partly, closing = thread_of(world, root)
    assert root.text.startswith(":rotating_light: *FIRING* · *PodCrashLooping* · 1 alert · severity warning")
    assert reply.text == "Looking into it."
    assert closing.text.startswith(":white_check_mark: Resolved at ")
    assert closing.text.endswith(": every alert of the group (2 alerts). Replies still reach the agent.")
    assert (len(roots(world)), Turn.objects.count(), len(a2a_agent.received)) == (1, 1, 1)

    # A fire after the resolve (it starts after the resolve ended it) opens a new thread, linked to
    # the previous one.
    alertmanager.fire(WEB_1, starts_at=datetime.now(UTC) + timedelta(seconds=1))
    wait_for(world, lambda: len(roots(world)) == 2, "a second thread")
    second = roots(world)[1]
    assert f"/archives/{world.channel}/p{root.ts.replace('.', '')}|Previous thread>" in second.text
    wait_for(world, lambda: Turn.objects.count() == 2, "the second thread's turn")


def test_past_the_cap_new_groups_are_held_in_the_storm_thread_with_no_investigation(
    world, alertmanager, a2a_agent
):
    for name in ("DiskFull", "CpuHigh", "MemoryLow"):
        alertmanager.fire({"alertname": name, "storm": "yes"}, starts_at=STARTED)
    wait_for(world, lambda: len(roots(world)) == 2, "a thread and the storm thread")
    storm = next(m for m in roots(world) if m.text.startswith(":cyclone:"))
    wait_for(world, lambda: len(thread_of(world, storm)) == 2, "two groups held back")

    assert storm.text == messages.storm_message("capped", 1)
    held = texts(world, storm)
    assert [text.split(" held back this hour")[0][-1] for text in held] == ["1", "2"]
    assert all(text.startswith(":pause_button: Held back: *") for text in held)
    assert Alert.objects.filter(kind=Alert.Kind.GROUP).count() == 3  # every group is a row
    wait_for(world, lambda: Turn.objects.filter(state=Turn.State.DONE).count() == 1, "the one investigation")
    assert (Turn.objects.count(), len(a2a_agent.received)) == (1, 1)


def test_a_wrong_token_is_refused_and_alertmanager_logs_it_and_retries(world, alertmanager):
    alertmanager.fire({"alertname": "DiskFull", "token": "wrong"}, starts_at=STARTED)
    wait_for(world, lambda: alertmanager.failed() >= 2, "two refused attempts")

    # A 4xx ends the attempt; the group is not marked as notified, so the next flush tries again.
    failures = [line for line in alertmanager.log().splitlines() if 'msg="Notify for alerts failed"' in line]
    assert len(failures) >= 2
    assert all("unexpected status code 401" in line and "invalid token" in line for line in failures)
    assert Alert.objects.count() == 0
    assert roots(world) == []


def test_a_restart_of_the_web_process_between_two_notifications_keeps_one_thread(
    world, alertmanager, a2a_agent
):
    alertmanager.fire(WEB_1, starts_at=STARTED)
    wait_for(world, lambda: len(roots(world)) == 1 and thread_of(world, roots(world)[0]), "the thread")
    [root] = roots(world)
    port = urlparse(world.stack.base_url).port
    world.stack.kill("web", signal.SIGKILL)
    failed = alertmanager.failed()
    alertmanager.fire(WEB_2, starts_at=STARTED)
    wait_for(world, lambda: alertmanager.failed() > failed, "a notification the stopped web process missed")
    world.stack.start_web(port=port)
    wait_for_note(world, root, messages.joined_note(["PodCrashLooping namespace=shop pod=web-2"]))

    assert len(roots(world)) == 1
    assert Turn.objects.count() == 1
    assert len(a2a_agent.received) == 1


def slack_calls(world) -> dict[str, int]:
    """The calls Slack answered ok, by method (a call refused as rate limited is counted apart)."""
    counts: dict[str, int] = {}
    for call in world.slack.calls():
        if call.ok:
            counts[call.method] = counts.get(call.method, 0) + 1
    return counts


def settled(world) -> bool:
    """Every alert post made and every turn ended."""
    return (
        not AlertPost.objects.filter(delivered_at=None).exists()
        and not Turn.objects.filter(state__in=[Turn.State.QUEUED, Turn.State.RUNNING]).exists()
    )


@pytest.mark.timeout(300)  # twenty investigations on a 2-core host
@pytest.mark.parametrize("threads", ["per-group", "per-alert"])
def test_fifty_pods_failing_at_once(world, alertmanager, a2a_agent, threads, capsys):
    """Fifty pods of one deployment crash at once (one rule, one evaluation). Per group: one thread,
    one investigation. Per alert (threadPer: alert): the cap of 20 threads, the other 30 held in the
    storm thread. The figures are in the README, "Start threads from alerts"."""
    world.slack.rate_limits.enabled = True  # a load test: Slack's budgets, as Slack enforces them
    extra = {"per": "alert"} if threads == "per-alert" else {}
    pods = [{**CRASHING, "pod": f"web-{number:02d}", **extra} for number in range(50)]
    alertmanager.fire_all(pods, starts_at=STARTED)
    expected_turns = 1 if threads == "per-group" else 20
    wait_for(world, lambda: AlertMember.objects.count() == 50, "every pod's alert taken")
    done = Turn.objects.filter(state=Turn.State.DONE)
    wait_for(
        world, lambda: done.count() == expected_turns, "the turns", timeout=4 * WAIT
    )  # twenty on 2 cores
    wait_for(world, lambda: settled(world), "every post made")

    calls = slack_calls(world)
    figures = {
        "threads": Alert.objects.filter(storm=None).exclude(kind=Alert.Kind.STORM).count(),
        "storm threads": Alert.objects.filter(kind=Alert.Kind.STORM).count(),
        "held": Alert.objects.exclude(storm=None).count(),
        "agent turns": Turn.objects.count(),
        "Slack calls": sum(calls.values()),
        "Slack writes": sum(n for method, n in calls.items() if method.startswith("chat.")),
        "refused as rate limited": sum(1 for call in world.slack.calls() if call.error == "ratelimited"),
        "channel messages": len(roots(world)),
        "thread messages": sum(len(thread_of(world, root)) for root in roots(world)),
    }
    with capsys.disabled():
        print(f"\nfifty pods, threads {threads}: {figures} {calls}")
    if threads == "per-group":
        assert (figures["threads"], figures["storm threads"], figures["agent turns"]) == (1, 0, 1)
        assert figures["channel messages"] == 1
        [root] = roots(world)
        # Alertmanager may send the first pods before the rest have reached the group: they join.
        assert root.text.startswith(":rotating_light: *FIRING* · *PodCrashLooping* · ")
    else:
        assert (figures["threads"], figures["storm threads"], figures["held"]) == (20, 1, 30)
        assert figures["agent turns"] == 20
        assert figures["channel messages"] == 21  # nothing posted twice, rate limits or not
        assert figures["thread messages"] == 20 + 30
    assert len(a2a_agent.received) == figures["agent turns"]
