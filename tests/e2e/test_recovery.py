"""Restarts (issue 5): a worker killed mid-turn, and what the next runner makes of the reply.

Each test kills a real Celery worker process at the step it is about, starts another, and reads the
thread as a person sees it in the Slack fake.
"""

import signal

import pytest

from kourier.progress import NO_RESULT, WORKING
from sessions import notices
from sessions.models import Turn
from tests.e2e.helpers import WAIT, replies, wait_for, wait_for_turns_to_end
from tests.fakes.a2a_agent import steps
from tests.fakes.a2a_agent.gates import Gate
from tests.support.alerts import fire_alert

pytestmark = pytest.mark.slow

FAST_RECOVERY = {"SESSION_LEASE_SECONDS": "3", "RECOVERY_INTERVAL_SECONDS": "1"}

# A call that gets its result, one that never does, and the answer around them.
WITH_CARDS = [
    steps.text("Looking. "),
    steps.tool_call("c1", "search", {"q": "disk"}),
    steps.tool_result("c1", "search", {"hits": 3}),
    steps.tool_call("c2", "fetch", {"url": "https://status.example"}),
]


def kill_the_worker_and_start_another(world) -> None:
    world.stack.kill("worker", signal.SIGKILL)
    world.stack.start_worker(name="worker2")


def the_reply_is_recorded(world) -> None:
    wait_for(lambda: Turn.objects.filter(reply_ts__gt="").exists(), "the reply recorded")


def kill_mid_turn_with_cards(world, thread_ts: str, gate: Gate) -> None:
    """Waits until the reply shows both cards of ``WITH_CARDS`` (the task held at ``gate``) and is
    recorded, then kills its worker and starts another."""
    gate.wait_reached(1, timeout=WAIT)
    world.slack.wait_until(lambda: any(len(m.cards) == 2 for m in replies(world, thread_ts)), timeout=WAIT)
    the_reply_is_recorded(world)
    kill_the_worker_and_start_another(world)


def test_a_taken_over_reply_keeps_its_cards_before_the_whole_answer(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.script([*WITH_CARDS, steps.wait_for(gate), steps.text("Done.")])
    world = make_world(agent_url=a2a_agent.url, progress="steps", beat=True, env=FAST_RECOVERY)
    ts = world.mention("go")
    kill_mid_turn_with_cards(world, ts, gate)
    gate.open()
    wait_for_turns_to_end(world, 1)

    [reply] = replies(world, ts)
    assert reply.text == "Looking. \n\nDone."  # text after a tool call is a new paragraph
    assert [(card.title, card.status) for card in reply.cards] == [
        ('search(q="disk")', "complete"),
        ('fetch(url="https://status.example")', "complete"),
    ]
    assert reply.card("call-c2").output == NO_RESULT
    assert not reply.streaming
    assert not any(card.left_in_progress for card in reply.cards)
    assert len(a2a_agent.received) == 1  # followed again, not sent again


def test_an_alert_threads_reply_is_taken_over_and_updated_with_its_cards(
    make_world, a2a_agent, start_alerts_here
):
    gate = Gate()
    a2a_agent.script([*WITH_CARDS, steps.wait_for(gate), steps.text("Done.")])
    world = make_world(agent_url=a2a_agent.url, progress="steps", beat=True, env=FAST_RECOVERY)
    start_alerts_here(world)
    root = fire_alert(world.binding, "disk alert")
    kill_mid_turn_with_cards(world, root, gate)
    gate.open()
    wait_for_turns_to_end(world, 1)

    [reply] = replies(world, root)
    assert not reply.was_streamed  # an alert thread's reply is posted and updated
    assert reply.text == "Looking. \n\nDone."  # text after a tool call is a new paragraph
    assert [card.status for card in reply.cards] == ["complete", "complete"]
    assert reply.card("call-c2").output == NO_RESULT


def test_a_task_gone_after_a_restart_stops_the_reply_with_its_text_and_no_card_left_open(
    make_world, a2a_agent
):
    gate = Gate()
    a2a_agent.script([*WITH_CARDS, steps.wait_for(gate), steps.drop_connection(forget_task=True)])
    world = make_world(agent_url=a2a_agent.url, progress="steps", beat=True, env=FAST_RECOVERY)
    ts = world.mention("go")
    kill_mid_turn_with_cards(world, ts, gate)
    gate.open()
    wait_for_turns_to_end(world, 1)

    reply, notice = replies(world, ts)
    assert "Looking. " in reply.text
    assert not reply.streaming
    assert not any(card.left_in_progress for card in reply.cards)
    assert notice.text == notices.CONVERSATION_GONE
    assert len(a2a_agent.received) == 1


def test_a_restart_before_the_task_was_recorded_looks_the_request_up_instead_of_sending_it_again(
    make_world, a2a_agent
):
    gate = Gate()
    a2a_agent.script([steps.wait_for(gate), steps.text("Answered once.")])
    world = make_world(agent_url=a2a_agent.url, beat=True, env=FAST_RECOVERY)
    ts = world.mention("go")
    gate.wait_reached(1, timeout=WAIT)
    world.stack.kill("worker", signal.SIGKILL)
    # The runner died between sending the message and recording the task the agent named for it.
    Turn.objects.update(task_id="")
    world.stack.start_worker(name="worker2")
    a2a_agent.wait_for_requests(1, method="ListTasks", timeout=WAIT)
    gate.open()
    wait_for_turns_to_end(world, 1)

    assert [m.text for m in replies(world, ts)] == ["Answered once."]
    assert len(a2a_agent.received) == 1


def test_a_task_that_ended_before_it_could_be_subscribed_to_is_read_from_its_state(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.script(
        [steps.text("Half of it. "), steps.drop_connection(), steps.wait_for(gate), steps.text("The rest.")]
    )
    # The agent refuses the subscription as it does for a task in a terminal state (A2A 1.0: -32004).
    a2a_agent.fail_next_call(
        steps.jsonrpc_error(-32004, "Task is in terminal state"), method="SubscribeToTask"
    )
    world = make_world(agent_url=a2a_agent.url)
    ts = world.mention("go")
    a2a_agent.wait_for_requests(1, method="SubscribeToTask", timeout=WAIT)
    gate.open()
    wait_for_turns_to_end(world, 1)

    assert [m.text for m in replies(world, ts)] == ["Half of it. The rest."]
    assert len(a2a_agent.received) == 1


def test_a_worker_killed_while_slack_started_its_reply_leaves_one_reply(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.script([steps.text("Half of it. "), steps.wait_for(gate), steps.text("The rest.")])
    world = make_world(agent_url=a2a_agent.url, beat=True, env=FAST_RECOVERY)
    # Slack starts the stream and the answer never comes back: the runner is killed while it waits.
    world.slack.fail("chat.startStream", "timeout_after_apply")
    ts = world.mention("go")
    world.slack.wait_until(lambda: world.slack.count("chat.startStream") == 1, timeout=WAIT)
    assert Turn.objects.get().reply_ts == ""  # the reply was intended, never confirmed
    kill_the_worker_and_start_another(world)
    gate.open()
    wait_for_turns_to_end(world, 1)

    [reply] = replies(world, ts)
    assert reply.text == "Half of it. The rest."
    assert not reply.streaming
    assert world.slack.count("chat.startStream") == 1  # found in the thread, not started again
    assert len(a2a_agent.received) == 1


def test_a_worker_killed_while_slack_posted_its_notice_leaves_one_notice(make_world, a2a_agent):
    a2a_agent.script([steps.fail("boom")])
    world = make_world(agent_url=a2a_agent.url, beat=True, env=FAST_RECOVERY)
    world.slack.fail("chat.postMessage", "timeout_after_apply")
    ts = world.mention("go")
    world.slack.wait_until(lambda: world.slack.count("chat.postMessage") == 1, timeout=WAIT)
    kill_the_worker_and_start_another(world)
    wait_for_turns_to_end(world, 1)  # and its notice confirmed: nothing more is coming

    assert [m.text for m in replies(world, ts)] == [notices.TASK_FAILED]


def test_a_wedged_task_is_given_up_and_the_reply_keeps_its_text(make_world, a2a_agent):
    gate = Gate()
    # After its first words the task says nothing more: every read of it times out.
    a2a_agent.script([steps.text("Half of it. "), steps.wait_for(gate), steps.text("Never shown.")])
    world = make_world(agent_url=a2a_agent.url, progress="steps", env={"A2A_READ_TIMEOUT": "1"})
    ts = world.mention("go")
    try:
        # Five reads of the task, each timing out after 1 s, with 1 + 2 + 3 + 4 s between them.
        wait_for_turns_to_end(world, 1, timeout=3 * WAIT)
    finally:
        gate.open()

    assert Turn.objects.get().state == Turn.State.FAILED
    reply, notice = replies(world, ts)
    assert reply.text == "Half of it. "
    assert not reply.streaming
    assert notice.text == notices.AGENT_UNREACHABLE
    assert len(a2a_agent.received) == 1  # followed again each time, never sent again
    assert len(a2a_agent.calls("GetTask")) >= 2


def test_a_taken_over_reply_whose_cards_slack_refuses_is_written_again_without_them(make_world, a2a_agent):
    gate = Gate()
    a2a_agent.script([*WITH_CARDS, steps.wait_for(gate), steps.text("Done.")])
    world = make_world(agent_url=a2a_agent.url, progress="steps", beat=True, env=FAST_RECOVERY)
    ts = world.mention("go")
    kill_mid_turn_with_cards(world, ts, gate)
    # The rewrite's task_card blocks are refused, as on a platform without them.
    world.slack.fail("chat.update", "invalid_blocks", times=None, when=lambda args: "task_card" in str(args))
    gate.open()
    wait_for_turns_to_end(world, 1)

    [reply] = replies(world, ts)
    assert "Done." in reply.text
    assert not reply.streaming
    refused = [c for c in world.slack.calls("chat.update") if c.error == "invalid_blocks"]
    taken = [c for c in world.slack.calls("chat.update") if c.error is None]
    assert refused
    assert taken
    assert "task_card" not in str(taken[-1].args)


def test_a_failure_after_a_restart_leaves_an_alert_threads_reply_as_the_earlier_process_left_it(
    make_world, a2a_agent, start_alerts_here
):
    gate = Gate()
    a2a_agent.script([*WITH_CARDS, steps.wait_for(gate), steps.drop_connection(forget_task=True)])
    world = make_world(agent_url=a2a_agent.url, progress="steps", beat=True, env=FAST_RECOVERY)
    start_alerts_here(world)
    root = fire_alert(world.binding, "disk alert")
    gate.wait_reached(1, timeout=WAIT)
    world.slack.wait_until(lambda: any(len(m.cards) == 2 for m in replies(world, root)), timeout=WAIT)
    the_reply_is_recorded(world)
    world.stack.kill("worker", signal.SIGKILL)
    [left] = replies(world, root)
    updates_before = world.slack.count("chat.update")
    world.stack.start_worker(name="worker2")
    gate.open()  # the task is then gone: following it again fails
    wait_for_turns_to_end(world, 1)

    reply, notice = replies(world, root)
    assert (reply.ts, reply.text, reply.cards) == (left.ts, left.text, left.cards)
    assert reply.card("call-c2").status == "in_progress"  # as the earlier process showed it
    assert world.slack.count("chat.update") == updates_before  # not written again
    assert notice.text == notices.CONVERSATION_GONE


# In the activity modes: a card for the wait, shown before the kill and kept up to date after it. A
# tool takes longer than the throttle window, so that its result's count is written on its own.
SLOW_TOOL = steps.sleep(1.5)
ACTIVITY_SCRIPTS = {
    "activity": (
        [
            steps.tool_call("c1", "search", {"q": "disk"}),
            SLOW_TOOL,
            steps.tool_result("c1", "search", {"hits": 3}),
        ],
        [
            steps.tool_call("c2", "fetch", {"url": "https://status.example"}),
            SLOW_TOOL,
            steps.tool_result("c2", "fetch", {"error": "timeout"}),
        ],
    ),
    "steps-and-activity": (
        [steps.sleep(3.5)],  # a gap: the Working… card
        [steps.tool_call("c1", "search", {"q": "disk"})],  # takes the card over
    ),
}
SHOWN_BEFORE = {"activity": f"{WORKING} 1 step", "steps-and-activity": WORKING}
SHOWN_AFTER = {"activity": f"{WORKING} 2 steps, 1 failed", "steps-and-activity": 'search(q="disk")'}


@pytest.mark.parametrize("progress", ACTIVITY_SCRIPTS.keys())
def test_a_taken_over_reply_in_the_activity_modes_keeps_its_card_up_to_date(make_world, a2a_agent, progress):
    before, after = ACTIVITY_SCRIPTS[progress]
    restarted, answered = Gate(), Gate()
    a2a_agent.script(
        [*before, steps.wait_for(restarted), *after, steps.wait_for(answered), steps.text("Done.")]
    )
    world = make_world(agent_url=a2a_agent.url, progress=progress, beat=True, env=FAST_RECOVERY)
    ts = world.mention("go")
    restarted.wait_reached(1, timeout=WAIT)

    def shows(title: str, *, streaming: bool | None = None) -> bool:
        return any(
            (card.title, card.status) == (title, "in_progress") and streaming in (None, m.streaming)
            for m in replies(world, ts)
            for card in m.cards
        )

    world.slack.wait_until(lambda: shows(SHOWN_BEFORE[progress]), timeout=WAIT)
    the_reply_is_recorded(world)
    kill_the_worker_and_start_another(world)
    if progress == "activity":
        # The task's calls so far have something to show: the next runner rewrites the reply with
        # them at once, and its card keeps what it showed (all of the task's events come together).
        world.slack.wait_until(lambda: shows(SHOWN_BEFORE[progress], streaming=False), timeout=WAIT)
    restarted.open()
    world.slack.wait_until(lambda: shows(SHOWN_AFTER[progress]), timeout=WAIT)  # while the task runs
    answered.open()
    wait_for_turns_to_end(world, 1)

    [reply] = replies(world, ts)
    assert reply.text == "Done."
    assert [card.status for card in reply.cards] == ["complete"]
    assert not reply.streaming
    assert len(a2a_agent.received) == 1  # followed again, not sent again
