"""Stopping a running turn end to end (issue 33, point 1): a person presses the Stop button on the
Working… reply through the real door (HTTP) or the socket process (Socket Mode), the worker cancels
the agent's task (CancelTask), ends the reply as Stopped and tells the thread who stopped it, in one
line, audited once; someone outside the channel, a second press and a press after the end are each
told why, privately, and change nothing. On a chat thread's stream, Slack's own stop does the same.
With Slack's agent sessions (the Connection's spec.agentSessions), the thread's session is processing
while the turn runs, the stop control Slack shows there stops it instead of a Stop button, and the
session is active again once it ends."""

import pytest

from audit.models import AuditEvent
from bindings.models import Connection
from sessions import stops
from sessions.models import Turn
from simulator import defaults
from tests.e2e.helpers import WAIT, bot_messages
from tests.fakes.a2a_agent.gates import Gate
from tests.fakes.a2a_agent.steps import text, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.shares_stacks]  # tests/support/stack.py: StackPool

OUTSIDER = "U0EVE"  # in the workspace, not in the channel


@pytest.fixture
def slow_agent(a2a_agent):
    """An agent that says it is looking, then works until the gate opens (the test opens it last)."""
    gate = Gate("slow")
    a2a_agent.script([text("Looking at the logs…"), wait_for(gate), text(" Found it.")])
    yield a2a_agent
    gate.open()


def stop_values(message) -> list[str]:
    return [
        element["value"]
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if element.get("action_id") == stops.STOP_ACTION
    ]


def working_reply(world, thread_ts):
    """The turn's reply once it shows its Stop button."""

    def found():
        shown = [message for message in bot_messages(world, thread_ts) if stop_values(message)]
        return shown[0] if shown else None

    world.slack.wait_until(lambda: found() is not None, timeout=WAIT)
    return found()


def told(world, user: str) -> list[str]:
    return [shown.text for shown in world.slack.ephemerals(user, world.channel)]


def stops_and_refuses(world, agent) -> None:
    world.slack.add_user(OUTSIDER, "Eve Outsider")
    world.slack.configure_workspace(streams_enabled=False)  # a posted and updated reply carries Stop
    ts = world.mention("why is the disk full?")
    reply = working_reply(world, ts)
    turn = Turn.objects.get(message_ts=ts)
    assert stop_values(reply) == [str(turn.pk)]

    assert world.slack.press_button(OUTSIDER, world.channel, reply.ts, stops.STOP_ACTION).status == 200
    world.slack.wait_until(lambda: told(world, OUTSIDER) == [stops.ONLY_MEMBERS_STOP], timeout=WAIT)
    assert not AuditEvent.objects.filter(action="turn.stopped").exists()

    assert world.slack.press_button(defaults.GRACE, world.channel, reply.ts, stops.STOP_ACTION).status == 200
    world.slack.wait_until(
        lambda: Turn.objects.get(pk=turn.pk).state in (Turn.State.DONE, Turn.State.FAILED), timeout=WAIT
    )
    turn.refresh_from_db()
    assert (turn.outcome, turn.stopped_by) == (Turn.Outcome.STOPPED, defaults.GRACE)
    assert len(agent.calls("CancelTask")) == 1
    world.slack.wait_until(
        lambda: bot_messages(world, ts)[-1].text == f"Stopped by <@{defaults.GRACE}>.", timeout=WAIT
    )
    ended = next(message for message in bot_messages(world, ts) if message.ts == reply.ts)
    assert stop_values(ended) == []  # the ended reply has no Stop

    # A press after the end (the button as a client that was not refreshed still shows it), and a
    # forged one naming a turn that is not this channel's: each told why, privately; nothing changes.
    late = world.slack.send_block_actions(defaults.ADA, world.channel, reply.ts, [_stop_action(str(turn.pk))])
    forged = world.slack.send_block_actions(defaults.ADA, world.channel, reply.ts, [_stop_action("999999")])
    assert (late.status, forged.status) == (200, 200)
    world.slack.wait_until(
        lambda: sorted(told(world, defaults.ADA)) == sorted([stops.NOTHING_TO_STOP, stops.NOT_A_STOP]),
        timeout=WAIT,
    )
    assert len(agent.calls("CancelTask")) == 1
    events = AuditEvent.objects.filter(action="turn.stopped")
    assert [(event.actor_id, event.details["control"]) for event in events] == [
        (defaults.GRACE, stops.STOP_BUTTON)
    ]


def _stop_action(value: str) -> dict:
    return {
        "type": "button",
        "action_id": stops.STOP_ACTION,
        "block_id": "kourier-stop",
        "value": value,
        "text": {"type": "plain_text", "text": "Stop"},
        "action_ts": "1.1",
    }


def test_a_stop_press_over_http_stops_the_turn_and_bad_presses_are_told_why(make_world, slow_agent):
    stops_and_refuses(make_world(agent_url=slow_agent.url, output="live"), slow_agent)


def test_a_stop_press_over_socket_mode_stops_the_turn_and_bad_presses_are_told_why(
    make_socket_world, slow_agent
):
    stops_and_refuses(make_socket_world(agent_url=slow_agent.url, output="live"), slow_agent)


def test_slacks_own_stop_on_a_streamed_reply_stops_the_turn_as_the_persons(make_world, a2a_agent):
    first, second = Gate("first"), Gate("second")
    a2a_agent.script(
        [text("Looking at the logs…"), wait_for(first), text(" Still looking."), wait_for(second)]
    )
    world = make_world(agent_url=a2a_agent.url, output="live", connection__team_id=defaults.TEAM_ID)
    try:
        ts = world.mention("why is the disk full?")
        first.wait_reached(timeout=WAIT)

        def streaming():
            return [m for m in bot_messages(world, ts) if m.stream_phase == "streaming"]

        world.slack.wait_until(lambda: bool(streaming()), timeout=WAIT)
        world.slack.user_stops_stream(world.channel, streaming()[0].ts)
        first.open()  # the agent writes on; Slack answers the append that the person stopped the stream
        world.slack.wait_until(
            lambda: bot_messages(world, ts)[-1].text == f"Stopped by <@{defaults.ADA}>.", timeout=WAIT
        )
        world.slack.wait_until(lambda: Turn.objects.get(message_ts=ts).outcome != "", timeout=WAIT)
    finally:
        first.open()
        second.open()
    turn = Turn.objects.get(message_ts=ts)
    assert (turn.outcome, turn.stopped_by) == (Turn.Outcome.STOPPED, defaults.ADA)
    assert len(a2a_agent.calls("CancelTask")) == 1
    assert AuditEvent.objects.get(action="turn.stopped").details["control"] == stops.SLACK_STREAM_STOP


def with_agent_sessions(world):
    Connection.objects.filter(pk=world.connection.pk).update(agent_sessions=True)
    return world


def processing_with_its_first_words(world, thread_ts):
    """The turn's reply, once the agent's first words show and the thread's session is processing."""

    def shown():
        replies = [m for m in bot_messages(world, thread_ts) if "Looking at the logs" in m.text]
        processing = world.slack.agent_session_status(world.channel, thread_ts) == "processing"
        return replies[0] if replies and processing else None

    world.slack.wait_until(lambda: shown() is not None, timeout=WAIT)
    return shown()


def ended_as_stopped_by(world, ts: str, user: str) -> None:
    """The thread told who stopped the turn, its session active again, and the turn ended as stopped."""
    world.slack.wait_until(lambda: bot_messages(world, ts)[-1].text == f"Stopped by <@{user}>.", timeout=WAIT)
    world.slack.wait_until(
        lambda: world.slack.agent_session_status(world.channel, ts) == "active", timeout=WAIT
    )
    world.slack.wait_until(lambda: Turn.objects.get(message_ts=ts).outcome != "", timeout=WAIT)
    turn = Turn.objects.get(message_ts=ts)
    assert (turn.outcome, turn.stopped_by) == (Turn.Outcome.STOPPED, user)


def test_slacks_agent_session_stop_stops_the_turn_in_place_of_the_stop_button(make_world, slow_agent):
    world = with_agent_sessions(make_world(agent_url=slow_agent.url, output="live"))
    world.slack.add_user(OUTSIDER, "Eve Outsider")
    world.slack.configure_workspace(streams_enabled=False)  # a posted and updated reply, as Stop's own
    ts = world.mention("why is the disk full?")
    reply = processing_with_its_first_words(world, ts)
    assert stop_values(reply) == []  # Slack shows its own stop: the card carries no second one

    world.slack.user_stops_agent_session(OUTSIDER, world.channel, ts)
    world.slack.wait_until(
        lambda: [m.text for m in world.slack.app_messages_to(OUTSIDER)] == [stops.ONLY_MEMBERS_STOP],
        timeout=WAIT,
    )
    assert not AuditEvent.objects.filter(action="turn.stopped").exists()

    [delivery] = world.slack.user_stops_agent_session(defaults.GRACE, world.channel, ts)
    ended_as_stopped_by(world, ts, defaults.GRACE)
    assert len(slow_agent.calls("CancelTask")) == 1

    # Slack delivers the stop again (its retry after a slow answer): nothing runs, nothing changes.
    assert world.slack.redeliver(delivery).status == 200
    assert world.slack.agent_session_status(world.channel, ts) == "active"
    assert told(world, defaults.GRACE) == []
    assert len(slow_agent.calls("CancelTask")) == 1
    events = AuditEvent.objects.filter(action="turn.stopped")
    assert [(event.actor_id, event.details["control"]) for event in events] == [
        (defaults.GRACE, stops.SLACK_SESSION_STOP)
    ]


def test_slacks_agent_session_stop_over_socket_mode_stops_a_streamed_reply_as_the_pressers(
    make_socket_world, slow_agent
):
    world = with_agent_sessions(make_socket_world(agent_url=slow_agent.url, output="live"))
    ts = world.mention("why is the disk full?")
    processing_with_its_first_words(world, ts)

    world.slack.user_stops_agent_session(defaults.GRACE, world.channel, ts)  # not Ada, who asked

    ended_as_stopped_by(world, ts, defaults.GRACE)
    assert AuditEvent.objects.get(action="turn.stopped").details["control"] == stops.SLACK_SESSION_STOP


def test_a_workspace_without_agent_sessions_keeps_the_stop_button(make_world, slow_agent):
    world = with_agent_sessions(make_world(agent_url=slow_agent.url, output="live"))
    world.slack.configure_workspace(agent_sessions=False)

    stops_and_refuses(world, slow_agent)

    assert world.slack.agent_session_status(world.channel, Turn.objects.get().message_ts) is None
