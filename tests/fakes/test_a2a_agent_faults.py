"""Faults on the wire: dropped connections, crashes, JSON-RPC errors, garbage, HTTP errors."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.fakes.a2a_agent import Gate
from tests.fakes.a2a_agent.raw_client import RawA2A, result_of, state_of, task_id_of, task_of
from tests.fakes.a2a_agent.steps import (
    drop_connection,
    garbage,
    http_status,
    jsonrpc_error,
    sleep,
    text,
    wait_for,
)


def test_dropped_stream_ends_after_the_events_so_far_and_the_task_runs_on(a2a_agent) -> None:
    gate = Gate()
    a2a_agent.script([text("before"), drop_connection(), wait_for(gate), text("after")])

    with RawA2A(a2a_agent.url, "1.0") as client:
        cut = client.send_streaming("go")
        task_id = task_id_of(cut.results[0])
        while_running = task_of(client.get_task(task_id))
        gate.wait_reached()
        with client.open_stream("subscribe", {"id": task_id}) as (_, frames):
            snapshot = result_of(next(frames))
            gate.open()
            rest = [result_of(frame) for frame in frames]

    assert isinstance(cut.broken, httpx.RemoteProtocolError)
    assert [next(iter(result)) for result in cut.results] == ["task", "statusUpdate", "artifactUpdate"]
    assert while_running["status"]["state"] == "TASK_STATE_WORKING"
    assert snapshot["task"]["artifacts"][0]["parts"] == [{"text": "before"}]
    assert rest[0]["artifactUpdate"]["artifact"]["parts"] == [{"text": "after"}]
    assert state_of(rest[-1]) == "completed"


def test_a_drop_comes_after_every_event_before_it_even_when_many_are_queued(a2a_agent) -> None:
    chunks = [text(f"{number},") for number in range(300)]
    a2a_agent.script([*chunks, drop_connection(), text("after")])

    with RawA2A(a2a_agent.url, "1.0") as client:
        cut = client.send_streaming("go")

    assert cut.broken is not None
    streamed = [result["artifactUpdate"]["artifact"]["parts"][0]["text"] for result in cut.results[2:]]
    assert streamed == [f"{number}," for number in range(300)]


def test_dropped_0_3_stream_can_be_resubscribed(a2a_agent_v03) -> None:
    gate = Gate()
    a2a_agent_v03.script([text("before"), drop_connection(), wait_for(gate), text("after")])

    with RawA2A(a2a_agent_v03.url, "0.3") as client:
        cut = client.send_streaming("go")
        task_id = cut.results[0]["id"]
        gate.wait_reached()
        with client.open_stream("subscribe", {"id": task_id}) as (_, frames):
            snapshot = result_of(next(frames))
            gate.open()
            rest = [result_of(frame) for frame in frames]

    assert cut.broken is not None
    assert [result["kind"] for result in cut.results] == ["task", "status-update", "artifact-update"]
    assert snapshot["status"]["state"] == "working"
    assert rest[-1]["status"]["state"] == "completed"


def test_dropped_blocking_call_leaves_the_outcome_unknown_to_the_client(a2a_agent) -> None:
    a2a_agent.script([text("partial"), drop_connection(), text(" and the rest")])

    with RawA2A(a2a_agent.url, "1.0") as client, pytest.raises(httpx.RemoteProtocolError):
        client.send("go")

    (task,) = a2a_agent.tasks
    finished = a2a_agent.wait_for_task_state(task.id, "completed")
    assert [part["text"] for part in finished.task["artifacts"][0]["parts"]] == ["partial", " and the rest"]


def test_dropping_a_stream_also_cuts_its_resubscriptions(a2a_agent) -> None:
    gate = Gate()
    a2a_agent.script([text("before"), wait_for(gate), text("more"), drop_connection(), text("after")])

    with RawA2A(a2a_agent.url, "1.0") as client:
        with client.open_stream("stream", client.message("go")) as (original, frames):
            task_id = task_id_of(result_of(next(frames)))
            gate.wait_reached()
            with client.open_stream("subscribe", {"id": task_id}) as (resubscribed, resubscribed_frames):
                next(resubscribed_frames)  # the snapshot: now the subscription is live
                gate.open()
                list(resubscribed_frames)
            list(frames)
        final = a2a_agent.wait_for_task_state(task_id, "completed")

    for cut in (original, resubscribed):
        assert cut.broken is not None
        assert cut.results[-1]["artifactUpdate"]["artifact"]["parts"] == [{"text": "more"}]
    assert final.state == "completed"


def test_a_crash_forgets_the_task(a2a_agent) -> None:
    a2a_agent.script([text("before"), drop_connection(forget_task=True)])

    with RawA2A(a2a_agent.url, "1.0") as client:
        cut = client.send_streaming("go")
        task_id = task_id_of(cut.results[0])
        lookup = client.get_task(task_id)
        resubscribe = client.call("SubscribeToTask", {"id": task_id})

    assert cut.broken is not None
    assert lookup["error"]["code"] == -32001
    assert resubscribe["error"]["code"] == -32001
    assert a2a_agent.tasks == []


def test_jsonrpc_error_in_a_script_ends_the_stream_with_an_error_event(a2a_agent) -> None:
    a2a_agent.script([text("before"), jsonrpc_error(-32603, "model overloaded"), text("after")])

    with RawA2A(a2a_agent.url, "1.0") as client:
        stream = client.send_streaming("go")
        task_id = task_id_of(stream.results[0])
        final = a2a_agent.wait_for_task_state(task_id, "completed")

    assert stream.broken is None  # a clean end of stream, after the error event
    assert stream.frames[-1].event == "error"
    assert stream.errors == [{"code": -32603, "message": "model overloaded"}]
    assert [part["text"] for part in final.task["artifacts"][0]["parts"]] == ["before", "after"]


def test_jsonrpc_error_in_a_script_answers_a_blocking_call(a2a_agent) -> None:
    a2a_agent.script([jsonrpc_error(-32000, "busy", data={"retry": True})])

    with RawA2A(a2a_agent.url, "1.0") as client:
        response = client.send("go")

    assert response["error"] == {"code": -32000, "message": "busy", "data": {"retry": True}}


def test_garbage_in_a_script_is_one_malformed_event_in_the_stream(a2a_agent) -> None:
    a2a_agent.script([text("before"), garbage("{not json"), text("after")])

    with RawA2A(a2a_agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    datas = [frame.data for frame in stream.frames]
    assert datas[3] == "{not json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(datas[3])
    assert [json.loads(data)["result"]["artifactUpdate"]["artifact"]["parts"] for data in datas[2:5:2]] == [
        [{"text": "before"}],
        [{"text": "after"}],
    ]
    assert state_of(json.loads(datas[-1])["result"]) == "completed"


def test_next_call_fault_answers_once_without_reaching_the_agent(a2a_agent) -> None:
    a2a_agent.fail_next_call(jsonrpc_error(-32603, "boom"))

    with RawA2A(a2a_agent.url, "1.0") as client:
        failed = client.send("first")
        succeeded = client.send("second")

    assert failed["error"] == {"code": -32603, "message": "boom"}
    assert failed["id"] == a2a_agent.calls()[0].rpc_id
    assert task_of(succeeded)["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [received.text for received in a2a_agent.received] == ["second"]
    assert len(a2a_agent.calls("SendMessage")) == 2  # both were recorded


def test_next_call_fault_can_target_a_method(a2a_agent) -> None:
    a2a_agent.fail_next_call(jsonrpc_error(-32001, "Task not found"), method="GetTask")

    with RawA2A(a2a_agent.url, "1.0") as client:
        task_id = task_of(client.send("go"))["id"]
        first_lookup = client.get_task(task_id)
        second_lookup = client.get_task(task_id)

    assert first_lookup["error"]["code"] == -32001
    assert second_lookup["result"]["id"] == task_id


def test_next_call_garbage(a2a_agent) -> None:
    a2a_agent.fail_next_call(garbage("<html>oops"), method="SendMessage")
    a2a_agent.fail_next_call(garbage('{"jsonrpc": "2.0", "res'), method="SendStreamingMessage")

    with RawA2A(a2a_agent.url, "1.0") as client:
        blocking = client.http.post(client.rpc_url, json=client.envelope("send", client.message("x")))
        stream = client.send_streaming("y")

    assert blocking.text == "<html>oops"
    assert [frame.data for frame in stream.frames] == ['{"jsonrpc": "2.0", "res']
    assert a2a_agent.received == []


def test_next_call_http_status(a2a_agent) -> None:
    a2a_agent.fail_next_call(http_status(503, "upstream unavailable"))

    with RawA2A(a2a_agent.url, "1.0") as client:
        response = client.http.post(client.rpc_url, json=client.envelope("send", client.message("x")))

    assert (response.status_code, response.text) == (503, "upstream unavailable")


def test_next_call_fault_on_the_agent_card(a2a_agent) -> None:
    a2a_agent.fail_next_call(http_status(500), method="agent-card")

    assert httpx.get(a2a_agent.card_url).status_code == 500
    assert httpx.get(a2a_agent.card_url).json() == a2a_agent.card


def test_sleep_is_a_slow_gap(a2a_agent) -> None:
    a2a_agent.script([text("a"), sleep(0.2), text("b")])

    with RawA2A(a2a_agent.url, "1.0") as client:
        started = time.monotonic()
        task = task_of(client.send("go"))

    assert time.monotonic() - started >= 0.2
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
