"""Alert threads end to end: an alert source posts to /triggers/<binding>/<trigger> on the real web
process; the worker posts the alert message, starts the thread and runs its turn against the A2A fake."""

import re
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from alerts.models import Alert, AlertOccurrence, AlertPost
from sessions.identity import SYSTEM_IDENTITY
from sessions.models import Session, Turn
from tests.e2e.helpers import (
    TRIGGER_TOKEN,
    TRIGGER_TOKEN_ENV,
    TRIGGERS,
    am_alert,
    deliver,
    group,
    roots,
    wait_for_thread,
)
from tests.fakes.a2a_agent import steps

pytestmark = pytest.mark.slow

WAIT = 20.0
FAST_RECOVERY = {"SESSION_LEASE_SECONDS": "3", "RECOVERY_INTERVAL_SECONDS": "1"}


@pytest.fixture
def world(make_world, a2a_agent):
    a2a_agent.script([steps.text("Looking into it.")])
    return make_world(agent_url=a2a_agent.url, triggers=TRIGGERS, env={TRIGGER_TOKEN_ENV: TRIGGER_TOKEN})


def wait_for_turns_to_end(world, count):
    world.slack.wait_until(
        lambda: Turn.objects.exclude(state__in=[Turn.State.QUEUED, Turn.State.RUNNING]).count() >= count,
        timeout=WAIT,
    )


def wait_for_posts_confirmed(world):
    world.slack.wait_until(
        lambda: (
            not AlertPost.objects.filter(delivered_at=None).exists()
            and not Alert.objects.filter(session=None).exists()
        ),
        timeout=WAIT,
    )


def nothing_stored():
    return (Alert.objects.count(), AlertOccurrence.objects.count(), Session.objects.count()) == (0, 0, 0)


def test_refusals_answer_why_and_store_nothing(world):
    answers = [
        deliver(world, group(am_alert()), token="wrong").status_code,
        deliver(world, group(am_alert()), token=None).status_code,
        deliver(world, group(am_alert()), binding="nobody").status_code,
        deliver(world, group(am_alert()), trigger="nothing").status_code,
    ]
    malformed = deliver(world, None, raw=b'{"version": "4", "alerts": [{"status": "on fire"}]}')
    not_json = deliver(world, None, raw=b"alerts!")
    wrong_version = deliver(world, {"version": "3", "alerts": []})

    assert answers == [401, 401, 404, 404]
    assert (malformed.status_code, malformed.json()["error"]) == (
        400,
        "alerts[0].labels must be an object of strings (got nothing)",
    )
    assert (not_json.status_code, not_json.json()["error"]) == (400, "the body is not JSON")
    assert (wrong_version.status_code, wrong_version.json()["error"]) == (
        400,
        'version must be "4" (got "3")',
    )
    assert nothing_stored()
    assert world.slack.count("chat.postMessage") == 0


def test_a_new_alert_starts_a_thread_whose_first_turn_carries_it_as_untrusted_data(world, a2a_agent):
    answer = deliver(world, group(am_alert()))
    [reply] = wait_for_thread(world, 1)
    wait_for_turns_to_end(world, 1)

    assert answer.json() == {
        "ok": True, "opened": 1, "held": 0, "joined": 0, "repeated": 0, "resolved": 0, "unchanged": 0,
    }  # fmt: skip
    [root] = roots(world)
    assert root.is_bot
    assert root.text.startswith(
        ":rotating_light: *FIRING* · *DiskFull* · severity critical\nDiskFull on db-1\n"
    )
    assert "`instance=db-1`" in root.text
    assert "<http://prometheus.example/graph?g0.expr=up|Source>" in root.text
    assert reply.text == "Looking into it."
    assert not reply.was_streamed  # an alert thread's reply is posted and updated
    [received] = a2a_agent.received
    assert received.text.startswith("Slack: alert: A new alert fired.")
    assert re.search(
        r"\n<untrusted-data-[0-9a-f]{16}>\nstatus: firing\nname: DiskFull\nseverity: critical\n",
        received.text,
    )
    turn = Turn.objects.get()
    assert (turn.user_id, turn.session.kind, turn.session.thread_ts) == (SYSTEM_IDENTITY, "alert", root.ts)


def test_the_same_occurrence_again_changes_nothing_and_a_new_one_attaches_a_note(world, a2a_agent):
    deliver(world, group(am_alert()))
    wait_for_thread(world, 1)
    again = deliver(world, group(am_alert()))
    later = deliver(world, group(am_alert(starts_at="2024-05-01T10:30:00Z")))
    [reply, note] = wait_for_thread(world, 2)
    wait_for_posts_confirmed(world)

    assert reply.text == "Looking into it."
    assert again.json()["unchanged"] == 1
    assert later.json()["repeated"] == 1
    assert note.text == ":repeat: Fired again: 2 times since 2024-05-01 10:00 UTC."
    assert len(roots(world)) == 1
    assert Turn.objects.count() == 1
    assert len(a2a_agent.received) == 1


def test_a_resolve_closes_the_thread_with_a_note_and_a_reply_after_it_still_reaches_the_agent(
    world, a2a_agent
):
    deliver(world, group(am_alert()))
    [_reply] = wait_for_thread(world, 1)
    resolved = deliver(world, group(am_alert(status="resolved"), status="resolved"))
    [_, closing] = wait_for_thread(world, 2)
    root_ts = roots(world)[0].ts
    world.says("is it really fixed?", thread_ts=root_ts)
    replies = wait_for_thread(world, 3)
    wait_for_turns_to_end(world, 2)

    assert resolved.json()["resolved"] == 1
    assert closing.text == (
        ":white_check_mark: Resolved at 2024-05-01 11:00 UTC, after firing once. Replies still reach the agent."
    )
    assert Alert.objects.get().state == Alert.State.RESOLVED
    assert [m.text for m in replies][-1] == "Looking into it."
    # The reply's turn carries the closing note: the agent sees what happened in the thread.
    said, carried = a2a_agent.received[-1].text.split("\n\n", 1)
    assert said == "Slack: Ada Lovelace (U0ADA): is it really fixed?"
    assert re.search(
        re.escape(f"Slack: alert: {closing.text}\n</untrusted-data-") + r"[0-9a-f]{16}>$", carried
    )
    assert deliver(world, group(am_alert(status="resolved"))).json()["unchanged"] == 1


def test_a_fire_after_the_resolve_starts_a_new_thread_that_links_the_previous_one(world):
    deliver(world, group(am_alert()))
    wait_for_thread(world, 1)
    deliver(world, group(am_alert(status="resolved")))
    wait_for_thread(world, 2)
    deliver(world, group(am_alert(starts_at="2024-05-01T12:00:00Z")))
    world.slack.wait_until(lambda: len(roots(world)) == 2, timeout=WAIT)
    wait_for_thread(world, 1)

    first, second = roots(world)
    domain_link = f"/archives/{world.channel}/p{first.ts.replace('.', '')}|Previous thread>"
    assert domain_link in second.text
    assert Alert.objects.filter(state=Alert.State.FIRING).get().previous.root_ts == first.ts
    assert Session.objects.count() == 2


def test_generic_alerts_repeat_by_delivery_unless_the_idempotency_key_was_seen(world, a2a_agent):
    body = {
        "id": "backup-nightly",
        "status": "firing",
        "title": "Backup failed",
        "text": "exit 2",
        "labels": {"host": "b-1"},
    }
    first = deliver(world, body, trigger="hooks", headers={"Idempotency-Key": "delivery-1"})
    wait_for_thread(world, 1)
    repeated = deliver(world, body, trigger="hooks", headers={"Idempotency-Key": "delivery-1"})
    another = deliver(world, body, trigger="hooks")
    [_, note] = wait_for_thread(world, 2)

    assert (first.json()["opened"], repeated.json()["unchanged"], another.json()["repeated"]) == (1, 1, 1)
    assert roots(world)[0].text.startswith(":rotating_light: *FIRING* · *Backup failed*\nexit 2\n`host=b-1`")
    assert note.text.startswith(":repeat: Fired again: 2 times since ")
    assert len(a2a_agent.received) == 1


def test_a_group_delivered_many_times_at_once_folds_into_one_thread_per_alert(world, a2a_agent):
    body = group(am_alert("DiskFull"), am_alert("CpuHigh"), am_alert("MemoryLow"))
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: deliver(world, body).status_code, range(16)))
    wait_for_turns_to_end(world, 3)
    wait_for_posts_confirmed(world)

    assert answers == [200] * 16
    assert sorted(m.text.split("*")[3] for m in roots(world)) == ["CpuHigh", "DiskFull", "MemoryLow"]
    assert Alert.objects.count() == AlertOccurrence.objects.count() == Session.objects.count() == 3
    assert len(a2a_agent.received) == 3


def test_a_group_delivered_many_times_at_once_folds_into_one_thread_and_one_turn(world, a2a_agent):
    body = group(am_alert("DiskFull", disk="a"), am_alert("DiskFull", disk="b", fingerprint="fp-b"))
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: deliver(world, body, trigger="grouped").status_code, range(16)))
    wait_for_turns_to_end(world, 1)
    wait_for_posts_confirmed(world)

    assert answers == [200] * 16
    [root] = roots(world)
    assert root.text.startswith(":rotating_light: *FIRING* · *DiskFull* · 2 alerts · severity critical")
    assert (Alert.objects.count(), AlertOccurrence.objects.count(), Session.objects.count()) == (1, 2, 1)
    assert len(a2a_agent.received) == 1


def test_a_group_without_its_key_or_with_an_alert_outside_it_is_refused_and_nothing_is_stored(world):
    no_key = deliver(world, {**group(am_alert()), "groupKey": ""}, trigger="grouped")
    outside = deliver(world, group(am_alert("CpuHigh")), trigger="grouped")

    assert (no_key.status_code, no_key.json()["error"]) == (
        400,
        "groupKey is required: alerts are grouped by it (or set threadPer: alert)",
    )
    assert (outside.status_code, outside.json()["error"]) == (
        400,
        'alerts[0].labels.alertname must be the group\'s "DiskFull" (got "CpuHigh")',
    )
    assert nothing_stored()


def test_a_worker_killed_after_the_alert_post_does_not_post_it_again(make_world, a2a_agent):
    a2a_agent.script([steps.text("Looking into it.")])
    world = make_world(
        agent_url=a2a_agent.url,
        triggers=TRIGGERS,
        beat=True,
        env={TRIGGER_TOKEN_ENV: TRIGGER_TOKEN, **FAST_RECOVERY},
    )
    # The alert message is posted, and the worker dies before Slack's answer reaches it.
    world.slack.fail("chat.postMessage", "timeout_after_apply", when=lambda args: not args.get("thread_ts"))
    deliver(world, group(am_alert()))
    world.slack.wait_until(lambda: len(roots(world)) == 1, timeout=WAIT)
    world.stack.kill("worker", signal.SIGKILL)
    world.stack.start_worker(name="worker2")
    [reply] = wait_for_thread(world, 1)
    wait_for_turns_to_end(world, 1)

    assert len(roots(world)) == 1
    assert reply.text == "Looking into it."
    assert Alert.objects.get().root_ts == roots(world)[0].ts
    assert world.slack.count("conversations.history") >= 1  # looked for before it was sent again
