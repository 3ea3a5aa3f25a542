"""How a task's turn ends: pausing for input (generic questions, kagent's HITL shapes) and carrying
on with the same task, or a terminal state."""

from __future__ import annotations

import pytest

from tests.fakes.a2a_agent import HITL_EXTENSION, ReceivedMessage, in_order, kagent
from tests.fakes.a2a_agent.raw_client import RawA2A, state_of, task_of
from tests.fakes.a2a_agent.steps import (
    Finish,
    Step,
    cancel,
    complete,
    fail,
    input_required,
    reject,
    text,
    tool_result,
)

TOOLS = [
    kagent.PendingTool("call_add_1", "add_numbers", {"a": 2, "b": 3}, approval_id="adk-add"),
    kagent.PendingTool("call_status_1", "check_status", {"service": "payments"}, approval_id="adk-status"),
]
HINT = (
    "Tool 'add_numbers' requires approval before execution.; "
    "Tool 'check_status' requires approval before execution. (add_numbers, check_status)"
)


def test_a_text_question_pauses_and_the_answer_continues_the_same_task(a2a_agent) -> None:
    def ask_then_deploy(received: ReceivedMessage) -> list[Step]:
        if received.is_continuation:
            return [text(f"Deploying {received.text}"), text(".")]
        return [input_required("Which environment?")]

    a2a_agent.on_message(ask_then_deploy)

    with RawA2A(a2a_agent.url, "1.0") as client:
        paused = client.send_streaming("deploy")
        pause = paused.results[-1]["statusUpdate"]
        resumed = client.send_streaming("staging", task_id=pause["taskId"], context_id=pause["contextId"])

    assert state_of(paused.results[-1]) == "input-required"
    assert pause["status"]["message"]["parts"] == [{"text": "Which environment?"}]
    assert "metadata" not in pause["status"]["message"]
    assert "task" not in resumed.results[0]  # a continuation does not announce a new task
    assert {result[next(iter(result))]["taskId"] for result in resumed.results} == {pause["taskId"]}
    assert state_of(resumed.results[-1]) == "completed"
    first, second = a2a_agent.received
    assert (first.task_id, second.task_id) == (None, pause["taskId"])
    assert second.server_task_id == first.server_task_id == pause["taskId"]


def test_in_order_plays_one_script_per_message(a2a_agent) -> None:
    a2a_agent.on_message(in_order([input_required("Sure?")], [text("Done.")]))

    with RawA2A(a2a_agent.url, "1.0") as client:
        task = task_of(client.send("go"))
        finished = task_of(client.send("yes", task_id=task["id"], context_id=task["contextId"]))

    assert (task["status"]["state"], finished["status"]["state"]) == (
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_COMPLETED",
    )


def test_a_message_beyond_in_order_scripts_fails_the_task_and_is_reported(make_a2a_agent) -> None:
    agent = make_a2a_agent()
    agent.on_message(in_order([text("only one")]))

    with RawA2A(agent.url, "1.0") as client:
        client.send("first")
        second = client.send("second")

    assert second["error"]["code"] == -32603
    assert [type(error) for error in agent.take_script_errors()] == [LookupError]  # else teardown fails


def test_received_message_shows_what_the_client_sent(a2a_agent) -> None:
    seen: list[ReceivedMessage] = []

    def remember(received: ReceivedMessage) -> list[Step]:
        seen.append(received)
        return [text("ok")]

    a2a_agent.on_message(remember)
    headers = {"Authorization": "Bearer s3cret", "A2A-Extensions": HITL_EXTENSION}

    with RawA2A(a2a_agent.url, "1.0", headers=headers) as client:
        client.send(
            "hello",
            message_id="m-42",
            context_id="ctx-1",
            data={"decision_type": "approve"},
            metadata={"origin": "slack"},
            extensions=[HITL_EXTENSION],
        )

    (received,) = seen
    assert received.text == "hello"
    assert received.parts == [{"data": {"decision_type": "approve"}}, {"text": "hello"}]
    assert received.data == [{"decision_type": "approve"}]
    assert (received.message_id, received.context_id, received.task_id) == ("m-42", "ctx-1", None)
    assert received.metadata == {"origin": "slack"}
    assert received.extensions == [HITL_EXTENSION]
    assert received.requested_extensions == {HITL_EXTENSION}
    assert received.headers["authorization"] == "Bearer s3cret"


def test_kagent_1_0_approval_pause_with_the_extension_activated(make_a2a_agent) -> None:
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.script([text("I will add the numbers."), *kagent.v1.approval_pause(TOOLS)])

    with RawA2A(agent.url, "1.0", headers={"A2A-Extensions": HITL_EXTENSION}) as client:
        stream = client.send_streaming("please run the tools")

    placeholders = stream.results[-2]["artifactUpdate"]["artifact"]["parts"]
    assert [part["data"]["response"] for part in placeholders] == [
        {"status": "confirmation_requested", "tool": "add_numbers"},
        {"status": "confirmation_requested", "tool": "check_status"},
    ]
    message = stream.results[-1]["statusUpdate"]["status"]["message"]
    assert message["parts"] == [{"text": HINT}]
    assert message["extensions"] == [HITL_EXTENSION]
    assert message["metadata"] == {
        HITL_EXTENSION: {
            "type": "tool_approval_request",
            "hint": HINT,
            "tools": [
                {
                    "id": "adk-add",
                    "call_id": "call_add_1",
                    "name": "add_numbers",
                    "args": {"a": 2.0, "b": 3.0},
                },
                {
                    "id": "adk-status",
                    "call_id": "call_status_1",
                    "name": "check_status",
                    "args": {"service": "payments"},
                },
            ],
        }
    }


def test_kagent_1_0_pause_without_the_extension_is_only_text(make_a2a_agent) -> None:
    agent = make_a2a_agent(text_style="kagent-1.0", extensions=[HITL_EXTENSION])
    agent.script(kagent.v1.approval_pause(TOOLS))

    with RawA2A(agent.url, "1.0") as client:
        task = task_of(client.send("please run the tools"))

    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["parts"] == [{"text": HINT}]
    assert "metadata" not in task["status"]["message"]
    assert "extensions" not in task["status"]["message"]


def test_kagent_1_0_ask_user_pause(make_a2a_agent) -> None:
    agent = make_a2a_agent(text_style="kagent-1.0")
    questions = [
        kagent.Question("Which database should I use?", ["PostgreSQL", "MySQL"]),
        kagent.Question("Anything else?"),
    ]
    agent.script(kagent.v1.ask_user_pause(questions, request_id="adk-ask"))

    with RawA2A(agent.url, "1.0", headers={"A2A-Extensions": HITL_EXTENSION}) as client:
        task = task_of(client.send("ask me"))

    message = task["status"]["message"]
    assert message["parts"] == [{"text": "Which database should I use?; Anything else?"}]
    assert message["metadata"][HITL_EXTENSION] == {
        "type": "ask_user_request",
        "id": "adk-ask",
        "questions": [
            {
                "question": "Which database should I use?",
                "choices": ["PostgreSQL", "MySQL"],
                "multiple": False,
            },
            {"question": "Anything else?", "choices": [], "multiple": False},
        ],
    }
    pending = task["artifacts"][-1]["parts"][0]["data"]
    assert (pending["name"], pending["response"]["status"]) == ("ask_user", "pending")


def test_kagent_0_10_approval_pause_and_batch_decision(make_a2a_agent) -> None:
    agent = make_a2a_agent(protocol="0.3", text_style="kagent-0.10")

    def decide(received: ReceivedMessage):
        if not received.is_continuation:
            return [text("I will add the numbers."), *kagent.v010.approval_pause(TOOLS)]
        decisions = received.data[0]["decisions"]
        return [
            tool_result("call_add_1", "add_numbers", {"sum": 5}),
            tool_result(
                "call_status_1", "check_status", {"result": f"Tool call was {decisions['call_status_1']}ed"}
            ),
            text("Done."),
        ]

    agent.on_message(decide)
    batch = {"decision_type": "batch", "decisions": {"call_add_1": "approve", "call_status_1": "reject"}}

    with RawA2A(agent.url, "0.3") as client:
        paused = client.send_streaming("please run the tools")
        pause = paused.results[-1]
        resumed = client.send_streaming(
            "Batch decision: 1 approved, 1 rejected",
            task_id=pause["taskId"],
            context_id=pause["contextId"],
            data=batch,
        )

    working, final = paused.results[-2], paused.results[-1]
    assert (working["status"]["state"], final["status"]["state"], final["final"]) == (
        "working",
        "input-required",
        True,
    )
    assert working["status"]["message"] == final["status"]["message"]  # same message, same messageId
    confirmation = final["status"]["message"]["parts"][0]
    assert confirmation["kind"] == "data"
    assert confirmation["metadata"] == {"kagent_type": "function_call", "kagent_is_long_running": True}
    assert confirmation["data"]["name"] == "adk_request_confirmation"
    assert confirmation["data"]["id"] == "adk-add"
    assert confirmation["data"]["args"] == {
        "originalFunctionCall": {"id": "call_add_1", "name": "add_numbers", "args": {"a": 2, "b": 3}},
        "toolConfirmation": {
            "hint": "Tool 'add_numbers' requires approval before execution.",
            "confirmed": False,
        },
    }
    assert len(final["status"]["message"]["parts"]) == 2
    assert agent.received[1].data == [batch]
    assert resumed.results[-1]["status"]["state"] == "completed"


@pytest.mark.parametrize(
    ("ending", "state", "parts"),
    [
        (complete(), "TASK_STATE_COMPLETED", None),
        (fail("model crashed"), "TASK_STATE_FAILED", [{"text": "model crashed"}]),
        (reject("not allowed here"), "TASK_STATE_REJECTED", [{"text": "not allowed here"}]),
        (cancel(), "TASK_STATE_CANCELED", None),
    ],
)
def test_explicit_endings(a2a_agent, ending: Finish, state: str, parts: list | None) -> None:
    a2a_agent.script([text("partial answer"), ending])

    with RawA2A(a2a_agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    final = stream.results[-1]["statusUpdate"]["status"]
    assert final["state"] == state
    assert final.get("message", {}).get("parts") == parts
    assert a2a_agent.tasks[0].state == state.removeprefix("TASK_STATE_").lower()


def test_a_0_3_failure_is_a_final_status_update(a2a_agent_v03) -> None:
    a2a_agent_v03.script([fail("model crashed")])

    with RawA2A(a2a_agent_v03.url, "0.3") as client:
        stream = client.send_streaming("go")

    final = stream.results[-1]
    assert (final["status"]["state"], final["final"]) == ("failed", True)
    assert final["status"]["message"]["parts"] == [{"kind": "text", "text": "model crashed"}]
