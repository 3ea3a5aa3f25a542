"""The scripted agent on A2A 1.0, checked with raw JSON-RPC: every method, and the SDK behaviour
docs/kagent-dialect.md §4 records (version header, error codes, no messageId de-duplication)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.a2a_agent import Gate, ScriptedAgent
from tests.fakes.a2a_agent.raw_client import RawA2A, result_of, state_of, task_id_of, task_of
from tests.fakes.a2a_agent.steps import input_required, text, wait_for


@pytest.fixture
def client(a2a_agent: ScriptedAgent) -> Iterator[RawA2A]:
    with RawA2A(a2a_agent.url, "1.0") as raw:
        yield raw


def test_agent_card_announces_a_1_0_jsonrpc_interface(a2a_agent: ScriptedAgent) -> None:
    card = httpx.get(a2a_agent.card_url).json()

    assert card["supportedInterfaces"] == [
        {"url": a2a_agent.rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert "protocolVersion" not in card  # the 0.3 layout is absent
    assert card["capabilities"]["streaming"] is True
    assert card == a2a_agent.card


def test_card_lists_the_extensions_it_was_given(make_a2a_agent) -> None:
    agent = make_a2a_agent(extensions=["https://kagent.dev/extensions/hitl/v1"])

    card = httpx.get(agent.card_url).json()

    assert card["capabilities"]["extensions"] == [{"uri": "https://kagent.dev/extensions/hitl/v1"}]


def test_send_message_returns_the_completed_task_with_the_default_answer(client: RawA2A) -> None:
    response = client.send("hello")

    task = task_of(response)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "ok"}]
    assert task["history"][0]["parts"] == [{"text": "hello"}]


def test_send_streaming_message_streams_task_then_updates(client: RawA2A) -> None:
    stream = client.send_streaming("hello")

    assert stream.content_type.startswith("text/event-stream")
    assert stream.broken is None
    kinds = [next(iter(result)) for result in stream.results]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert [state_of(stream.results[i]) for i in (0, 1, 3)] == ["submitted", "working", "completed"]


def test_get_task_returns_the_stored_task(client: RawA2A) -> None:
    task_id = task_of(client.send("hello"))["id"]

    response = client.get_task(task_id, historyLength=10)

    assert response["result"]["id"] == task_id
    assert response["result"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_list_tasks_filters_by_context(client: RawA2A) -> None:
    first = task_of(client.send("one", context_id="ctx-list"))
    client.send("elsewhere", context_id="ctx-other")
    second = task_of(client.send("two", context_id="ctx-list"))

    response = client.call("ListTasks", {"contextId": "ctx-list"})

    assert {task["id"] for task in response["result"]["tasks"]} == {first["id"], second["id"]}


def test_cancel_task_cancels_a_task_waiting_for_input(a2a_agent: ScriptedAgent, client: RawA2A) -> None:
    a2a_agent.script([input_required("Which one?")])
    task_id = task_of(client.send("hello"))["id"]

    response = client.cancel_task(task_id)

    assert response["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert a2a_agent.task(task_id).state == "canceled"


def test_cancel_task_stops_a_running_script(a2a_agent: ScriptedAgent, client: RawA2A) -> None:
    gate = Gate()
    a2a_agent.script([text("working on it"), wait_for(gate), text("never sent")])
    with client.open_stream("stream", client.message("go")) as (stream, frames):
        task_id = task_id_of(result_of(next(frames)))
        gate.wait_reached()

        cancelled = client.cancel_task(task_id)
        list(frames)

    assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert state_of(stream.results[-1]) == "canceled"
    streamed = "".join(frame.data for frame in stream.frames)
    assert "working on it" in streamed
    assert "never sent" not in streamed


def test_subscribe_to_task_replays_the_snapshot_and_follows_the_rest(
    a2a_agent: ScriptedAgent, client: RawA2A
) -> None:
    gate = Gate()
    a2a_agent.script([text("before"), wait_for(gate), text("after")])
    response = client.call(
        "SendMessage", {**client.message("go"), "configuration": {"returnImmediately": True}}
    )
    task_id = task_of(response)["id"]
    gate.wait_reached()

    with client.open_stream("SubscribeToTask", {"id": task_id}) as (_, frames):
        snapshot = result_of(next(frames))
        gate.open()
        rest = [result_of(frame) for frame in frames]

    assert state_of(snapshot) == "working"
    assert snapshot["task"]["artifacts"][0]["parts"] == [{"text": "before"}]
    assert rest[0]["artifactUpdate"]["artifact"]["parts"] == [{"text": "after"}]
    assert state_of(rest[-1]) == "completed"


def test_missing_version_header_is_version_not_supported(a2a_agent: ScriptedAgent) -> None:
    with RawA2A(a2a_agent.url, "1.0", send_version=False) as unversioned:
        response = unversioned.send("hello")

    assert response["error"]["code"] == -32009
    assert response["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    assert a2a_agent.received == []  # refused before any task existed


def test_legacy_method_names_are_unknown(client: RawA2A) -> None:
    response = client.call("message/send", client.message("hello"))

    assert response["error"] == {"code": -32601, "message": "Method not found"}


def test_unknown_task_is_task_not_found(client: RawA2A) -> None:
    assert client.get_task("does-not-exist")["error"]["code"] == -32001
    assert client.send("x", task_id="no-such-task")["error"]["code"] == -32001
    assert client.call("SubscribeToTask", {"id": "does-not-exist"})["error"]["code"] == -32001


def test_sending_to_a_terminal_task_is_unsupported_operation(client: RawA2A) -> None:
    task = task_of(client.send("hello"))

    response = client.send("again", task_id=task["id"], context_id=task["contextId"])

    assert response["error"]["code"] == -32004
    assert "terminal state" in response["error"]["message"]


def test_subscribing_to_a_terminal_task_is_unsupported_operation(client: RawA2A) -> None:
    task_id = task_of(client.send("hello"))["id"]

    stream = client.stream("SubscribeToTask", {"id": task_id})

    assert stream.frames == []
    assert stream.errors[0]["code"] == -32004


def test_task_id_with_another_context_is_invalid_params(a2a_agent: ScriptedAgent, client: RawA2A) -> None:
    a2a_agent.script([input_required("Which one?")])
    task_id = task_of(client.send("hello", context_id="ctx-a"))["id"]

    response = client.send("x", task_id=task_id, context_id="ctx-b")

    assert response["error"]["code"] == -32602


def test_same_message_id_twice_starts_two_tasks(a2a_agent: ScriptedAgent, client: RawA2A) -> None:
    first = task_of(client.send("hello dup", message_id="m-1", context_id="ctx-dup"))
    second = task_of(client.send("hello dup", message_id="m-1", context_id="ctx-dup"))

    assert first["id"] != second["id"]
    assert [view.state for view in a2a_agent.tasks] == ["completed", "completed"]
    assert [received.message_id for received in a2a_agent.received] == ["m-1", "m-1"]
