"""Slack's budgets through the real processes: replies that find a workspace's stream starts and
updates spent degrade (posted and updated, then posted once when final), and a worker killed while
they wait leaves each thread one whole answer, nothing posted twice, no call Slack refused."""

import signal

import pytest

from sessions.models import Turn
from tests.e2e.helpers import WAIT, replies, wait_for, wait_for_turns_to_end
from tests.fakes.a2a_agent import steps
from tests.fakes.a2a_agent.gates import Gate

pytestmark = pytest.mark.slow

# One stream start per 20 s, and one updated reply (a third of two updates, at least one): the
# first reply streams, the second is posted and updated, the third is posted once when final.
SCARCE = {
    "SESSION_LEASE_SECONDS": "3",
    "RECOVERY_INTERVAL_SECONDS": "1",
    "SLACK_CALL_LIMITS": "chat.startStream=1/20,chat.update=2/20",
}


def test_a_restart_while_replies_wait_for_their_budgets_loses_nothing_and_posts_nothing_twice(
    make_world, a2a_agent
):
    gate = Gate()
    a2a_agent.script([steps.text("Looking. "), steps.wait_for(gate), steps.text("Done.")])
    world = make_world(agent_url=a2a_agent.url, progress="steps", beat=True, env=SCARCE)
    world.slack.rate_limits.enabled = True  # Slack's own limits, as under load

    streamed = world.mention("first")
    world.slack.wait_until(lambda: [m.text for m in replies(world, streamed)] == ["Looking. "], timeout=WAIT)
    assert replies(world, streamed)[0].streaming
    updated = world.mention("second")
    world.slack.wait_until(lambda: [m.text for m in replies(world, updated)] == ["Looking. "], timeout=WAIT)
    assert not replies(world, updated)[0].streaming  # posted: its stream start was spent
    final = world.mention("third")
    world.stack.wait_for_log("worker", '"plan": "final"', timeout=WAIT)
    gate.wait_reached(3, timeout=WAIT)
    assert replies(world, final) == []  # nothing until its answer

    world.stack.kill("worker", signal.SIGKILL)
    world.stack.start_worker(name="worker2")
    gate.open()
    # The last writes wait their turn in these scarce budgets (a 20 s window), not refused.
    wait_for_turns_to_end(world, 3, timeout=120)
    wait_for(
        lambda: all(not m.streaming for ts in (streamed, updated, final) for m in replies(world, ts)), ""
    )

    for ts in (streamed, updated, final):
        [answer] = replies(world, ts)
        assert answer.text == "Looking. Done."
    assert len(a2a_agent.received) == 3  # each task followed again, not sent again
    assert Turn.objects.filter(state=Turn.State.DONE).count() == 3
    calls = world.slack.calls()
    assert [c.method for c in calls if c.error == "ratelimited"] == []
    assert sum(1 for c in calls if c.method == "chat.startStream" and c.ok) == 1
    # The final reply's one post; the updated one's post, rewritten by the next worker, not posted again.
    posts = [c for c in calls if c.method == "chat.postMessage" and c.ok]
    assert sorted(c.args.get("thread_ts") for c in posts) == sorted([updated, final])
