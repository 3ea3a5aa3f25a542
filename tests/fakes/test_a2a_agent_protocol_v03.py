"""The scripted agent on A2A 0.3 (the SDK's compat layer), checked with raw JSON-RPC."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.a2a_agent import Gate, ScriptedAgent
from tests.fakes.a2a_agent.raw_client import RawA2A, result_of, state_of, task_of
from tests.fakes.a2a_agent.steps import input_required, text, wait_for


@pytest.fixture
def client(a2a_agent_v03: ScriptedAgent) -> Iterator[RawA2A]:
    with RawA2A(a2a_agent_v03.url, "0.3") as raw:
        yield raw


def test_agent_card_has_the_0_3_layout(a2a_agent_v03: ScriptedAgent) -> None:
    card = httpx.get(a2a_agent_v03.card_url).json()

    assert card["protocolVersion"] == "0.3.0"
    assert card["url"] == a2a_agent_v03.rpc_url
    assert card["preferredTransport"] == "JSONRPC"
    assert "supportedInterfaces" not in card


def test_message_send_returns_the_completed_task(client: RawA2A) -> None:
    task = task_of(client.send("hello"))

    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "ok"}]


def test_message_stream_ends_with_a_final_status_update(client: RawA2A) -> None:
    stream = client.send_streaming("hello")

    kinds = [result["kind"] for result in stream.results]
    assert kinds == ["task", "status-update", "artifact-update", "status-update"]
    assert stream.results[-1]["status"]["state"] == "completed"
    assert stream.results[-1]["final"] is True


def test_a_pause_is_a_final_status_update_as_0_3_agents_send_it(
    a2a_agent_v03: ScriptedAgent, client: RawA2A
) -> None:
    a2a_agent_v03.script([input_required("Which one?")])

    stream = client.send_streaming("hello")

    pause = stream.results[-1]
    assert pause["status"]["state"] == "input-required"
    assert pause["final"] is True
    assert pause["status"]["message"]["parts"] == [{"kind": "text", "text": "Which one?"}]


def test_tasks_get_and_tasks_cancel(a2a_agent_v03: ScriptedAgent, client: RawA2A) -> None:
    a2a_agent_v03.script([input_required("Which one?")])
    task_id = task_of(client.send("hello"))["id"]

    assert client.get_task(task_id)["result"]["status"]["state"] == "input-required"
    assert client.cancel_task(task_id)["result"]["status"]["state"] == "canceled"
    assert client.cancel_task(task_id)["error"]["code"] == -32002  # a canceled task is not cancelable


def test_tasks_resubscribe_follows_a_running_task(a2a_agent_v03: ScriptedAgent, client: RawA2A) -> None:
    gate = Gate()
    a2a_agent_v03.script([text("before"), wait_for(gate), text("after")])
    with client.open_stream("stream", client.message("go")) as (_, first_stream):
        task_id = result_of(next(first_stream))["id"]
        gate.wait_reached()

        with client.open_stream("subscribe", {"id": task_id}) as (_, resubscribed):
            snapshot = result_of(next(resubscribed))
            gate.open()
            rest = [result_of(frame) for frame in resubscribed]

    assert snapshot["kind"] == "task"
    assert state_of(snapshot) == "working"
    assert rest[0]["artifact"]["parts"] == [{"kind": "text", "text": "after"}]
    assert rest[-1]["status"]["state"] == "completed"
    assert rest[-1]["final"] is True


def test_1_0_method_names_are_unknown_to_a_0_3_agent(a2a_agent_v03: ScriptedAgent) -> None:
    with RawA2A(a2a_agent_v03.url, "1.0") as client_1_0:
        response = client_1_0.send("hello")

    assert response["error"] == {"code": -32601, "message": "Method not found"}
    assert a2a_agent_v03.received == []


def test_unknown_task_is_task_not_found(client: RawA2A) -> None:
    assert client.get_task("does-not-exist")["error"]["code"] == -32001
    assert client.send("x", task_id="no-such-task")["error"]["code"] == -32001


def test_sending_to_a_terminal_task_is_an_error(client: RawA2A) -> None:
    task = task_of(client.send("hello"))

    response = client.send("again", task_id=task["id"], context_id=task["contextId"])

    # a2a-sdk 1.x says UnsupportedOperation (-32004); kagent 0.10 on a2a-sdk 0.3 said -32602.
    assert response["error"]["code"] == -32004
    assert "terminal state" in response["error"]["message"]


def test_same_message_id_twice_starts_two_tasks(a2a_agent_v03: ScriptedAgent, client: RawA2A) -> None:
    first = task_of(client.send("dup", message_id="m-1", context_id="ctx-dup"))
    second = task_of(client.send("dup", message_id="m-1", context_id="ctx-dup"))

    assert first["id"] != second["id"]
    assert len(a2a_agent_v03.tasks) == 2


def test_legacy_extension_header_activates_extensions(a2a_agent_v03: ScriptedAgent) -> None:
    with RawA2A(a2a_agent_v03.url, "0.3", headers={"X-A2A-Extensions": "urn:example:ext"}) as client:
        client.send("hello")

    assert a2a_agent_v03.received[0].requested_extensions == {"urn:example:ext"}
    assert a2a_agent_v03.requests[-1].extensions == ["urn:example:ext"]
