"""follow_turn against the scripted a2a-sdk agent (tests/fakes/a2a_agent): every way a turn's message
reaches its task's end, or is given up, over real HTTP."""

import asyncio
import uuid
from contextlib import aclosing

import pytest

from kourier.a2a.client import A2AClient, EventStream
from kourier.a2a.dialects import dialect_for
from kourier.a2a.events import TaskEnded, TaskStarted, TextDelta
from kourier.a2a.follow import AgentGarbled, AgentOutOfReach, RequestLost, TaskGone, follow_turn
from kourier.a2a.wire import Message, Role, TaskState, TextPart
from tests.fakes.a2a_agent import Gate
from tests.fakes.a2a_agent.steps import (
    drop_connection,
    garbage,
    http_status,
    input_required,
    jsonrpc_error,
    text,
    tool_call,
    tool_result,
    wait_for,
)

pytestmark = pytest.mark.anyio

SEND = {"1.0": "SendStreamingMessage", "0.3": "message/stream"}
GET = {"1.0": "GetTask", "0.3": "tasks/get"}
SUBSCRIBE = {"1.0": "SubscribeToTask", "0.3": "tasks/resubscribe"}


class SubscriptionWatchingClient(A2AClient):
    """The client, running a test's ``when_answered(task_id)`` once the agent answers a subscription
    (with the task's snapshot: the subscription is live; or with a refusal)."""

    def __init__(self, url, *, when_answered, **options) -> None:
        super().__init__(url, **options)
        self.when_answered = when_answered

    def subscribe(self, task_id: str) -> EventStream:
        stream = super().subscribe(task_id)

        async def events():
            async with stream:
                try:
                    first = await anext(stream)
                finally:
                    await self.when_answered(task_id)
                yield first
                async for event in stream:
                    yield event

        return EventStream(events())


def client_for(agent, *, when_subscribed=None, **options):
    options.setdefault("read_timeout", 10)
    options.setdefault("request_timeout", 30)
    if when_subscribed is None:
        return A2AClient(agent.url, **options)
    return SubscriptionWatchingClient(agent.url, when_answered=when_subscribed, **options)


def opening(gate):
    async def open_gate(task_id):
        gate.open()

    return open_gate


def hello(key="turn-1"):
    return Message(
        str(uuid.uuid5(uuid.NAMESPACE_URL, key)), Role.USER, (TextPart("hello"),), context_id="ctx-1"
    )


async def follow(client, message, events=None, *, task_id=None, resumed=False, **options):
    """Follows the turn to its end, every event into ``events``; what a GaveUp raises propagates."""
    events = [] if events is None else events
    options = {"poll_timeout": 30, "backoff_seconds": 0, "poll_seconds": 0.05, **options}
    turn = follow_turn(
        client, dialect_for("a2a").reader(), message, task_id=task_id, resumed=resumed, **options
    )
    async with aclosing(turn):
        async for event in turn:
            events.append(event)
    return events


def shown_text(events):
    text_ = ""
    for event in events:
        if isinstance(event, TextDelta):
            text_ = event.text if event.replace else text_ + event.text
    return text_


def ends(events):
    return [event for event in events if isinstance(event, TaskEnded)]


@pytest.fixture(params=["1.0", "0.3"])
def agent(request, make_a2a_agent):
    return make_a2a_agent(protocol=request.param)


# -- sending -------------------------------------------------------------------------------------------


async def test_a_sent_message_yields_its_task_first_then_its_events_and_its_end_last(agent):
    agent.script([text("Looking. "), tool_call("c1", "search", {"q": "x"}), tool_result("c1", "search", {})])
    async with client_for(agent) as client:
        events = await follow(client, hello())

    assert isinstance(events[0], TaskStarted)
    assert events[0].task_id == agent.tasks[0].id
    assert shown_text(events) == "Looking. "
    assert ends(events) == [events[-1]]
    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert len(agent.calls(SEND[agent.protocol])) == 1
    assert agent.calls(GET[agent.protocol]) == []


async def test_a_pause_is_the_end_and_the_task_is_left_to_the_caller(a2a_agent):
    a2a_agent.script([input_required("Which environment?")])
    async with client_for(a2a_agent) as client:
        events = await follow(client, hello())

    assert events[-1].state is TaskState.INPUT_REQUIRED
    assert a2a_agent.calls("CancelTask") == []


# -- following the task again ----------------------------------------------------------------------------


async def test_a_dropped_stream_is_followed_again_and_never_sent_again(agent):
    gate = Gate()
    agent.script([text("one, "), drop_connection(), wait_for(gate), text("two")])
    async with client_for(agent, when_subscribed=opening(gate)) as client:
        events = await follow(client, hello())

    assert shown_text(events) == "one, two"
    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert len(agent.received) == 1
    assert len(agent.calls(GET[agent.protocol])) == 1
    assert len(agent.calls(SUBSCRIBE[agent.protocol])) == 1


async def test_a_task_the_agent_will_not_stream_again_is_polled_to_its_end(agent):
    gate = Gate()
    agent.script([text("one, "), drop_connection(), wait_for(gate), text("two")])
    # kagent 0.10: tasks/resubscribe of a task it has but no live run of answers "task not found".
    agent.fail_next_call(jsonrpc_error(-32001, "Task not found"), method=SUBSCRIBE[agent.protocol])
    async with client_for(agent, when_subscribed=opening(gate)) as client:
        events = await follow(client, hello())

    assert shown_text(events) == "one, two"
    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert len(agent.received) == 1
    assert len(agent.calls(SUBSCRIBE[agent.protocol])) == 1
    assert len(agent.calls(GET[agent.protocol])) >= 2  # the look before subscribing, then the polls


async def test_a_task_that_ended_before_its_subscription_is_read_from_its_state(a2a_agent):
    gate = Gate()
    a2a_agent.script([text("one, "), drop_connection(), wait_for(gate), text("two")])
    # A2A 1.0 refuses to subscribe to a task in a terminal state.
    a2a_agent.fail_next_call(jsonrpc_error(-32004, "Task is in terminal state"), method="SubscribeToTask")

    async def let_it_finish(task_id):
        gate.open()
        await asyncio.to_thread(a2a_agent.wait_for_task_state, task_id, "completed")

    async with client_for(a2a_agent, when_subscribed=let_it_finish) as client:
        # No time to poll and no attempt after the one that follows: only the task's state can end it.
        events = await follow(client, hello(), poll_timeout=0, max_attempts=2)

    assert shown_text(events) == "one, two"
    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert len(a2a_agent.calls("GetTask")) == 2
    assert len(a2a_agent.received) == 1


async def test_a_recorded_task_is_followed_without_sending_the_message(a2a_agent):
    a2a_agent.script([text("Done.")])
    async with client_for(a2a_agent) as client:
        first = await follow(client, hello())
        again = await follow(client, hello(), task_id=first[0].task_id, resumed=True)

    assert shown_text(again) == "Done."
    assert again[-1] == TaskEnded(TaskState.COMPLETED)
    assert len(a2a_agent.received) == 1


# -- looking the request up ------------------------------------------------------------------------------


async def test_a_resumed_turn_finds_the_task_its_message_started_and_follows_it(a2a_agent):
    a2a_agent.script([text("Answered once.")])
    async with client_for(a2a_agent) as client:
        first = await follow(client, hello())
        resumed = await follow(client, hello(), resumed=True)

    assert resumed[0] == TaskStarted(first[0].task_id, "ctx-1")
    assert shown_text(resumed) == "Answered once."
    assert resumed[-1] == TaskEnded(TaskState.COMPLETED)
    assert len(a2a_agent.received) == 1
    assert [call.rpc_method for call in a2a_agent.calls()][1:] == ["ListTasks", "GetTask"]


async def test_a_resumed_turn_the_agent_has_no_task_for_is_sent_after_the_look(a2a_agent):
    a2a_agent.script([text("Answered.")])
    async with client_for(a2a_agent) as client:
        events = await follow(client, hello(), resumed=True)

    assert shown_text(events) == "Answered."
    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert [call.rpc_method for call in a2a_agent.calls()] == ["ListTasks", "SendStreamingMessage"]
    assert len(a2a_agent.received) == 1


async def test_a_send_whose_fate_is_unknown_is_looked_up_before_it_is_sent_again(a2a_agent):
    a2a_agent.script([text("Answered.")])
    # A gateway's 502 may come after it passed the request on.
    a2a_agent.fail_next_call(http_status(502), method="SendStreamingMessage")
    async with client_for(a2a_agent) as client:
        events = await follow(client, hello())

    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert [call.rpc_method for call in a2a_agent.calls()] == [
        "SendStreamingMessage",
        "ListTasks",
        "SendStreamingMessage",
    ]
    assert len(a2a_agent.received) == 1


async def test_a_failed_look_is_tried_again_before_anything_is_sent(a2a_agent):
    a2a_agent.script([text("Answered.")])
    a2a_agent.fail_next_call(http_status(503), method="ListTasks")
    async with client_for(a2a_agent) as client:
        events = await follow(client, hello(), resumed=True)

    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert [call.rpc_method for call in a2a_agent.calls()] == [
        "ListTasks",
        "ListTasks",
        "SendStreamingMessage",
    ]


async def test_a_resumed_turn_is_lost_where_the_agent_cannot_be_asked_for_its_message(a2a_agent_v03):
    # A2A 0.3 has no ListTasks: sending again could run the message twice.
    async with client_for(a2a_agent_v03) as client:
        with pytest.raises(RequestLost) as lost:
            await follow(client, hello(), resumed=True)

    assert lost.value.failed_attempts == 0
    assert a2a_agent_v03.calls() == []


async def test_a_send_whose_fate_is_unknown_is_lost_where_the_agent_cannot_be_asked(a2a_agent_v03):
    a2a_agent_v03.fail_next_call(http_status(502), method="message/stream")
    async with client_for(a2a_agent_v03) as client:
        with pytest.raises(RequestLost) as lost:
            await follow(client, hello())

    assert lost.value.failed_attempts == 1
    assert len(a2a_agent_v03.calls("message/stream")) == 1


# -- giving up --------------------------------------------------------------------------------------------


async def test_an_agent_that_stays_unreachable_is_given_up_after_the_bounded_attempts(a2a_agent):
    for _ in range(3):
        a2a_agent.fail_next_call(http_status(503), method="SendStreamingMessage")
    async with client_for(a2a_agent) as client:
        with pytest.raises(AgentOutOfReach):
            await follow(client, hello(), max_attempts=3)

    # A 503 is refused before the agent sees the request: sent again, never looked up.
    assert [call.rpc_method for call in a2a_agent.calls()] == ["SendStreamingMessage"] * 3
    assert a2a_agent.received == []


async def test_a_message_no_attempt_could_deliver_is_given_up_as_unsent():
    async with A2AClient("http://127.0.0.1:9", request_timeout=5) as client:  # nothing listens there
        with pytest.raises(AgentOutOfReach) as out_of_reach:
            await follow(client, hello(), max_attempts=2)

    assert out_of_reach.value.unsent  # a person's answer may be kept and sent again later


async def test_a_message_that_may_have_arrived_is_not_given_up_as_unsent(a2a_agent):
    a2a_agent.fail_next_call(http_status(502), method="SendStreamingMessage")  # after a gateway forwarded it
    for _ in range(2):
        a2a_agent.fail_next_call(http_status(503), method="ListTasks")
    async with client_for(a2a_agent) as client:
        with pytest.raises(AgentOutOfReach) as out_of_reach:
            await follow(client, hello(), max_attempts=3)

    assert not out_of_reach.value.unsent


async def test_an_agent_unreachable_once_is_sent_the_message_again(a2a_agent):
    a2a_agent.script([text("Answered.")])
    a2a_agent.fail_next_call(http_status(503), method="SendStreamingMessage")
    async with client_for(a2a_agent) as client:
        events = await follow(client, hello(), max_attempts=3)

    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert len(a2a_agent.calls("SendStreamingMessage")) == 2
    assert len(a2a_agent.received) == 1


async def test_a_refusal_is_given_up_without_another_attempt(a2a_agent):
    a2a_agent.fail_next_call(http_status(401), method="SendStreamingMessage")
    async with client_for(a2a_agent) as client:
        with pytest.raises(AgentOutOfReach):
            await follow(client, hello())

    assert len(a2a_agent.calls("SendStreamingMessage")) == 1


async def test_a_wedged_task_is_given_up_after_the_bounded_attempts_keeping_what_it_said(a2a_agent):
    gate = Gate()
    a2a_agent.script([text("Half of it. "), wait_for(gate), text("Never shown.")])
    events: list = []
    try:
        async with client_for(a2a_agent, read_timeout=0.3) as client:
            with pytest.raises(AgentOutOfReach):
                await follow(client, hello(), events, max_attempts=3)
    finally:
        gate.open()

    assert shown_text(events) == "Half of it. "
    assert not ends(events)
    assert len(a2a_agent.received) == 1  # the send, then two follows, each read timing out
    assert len(a2a_agent.calls("SubscribeToTask")) == 2


async def test_a_task_the_agent_forgot_is_gone(agent):
    agent.script([text("one"), drop_connection(forget_task=True)])
    events: list = []
    async with client_for(agent) as client:
        with pytest.raises(TaskGone):
            await follow(client, hello(), events)

    assert shown_text(events) == "one"
    assert len(agent.received) == 1
    assert len(agent.calls(GET[agent.protocol])) == 1


async def test_a_recorded_task_the_agent_no_longer_has_is_gone(a2a_agent):
    async with client_for(a2a_agent) as client:
        with pytest.raises(TaskGone):
            await follow(client, hello(), task_id="a-task-from-before-a-restart", resumed=True)

    assert a2a_agent.received == []


async def test_an_agent_that_answers_garbage_is_given_up_at_once(agent):
    agent.script([text("fine so far"), garbage('{"jsonrpc": "2.0", "result": {')])
    events: list = []
    async with client_for(agent) as client:
        with pytest.raises(AgentGarbled):
            await follow(client, hello(), events)

    assert shown_text(events) == "fine so far"
    assert len(agent.calls(SEND[agent.protocol])) == 1
    assert agent.calls(GET[agent.protocol]) == []
