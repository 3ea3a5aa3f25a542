"""Session runners across real worker processes: concurrency, one runner per session, take-over."""

import signal

import pytest

from sessions.models import Session, Turn
from simulator import defaults
from tests.e2e.helpers import WAIT, replies, wait_for, wait_for_reply_count, wait_for_turns_to_end
from tests.fakes.a2a_agent import steps
from tests.fakes.a2a_agent.gates import Gate

pytestmark = pytest.mark.slow

FAST_RECOVERY = {"SESSION_LEASE_SECONDS": "3", "RECOVERY_INTERVAL_SECONDS": "1"}


def test_many_sessions_run_at_once_across_workers(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.script([steps.wait_for(gate), steps.text("done")])
    world = make_world(agent_url=a2a_agent.url, workers=2)
    threads = [world.mention(f"session {n}") for n in range(6)]
    gate.wait_reached(6, timeout=WAIT)  # every session's task is running at the same moment
    gate.open()
    for ts in threads:
        wait_for_reply_count(world, ts, 1)
    wait_for_turns_to_end(world, 6)
    assert [[answer.text for answer in replies(world, ts)] for ts in threads] == [["done"]] * 6


def test_a_session_whose_worker_dies_is_taken_over_and_its_reply_finished_once(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.script([steps.text("Half of it. "), steps.wait_for(gate), steps.text("The rest.")])
    world = make_world(agent_url=a2a_agent.url, beat=True, env=FAST_RECOVERY)
    ts = world.mention("go")
    gate.wait_reached(1, timeout=WAIT)
    world.slack.wait_until(lambda: any(m.text == "Half of it. " for m in replies(world, ts)), timeout=WAIT)
    # The runner has recorded where its reply is (a kill before that record is issue 5's outbox).
    wait_for(lambda: Turn.objects.filter(reply_ts__gt="").exists(), "the reply recorded")
    world.stack.kill("worker", signal.SIGKILL)
    world.stack.start_worker(name="worker2")
    gate.open()
    wait_for_turns_to_end(world, 1)
    assert [m.text for m in replies(world, ts)] == ["Half of it. The rest."]
    assert len(a2a_agent.received) == 1  # the task was followed again, not sent again
    assert not replies(world, ts)[0].streaming


def test_queued_replies_survive_a_worker_killed_between_turns(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.on_message(
        lambda received: (
            [steps.wait_for(gate), steps.text("first")]
            if received.text.endswith("start")
            else [steps.text("second")]
        )
    )
    world = make_world(agent_url=a2a_agent.url, beat=True, env=FAST_RECOVERY)
    ts = world.mention("start")
    gate.wait_reached(1, timeout=WAIT)
    world.says("next", user=defaults.GRACE, thread_ts=ts)
    wait_for(lambda: Turn.objects.count() == 2, "two turns")
    world.stack.kill("worker", signal.SIGKILL)
    world.stack.start_worker(name="worker2")
    gate.open()
    wait_for_turns_to_end(world, 2)
    assert [m.text for m in replies(world, ts)] == ["first", "second"]
    assert [r.text.rsplit(": ", 1)[-1] for r in a2a_agent.received] == ["start", "next"]


def test_sigterm_hands_a_running_turn_over_within_bounded_time(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.script([steps.text("Half of it. "), steps.wait_for(gate), steps.text("The rest.")])
    world = make_world(agent_url=a2a_agent.url, progress="steps", beat=True, env=FAST_RECOVERY)
    ts = world.mention("go")
    gate.wait_reached(1, timeout=WAIT)
    wait_for(lambda: Turn.objects.filter(reply_ts__gt="").exists(), "the reply recorded")
    world.stack.kill("worker", signal.SIGTERM)  # waits at most 30 s for the worker to exit
    assert Session.objects.get().lease_owner == ""  # released, not left to expire
    world.stack.start_worker(name="worker2")
    gate.open()
    wait_for_turns_to_end(world, 1)
    assert [m.text for m in replies(world, ts)] == ["Half of it. The rest."]
    assert not replies(world, ts)[0].streaming
    assert len(a2a_agent.received) == 1
