"""The client and the dialects over real HTTP, against the scripted a2a-sdk agent (tests/fakes/a2a_agent),
in both protocol versions."""

import uuid

import pytest

from kourier.a2a import errors
from kourier.a2a.client import A2AClient
from kourier.a2a.dialects import dialect_for
from kourier.a2a.events import (
    ApprovalRequest,
    Decision,
    Question,
    TaskEnded,
    TaskStarted,
    TextDelta,
    ToolCall,
    ToolResult,
)
from kourier.a2a.wire import Message, Role, Task, TaskState, TextPart
from tests.fakes.a2a_agent import Gate, kagent
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

PROTOCOLS = ["1.0", "0.3"]
SEND_METHOD = {"1.0": "SendStreamingMessage", "0.3": "message/stream"}
SERVICE_IDENTITY = {"Authorization": "Bearer kourier-service"}


def message_id_for(key: str) -> str:
    """A message id a turn key gives, as the sessions app derives one (a uuid5)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, key))


def client_for(agent, **options):
    options.setdefault("headers", SERVICE_IDENTITY)
    options.setdefault("read_timeout", 10)
    options.setdefault("request_timeout", 30)
    return A2AClient(agent.url, **options)


def hello(text_="hello", *, key="turn-1", context_id="ctx-1", task_id=None):
    return Message(message_id_for(key), Role.USER, (TextPart(text_),), context_id=context_id, task_id=task_id)


async def run_turn(client, message, dialect="a2a"):
    reader = dialect_for(dialect).reader()
    events = []
    async with client.send_streaming(message) as stream:
        async for wire_event in stream:
            events.extend(reader.feed(wire_event))
    return events


async def read_into(events, reader, stream):
    async with stream:
        async for wire_event in stream:
            events.extend(reader.feed(wire_event))


def shown_text(events):
    text_ = ""
    for event in events:
        if isinstance(event, TextDelta):
            text_ = event.text if event.replace else text_ + event.text
    return text_


def of_type(events, kind):
    return [event for event in events if isinstance(event, kind)]


@pytest.fixture(params=PROTOCOLS)
def agent(request, make_a2a_agent):
    return make_a2a_agent(protocol=request.param, extensions=["urn:example:ext"])


async def test_a_turn_streams_text_and_tools_and_every_request_carries_our_headers(agent):
    agent.script(
        [
            text("Let me "),
            text("check."),
            tool_call("c1", "list_pods", {"namespace": "prod", "limit": 3}),
            tool_result("c1", "list_pods", {"pods": ["a", "b"]}),
            tool_call("c2", "delete_pod", {"pod": "a"}),
            tool_result("c2", "delete_pod", {"error": "forbidden"}),
            text("Two pods; "),
            text("could not delete one."),
        ]
    )
    async with client_for(agent, extensions=["urn:example:ext"]) as client:
        events = await run_turn(client, hello())
        assert await client.resolved_version() == agent.protocol
        assert (await client.agent_card()).extensions == ("urn:example:ext",)

    assert isinstance(events[0], TaskStarted)
    assert events[0].context_id == "ctx-1"
    assert shown_text(events) == "Let me check.\n\nTwo pods; could not delete one."
    assert of_type(events, ToolCall) == [
        ToolCall("c1", "list_pods", {"namespace": "prod", "limit": 3}),
        ToolCall("c2", "delete_pod", {"pod": "a"}),
    ]
    assert of_type(events, ToolResult) == [
        ToolResult("c1", ok=True, name="list_pods"),
        ToolResult("c2", ok=False, name="delete_pod"),
    ]
    assert events[-1] == TaskEnded(TaskState.COMPLETED)

    [send] = agent.calls(SEND_METHOD[agent.protocol])
    assert send.message["messageId"] == message_id_for("turn-1")
    for request in agent.requests:  # the card fetch included
        assert request.authorization == "Bearer kourier-service"
    for request in agent.calls():
        assert request.a2a_version == agent.protocol
        assert set(request.extensions) == {"urn:example:ext"}  # 0.3: under both header spellings
    assert agent.received[0].requested_extensions == frozenset({"urn:example:ext"})


async def test_get_task_and_looking_up_a_message(agent):
    agent.script([text("done")])
    async with client_for(agent) as client:
        events = await run_turn(client, hello(key="lookup"))
        task = await client.get_task(events[0].task_id)
        if agent.protocol == "1.0":
            found = await client.find_task_for_message("ctx-1", message_id_for("lookup"))
            assert found is not None
            assert found.id == task.id
            assert await client.find_task_for_message("ctx-1", message_id_for("never sent")) is None
        else:
            with pytest.raises(errors.NotSupportedByProtocol):
                await client.find_task_for_message("ctx-1", message_id_for("lookup"))

    assert task.state is TaskState.COMPLETED
    assert task.has_message(message_id_for("lookup"))


async def test_list_tasks_by_context(make_a2a_agent):
    agent = make_a2a_agent(protocol="1.0")
    agent.script([text("ok")])
    async with client_for(agent) as client:
        first = await run_turn(client, hello(key="one", context_id="ctx-list"))
        second = await run_turn(client, hello(key="two", context_id="ctx-list"))
        await run_turn(client, hello(key="three", context_id="ctx-other"))
        tasks = await client.list_tasks("ctx-list")

    assert sorted(task.id for task in tasks) == sorted([first[0].task_id, second[0].task_id])
    assert [task.context_id for task in tasks] == ["ctx-list", "ctx-list"]
    assert agent.calls("ListTasks")[0].params["contextId"] == "ctx-list"


async def test_cancel_a_running_task(agent):
    gate = Gate()
    agent.script([text("Working on it"), wait_for(gate), text("never said")])
    async with client_for(agent) as client:
        reader = dialect_for("a2a").reader()
        events: list = []
        canceled = None
        async with client.send_streaming(hello()) as stream:
            async for wire_event in stream:
                events.extend(reader.feed(wire_event))
                if canceled is None and shown_text(events) == "Working on it":
                    canceled = await client.cancel_task(events[0].task_id)
        gate.open()

    assert canceled.state is TaskState.CANCELED
    assert events[-1] == TaskEnded(TaskState.CANCELED)
    assert "never said" not in shown_text(events)


async def test_cancel_a_finished_task_is_refused(agent):
    agent.script([text("done")])
    async with client_for(agent) as client:
        events = await run_turn(client, hello())
        with pytest.raises(errors.TaskNotCancelable):
            await client.cancel_task(events[0].task_id)


async def test_follow_a_task_again_after_its_stream_dropped(agent):
    gate = Gate()
    agent.script([text("one, "), drop_connection(), wait_for(gate), text("two")])
    async with client_for(agent) as client:
        reader = dialect_for("a2a").reader()
        events: list = []
        with pytest.raises(errors.StreamDropped) as dropped:
            await read_into(events, reader, client.send_streaming(hello()))
        assert dropped.value.task_id == events[0].task_id
        assert dropped.value.outcome_unknown

        # Reconcile as the runner does: where did the task get to, then follow it again.
        snapshot = await client.get_task(dropped.value.task_id)
        assert snapshot.state is TaskState.WORKING
        events.extend(reader.feed(snapshot))
        async with client.subscribe(dropped.value.task_id) as stream:
            async for wire_event in stream:
                gate.open()  # subscribed (the agent answered): let the script go on
                events.extend(reader.feed(wire_event))

    assert shown_text(events) == "one, two"
    assert events[-1] == TaskEnded(TaskState.COMPLETED)
    assert agent.calls({"1.0": "SubscribeToTask", "0.3": "tasks/resubscribe"}[agent.protocol])


async def test_a_task_the_agent_forgot(agent):
    agent.script([text("one"), drop_connection(forget_task=True)])
    async with client_for(agent) as client:
        with pytest.raises(errors.StreamDropped) as dropped:
            await run_turn(client, hello())
        with pytest.raises(errors.TaskNotFound):
            await client.get_task(dropped.value.task_id)


async def test_a_text_question_answered_in_the_same_task(agent):
    agent.on_message(
        lambda received: (
            [text(f"Got: {received.text}")]
            if received.is_continuation
            else [input_required("Which environment?")]
        )
    )
    dialect = dialect_for("a2a")
    async with client_for(agent) as client:
        first = await run_turn(client, hello("deploy"))
        [question] = of_type(first, Question)
        answer = dialect.answer_message(question, [["prod"]], message_id=message_id_for("answer"))
        second = await run_turn(client, answer)

    assert question.questions[0].text == "Which environment?"
    assert first[-1].state is TaskState.INPUT_REQUIRED
    assert agent.received[1].task_id == question.task_id
    assert shown_text(second) == "Got: prod"
    assert second[-1] == TaskEnded(TaskState.COMPLETED)


async def test_a_paused_task_stream_ends_at_the_pause_on_resubscribe(make_a2a_agent):
    agent = make_a2a_agent(protocol="1.0")
    agent.script([input_required("Which environment?")])
    async with client_for(agent, read_timeout=5) as client:
        first = await run_turn(client, hello())
        events = [event async for event in client.subscribe(first[0].task_id)]

    assert len(events) == 1
    assert isinstance(events[0], Task)
    assert events[0].state is TaskState.INPUT_REQUIRED


# -- faults ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (http_status(503), errors.AgentUnreachable),
        (http_status(401), errors.AgentHTTPError),
        (jsonrpc_error(-32001, "Task not found"), errors.TaskNotFound),
        (garbage(), errors.InvalidAgentResponse),
    ],
)
async def test_faults_on_the_wire(agent, fault, expected):
    agent.fail_next_call(fault, method=SEND_METHOD[agent.protocol])
    async with client_for(agent) as client:
        with pytest.raises(expected):
            await run_turn(client, hello())


async def test_garbage_in_the_middle_of_a_stream(agent):
    agent.script([text("fine so far"), garbage('{"jsonrpc": "2.0", "result": {')])
    async with client_for(agent) as client:
        with pytest.raises(errors.InvalidAgentResponse):
            await run_turn(client, hello())


async def test_an_agent_that_goes_quiet(agent):
    gate = Gate()
    agent.script([text("thinking"), wait_for(gate)])
    async with client_for(agent, read_timeout=0.3) as client:
        with pytest.raises(errors.AgentTimeout) as timed_out:
            await run_turn(client, hello())
    gate.open()
    assert timed_out.value.outcome_unknown


async def test_nobody_listening():
    async with A2AClient("http://127.0.0.1:9/", connect_timeout=2) as client:
        with pytest.raises(errors.AgentUnreachable):
            await run_turn(client, hello())


async def test_a_client_pinned_to_0_3_is_refused_by_a_1_0_only_agent(make_a2a_agent):
    # The pin wins over the card: 0.3 method names and A2A-Version: 0.3, which this agent does not serve.
    agent = make_a2a_agent(protocol="1.0")
    async with client_for(agent, protocol_version="0.3") as client:
        with pytest.raises((errors.MethodNotFound, errors.VersionNotSupported)):
            await client.get_task("t")


# -- kagent pauses over real HTTP ---------------------------------------------------------------------------

TOOLS = [
    kagent.PendingTool("call_add_1", "add_numbers", {"a": 2, "b": 3}),
    kagent.PendingTool("call_status_1", "check_status", {"service": "payments"}),
]


async def test_kagent_1_0_approval_round_trip(make_a2a_agent):
    agent = make_a2a_agent(protocol="1.0", text_style="kagent-1.0", extensions=[kagent.HITL_EXTENSION])
    agent.on_message(
        lambda received: (
            [tool_result("call_add_1", "add_numbers", {"sum": 5}), text("Added.")]
            if received.is_continuation
            else [text("I will add."), *kagent.v1.approval_pause(TOOLS)]
        )
    )
    dialect = dialect_for("kagent-v1")
    async with client_for(agent, extensions=dialect.extensions) as client:
        first = await run_turn(client, hello(), dialect="kagent-v1")
        [approval] = of_type(first, ApprovalRequest)
        decisions = {
            approval.tools[0].approval_id: Decision(approved=True),
            approval.tools[1].approval_id: Decision(approved=False, reason="frozen"),
        }
        decision = dialect.decision_message(approval, decisions, message_id=message_id_for("decision"))
        second = await run_turn(client, decision, dialect="kagent-v1")

    assert [(tool.approval_id, tool.call_id) for tool in approval.tools] == [
        (tool.approval_id, tool.call_id) for tool in TOOLS
    ]
    assert of_type(first, ToolResult) == []  # the confirmation_requested placeholders
    assert [call.call_id for call in of_type(first, ToolCall)] == ["call_add_1", "call_status_1"]
    received = agent.received[1]
    assert received.task_id == approval.task_id
    assert received.extensions == [kagent.HITL_EXTENSION]
    assert received.metadata[kagent.HITL_EXTENSION] == {
        "type": "tool_approval_response",
        "approvals": [
            {"id": TOOLS[0].approval_id, "approved": True},
            {"id": TOOLS[1].approval_id, "approved": False, "rejection_reason": "frozen"},
        ],
    }
    assert shown_text(second) == "Added."
    assert second[-1] == TaskEnded(TaskState.COMPLETED)


async def test_kagent_0_10_question_round_trip(make_a2a_agent):
    agent = make_a2a_agent(protocol="0.3", text_style="kagent-0.10")
    questions = [
        kagent.Question("Which database?", ["PostgreSQL", "MySQL"]),
        kagent.Question("Anything else?"),
    ]
    agent.on_message(
        lambda received: (
            [text("Thanks.")]
            if received.is_continuation
            else [text("A few questions."), *kagent.v010.ask_user_pause(questions)]
        )
    )
    dialect = dialect_for("kagent-v1")
    async with client_for(agent, extensions=dialect.extensions) as client:
        first = await run_turn(client, hello(), dialect="kagent-v1")
        [question] = of_type(first, Question)
        answer = dialect.answer_message(
            question, [["PostgreSQL"], ["backups"]], message_id=message_id_for("answer")
        )
        second = await run_turn(client, answer, dialect="kagent-v1")

    assert [asked.text for asked in question.questions] == ["Which database?", "Anything else?"]
    assert question.questions[0].choices == ("PostgreSQL", "MySQL")
    assert shown_text(first) == "A few questions."
    assert agent.received[1].data == [
        {
            "decision_type": "approve",
            "ask_user_answers": [{"answer": ["PostgreSQL"]}, {"answer": ["backups"]}],
        }
    ]
    assert shown_text(second) == "Thanks."


async def test_kagent_1_0_without_the_opt_in_pauses_unusably(make_a2a_agent):
    agent = make_a2a_agent(protocol="1.0", text_style="kagent-1.0", extensions=[kagent.HITL_EXTENSION])
    agent.script(kagent.v1.approval_pause(TOOLS))
    async with client_for(agent) as client:  # no extensions requested
        events = await run_turn(client, hello(), dialect="kagent-v1")
    assert events[-2].reason == "unstructured-pause"
