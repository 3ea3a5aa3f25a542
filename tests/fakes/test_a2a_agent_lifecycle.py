"""Starting and stopping, the record of requests and tasks, gates, and script validation."""

from __future__ import annotations

import logging
import threading

import httpx
import pytest

from tests.fakes.a2a_agent import HITL_EXTENSION, Gate, ScriptedAgent
from tests.fakes.a2a_agent.raw_client import RawA2A, result_of, task_id_of, task_of
from tests.fakes.a2a_agent.steps import complete, input_required, text, wait_for


def test_stop_does_not_hang_on_open_streams_or_stalled_scripts(caplog: pytest.LogCaptureFixture) -> None:
    agent = ScriptedAgent("1.0").start()
    gate = Gate()
    agent.script([text("stalled"), wait_for(gate)])
    with RawA2A(agent.url, "1.0") as client:
        with client.open_stream("stream", client.message("go")) as (stream, frames):
            next(frames)
            gate.wait_reached()

            # stop() gives up on a server that will not close (after its timeouts) and says so in the
            # log: a clean stop is one that closed the stream and the stalled script itself.
            with caplog.at_level(logging.WARNING, logger="tests.fakes.a2a_agent"):
                agent.stop()
            list(frames)

        with pytest.raises(httpx.TransportError):
            client.send("anyone there?")

    complaints = [
        record.getMessage()
        for record in caplog.records
        if record.name.startswith("tests.fakes.a2a_agent") and record.levelno >= logging.WARNING
    ]
    assert complaints == []
    assert stream.broken is not None


def test_agents_run_side_by_side_and_stop_as_context_managers() -> None:
    with ScriptedAgent("1.0") as first, ScriptedAgent("0.3") as second:
        assert first.url != second.url
        assert httpx.get(first.card_url).json()["supportedInterfaces"][0]["protocolVersion"] == "1.0"
        assert httpx.get(second.card_url).json()["protocolVersion"] == "0.3.0"


def test_every_request_is_recorded_in_order_with_its_headers(a2a_agent: ScriptedAgent) -> None:
    headers = {"Authorization": "Bearer t0ken", "A2A-Extensions": f"{HITL_EXTENSION}, urn:other"}
    httpx.get(a2a_agent.card_url)
    with RawA2A(a2a_agent.url, "1.0", headers=headers) as client:
        task_id = task_of(client.send("hello", context_id="ctx-7"))["id"]
        client.get_task(task_id)

    card_fetch, send, get = a2a_agent.requests
    assert (card_fetch.http_method, card_fetch.path, card_fetch.rpc_method) == (
        "GET",
        "/.well-known/agent-card.json",
        None,
    )
    assert [send.rpc_method, get.rpc_method] == ["SendMessage", "GetTask"]
    assert send.params["message"]["contextId"] == "ctx-7"
    assert send.message == {**send.params["message"], "parts": [{"text": "hello"}]}
    assert get.params == {"id": task_id}
    assert send.a2a_version == "1.0"
    assert send.extensions == [HITL_EXTENSION, "urn:other"]
    assert send.authorization == "Bearer t0ken"
    assert [request.seq for request in a2a_agent.requests] == [1, 2, 3]
    assert a2a_agent.calls() == [send, get]


def test_wait_for_requests_blocks_until_they_arrive(a2a_agent: ScriptedAgent) -> None:
    def send_later() -> None:
        with RawA2A(a2a_agent.url, "1.0") as client:
            client.send("one")
            client.send("two")

    sender = threading.Thread(target=send_later)
    sender.start()
    arrived = a2a_agent.wait_for_requests(2, method="SendMessage")
    sender.join()

    assert [request.params["message"]["parts"][0]["text"] for request in arrived] == ["one", "two"]


def test_waiting_too_long_raises(a2a_agent: ScriptedAgent) -> None:
    with pytest.raises(TimeoutError, match="1 request"):
        a2a_agent.wait_for_requests(1, timeout=0.01)
    with pytest.raises(TimeoutError):
        Gate("never reached").wait_reached(timeout=0.01)


def test_task_views_follow_the_store(a2a_agent: ScriptedAgent) -> None:
    a2a_agent.on_message(lambda received: [complete()] if received.is_continuation else [input_required("?")])

    with RawA2A(a2a_agent.url, "1.0") as client:
        paused = task_of(client.send("go", context_id="ctx-view"))
        assert [(view.id, view.context_id, view.state) for view in a2a_agent.tasks] == [
            (paused["id"], "ctx-view", "input-required")
        ]
        client.send("answer", task_id=paused["id"], context_id="ctx-view")

    assert a2a_agent.task(paused["id"]).state == "completed"
    with pytest.raises(KeyError):
        a2a_agent.task("unknown")


def test_one_gate_can_hold_several_tasks(a2a_agent: ScriptedAgent) -> None:
    gate = Gate()
    a2a_agent.script([wait_for(gate), text("released")])

    with (
        RawA2A(a2a_agent.url, "1.0") as client,
        client.open_stream("stream", client.message("a")) as (_, first),
        client.open_stream("stream", client.message("b")) as (_, second),
    ):
        ids = {task_id_of(result_of(next(first))), task_id_of(result_of(next(second)))}
        gate.wait_reached(2)
        assert [view.state for view in a2a_agent.tasks] == ["working", "working"]
        gate.open()
        list(first), list(second)

    assert {a2a_agent.wait_for_task_state(task_id, "completed").state for task_id in ids} == {"completed"}


def test_a_threading_event_works_as_a_gate(a2a_agent: ScriptedAgent) -> None:
    event, after_event = threading.Event(), Gate("after the event")
    a2a_agent.script([wait_for(event), wait_for(after_event)])

    with (
        RawA2A(a2a_agent.url, "1.0") as client,
        client.open_stream("stream", client.message("go")) as (stream, frames),
    ):
        next(frames)
        with pytest.raises(TimeoutError):
            after_event.wait_reached(timeout=0.1)  # held by the unset event
        event.set()
        after_event.wait_reached()
        after_event.open()
        list(frames)

    assert stream.results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_arriving_at_a_gate_means_everything_before_it_is_stored(a2a_agent: ScriptedAgent) -> None:
    gate = Gate()
    a2a_agent.script([text("one"), text("two"), wait_for(gate)])

    with RawA2A(a2a_agent.url, "1.0") as client:
        response = client.call(
            "SendMessage", {**client.message("go"), "configuration": {"returnImmediately": True}}
        )
        gate.wait_reached()
        stored = a2a_agent.task(task_of(response)["id"]).task["artifacts"][0]["parts"]
        gate.open()

    assert stored == [{"text": "one"}, {"text": "two"}]


def test_scripts_are_checked_when_written(a2a_agent: ScriptedAgent) -> None:
    with pytest.raises(ValueError, match="must be the last step"):
        a2a_agent.script([input_required("?"), text("after the pause")])
    with pytest.raises(TypeError, match="not a script step"):
        a2a_agent.script(["just a string"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown text style"):
        a2a_agent.script([text("x")], text_style="fancy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="protocol"):
        ScriptedAgent("2.0")  # type: ignore[arg-type]


def test_an_on_message_error_fails_the_task_and_is_kept_for_the_test(a2a_agent: ScriptedAgent) -> None:
    def broken(received):
        raise RuntimeError("bug in the test script")

    a2a_agent.on_message(broken)

    with RawA2A(a2a_agent.url, "1.0") as client:
        response = client.send("go")

    assert response["error"]["code"] == -32603
    assert a2a_agent.tasks[0].state == "failed"
    assert [str(error) for error in a2a_agent.take_script_errors()] == ["bug in the test script"]
