"""Wire shapes of each text style and tool marker, compared with the captured transcripts'
structure (tests/a2a/data/kagent_*). One script, four dialects."""

from __future__ import annotations

from typing import Any

from tests.fakes.a2a_agent.raw_client import RawA2A, task_of
from tests.fakes.a2a_agent.steps import text, thought, tool_call, tool_result

SCRIPT = [
    text("Hel"),
    text("lo"),
    tool_call("c1", "search", {"q": "x"}),
    tool_result("c1", "search", {"hits": 3}),
    text("Done"),
]
ADK_EXTENSION = {"https://google.github.io/adk-docs/a2a/a2a-extension/": {"adk_agent_executor_v2": True}}
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def call_part(marker: str) -> dict[str, Any]:
    return {"data": {"name": "search", "args": {"q": "x"}, "id": "c1"}, "metadata": {marker: "function_call"}}


def result_part(marker: str) -> dict[str, Any]:
    return {
        "data": {"name": "search", "response": {"hits": 3}, "id": "c1"},
        "metadata": {marker: "function_response"},
    }


class Summary:
    """Compact 1.0 stream results: artifact ids become a1, a2... in order of appearance."""

    def __init__(self) -> None:
        self.artifact_names: dict[str, str] = {}

    def __call__(self, result: dict[str, Any]) -> tuple[Any, ...]:
        if "task" in result:
            return ("task", result["task"]["status"]["state"])
        if "statusUpdate" in result:
            status = result["statusUpdate"]["status"]
            return ("status", status["state"], status.get("message", {}).get("parts"))
        update = result["artifactUpdate"]
        artifact_id = update["artifact"]["artifactId"]
        name = self.artifact_names.setdefault(artifact_id, f"a{len(self.artifact_names) + 1}")
        return (
            "artifact",
            name,
            update["artifact"]["parts"],
            update.get("append", False),
            update.get("lastChunk", False),
        )


def test_artifact_style_chunks_one_artifact_per_turn(make_a2a_agent) -> None:
    agent = make_a2a_agent(text_style="artifact")
    agent.script(SCRIPT)

    with RawA2A(agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    summary = Summary()
    assert [summary(result) for result in stream.results] == [
        ("task", "TASK_STATE_SUBMITTED"),
        ("status", "TASK_STATE_WORKING", None),
        ("artifact", "a1", [{"text": "Hel"}], False, False),
        ("artifact", "a1", [{"text": "lo"}], True, False),
        ("artifact", "a1", [call_part("adk_type")], True, True),  # lastChunk on an append
        ("artifact", "a2", [result_part("adk_type")], False, True),
        ("artifact", "a3", [{"text": "Done"}], False, True),  # a one-chunk turn is first and last
        ("status", "TASK_STATE_COMPLETED", None),
    ]


def test_kagent_1_0_style_replaces_the_turn_with_its_full_last_chunk(make_a2a_agent) -> None:
    agent = make_a2a_agent(text_style="kagent-1.0")
    agent.script(SCRIPT)

    with RawA2A(agent.url, "1.0") as client:
        stream = client.send_streaming("go")
        task = task_of(client.get_task(stream.results[0]["task"]["id"]))

    summary = Summary()
    assert [summary(result) for result in stream.results] == [
        ("task", "TASK_STATE_SUBMITTED"),
        ("status", "TASK_STATE_WORKING", None),
        ("artifact", "a1", [{"text": "Hel"}], False, False),
        ("artifact", "a1", [{"text": "lo"}], True, False),
        (
            "artifact",
            "a1",
            [{"text": "Hello"}, call_part("kagent.dev/a2a/part-type")],
            False,
            True,
        ),  # replace
        ("status", "TASK_STATE_WORKING", None),  # kagent's empty message after every model turn
        ("artifact", "a2", [result_part("kagent.dev/a2a/part-type")], False, True),
        ("artifact", "a3", [{"text": "Done"}], False, False),
        ("artifact", "a3", [{"text": "Done"}], False, True),
        ("status", "TASK_STATE_WORKING", None),
        ("status", "TASK_STATE_COMPLETED", None),
    ]
    first_turn_final = stream.results[4]["artifactUpdate"]
    assert first_turn_final["artifact"]["metadata"] == {"kagent.dev/a2a/usage": USAGE}
    assert first_turn_final["metadata"] == ADK_EXTENSION
    assert stream.results[5]["statusUpdate"]["status"]["message"].keys() == {"messageId", "role", "metadata"}
    assert stream.results[0]["task"]["metadata"]["adk_app_name"] == "scripted_agent"
    assert stream.results[-1]["statusUpdate"]["metadata"]["kagent.dev/a2a/usage"] == USAGE
    # The store applied the replace: the first artifact holds the full turn, not the deltas.
    assert task["artifacts"][0]["parts"] == [{"text": "Hello"}, call_part("kagent.dev/a2a/part-type")]


def test_kagent_0_10_style_streams_partial_status_messages(make_a2a_agent) -> None:
    agent = make_a2a_agent(protocol="0.3", text_style="kagent-0.10")
    agent.script(SCRIPT)

    with RawA2A(agent.url, "0.3") as client:
        stream = client.send_streaming("go")

    results = stream.results
    assert [(r["kind"], r.get("status", {}).get("state"), r.get("final")) for r in results] == [
        ("status-update", "submitted", False),
        ("status-update", "working", False),
        ("status-update", "working", False),  # partial "Hel"
        ("status-update", "working", False),  # partial "lo"
        ("status-update", "working", False),  # the full turn
        ("status-update", "working", False),  # the tool result
        ("status-update", "working", False),  # partial "Done"
        ("status-update", "working", False),  # the full turn
        ("artifact-update", None, None),
        ("status-update", "completed", True),
    ]
    opening = results[0]["status"]["message"]
    assert (opening["role"], opening["parts"]) == ("user", [{"kind": "text", "text": "go"}])
    assert results[1]["metadata"].keys() == {"kagent_app_name", "kagent_user_id", "kagent_session_id"}

    partial, full, tool = (
        results[2]["status"]["message"],
        results[4]["status"]["message"],
        results[5]["status"]["message"],
    )
    assert partial["parts"] == [{"kind": "text", "text": "Hel"}]
    assert partial["metadata"]["kagent_adk_partial"] is True
    assert full["parts"] == [{"kind": "text", "text": "Hello"}, {**call_part("kagent_type"), "kind": "data"}]
    assert full["metadata"]["kagent_adk_partial"] is False
    assert tool["parts"] == [{**result_part("kagent_type"), "kind": "data"}]
    assert tool["metadata"]["kagent_adk_partial"] is None

    closing = results[8]
    assert closing["lastChunk"] is True
    assert closing["artifact"]["parts"] == [{"kind": "text", "text": "Done"}]  # the last non-partial message
    assert results[9]["metadata"]["kagent_usage_metadata"] == USAGE


def test_kagent_go_style_writes_adk_keys_and_no_usage_on_the_closing_status(make_a2a_agent) -> None:
    """kagent 0.10's Go runtime (go/adk/pkg/a2a/executor.go): the 0.10 order, adk_* keys, usage on
    each whole model turn (adk_usage_metadata), none on the closing status."""
    agent = make_a2a_agent(protocol="0.3", text_style="kagent-go")
    agent.script(SCRIPT)

    with RawA2A(agent.url, "0.3") as client:
        stream = client.send_streaming("go")

    results = stream.results
    assert results[1]["metadata"].keys() == {"adk_app_name", "adk_user_id", "adk_session_id"}
    partial, full = results[2]["status"]["message"], results[4]["status"]["message"]
    assert partial["metadata"]["adk_partial"] is True
    assert "adk_partial" not in full["metadata"]
    assert full["metadata"]["adk_usage_metadata"] == USAGE
    assert full["parts"] == [{"kind": "text", "text": "Hello"}, {**call_part("adk_type"), "kind": "data"}]
    assert results[-1]["status"]["state"] == "completed"
    assert "adk_usage_metadata" not in results[-1]["metadata"]
    assert not any(key.startswith("kagent_") for result in results for key in result.get("metadata", {}))


def test_status_style_sends_every_chunk_as_a_working_message(make_a2a_agent) -> None:
    agent = make_a2a_agent(text_style="status")
    agent.script(SCRIPT)

    with RawA2A(agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    summary = Summary()
    assert [summary(result) for result in stream.results] == [
        ("task", "TASK_STATE_SUBMITTED"),
        ("status", "TASK_STATE_WORKING", None),
        ("status", "TASK_STATE_WORKING", [{"text": "Hel"}]),
        ("status", "TASK_STATE_WORKING", [{"text": "lo"}]),
        ("status", "TASK_STATE_WORKING", [call_part("adk_type")]),
        ("status", "TASK_STATE_WORKING", [result_part("adk_type")]),
        ("status", "TASK_STATE_WORKING", [{"text": "Done"}]),
        ("status", "TASK_STATE_COMPLETED", None),
    ]


def test_text_style_can_be_chosen_per_script(a2a_agent) -> None:
    a2a_agent.script([text("hi")], text_style="status")

    with RawA2A(a2a_agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    summary = Summary()
    assert ("status", "TASK_STATE_WORKING", [{"text": "hi"}]) in [summary(r) for r in stream.results]


def test_tool_marker_can_be_chosen_per_call(a2a_agent) -> None:
    a2a_agent.script(
        [
            tool_call("c1", "search", {"q": "x"}, marker="kagent_type"),
            tool_result("c1", "search", {"hits": 3}, marker="kagent.dev/a2a/part-type"),
        ]
    )

    with RawA2A(a2a_agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    parts = [r["artifactUpdate"]["artifact"]["parts"][0] for r in stream.results if "artifactUpdate" in r]
    assert parts == [call_part("kagent_type"), result_part("kagent.dev/a2a/part-type")]


def test_consecutive_tool_results_travel_together(a2a_agent) -> None:
    a2a_agent.script([tool_result("c1", "a", {"ok": True}), tool_result("c2", "b", {"ok": False})])

    with RawA2A(a2a_agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    artifacts = [r["artifactUpdate"] for r in stream.results if "artifactUpdate" in r]
    assert len(artifacts) == 1
    assert [part["data"]["id"] for part in artifacts[0]["artifact"]["parts"]] == ["c1", "c2"]


def test_thoughts_are_text_parts_marked_as_thoughts(make_a2a_agent) -> None:
    agent = make_a2a_agent(text_style="kagent-1.0")
    agent.script([thought("let me think"), text("Answer")])

    with RawA2A(agent.url, "1.0") as client:
        stream = client.send_streaming("go")

    finals = [r["artifactUpdate"] for r in stream.results if r.get("artifactUpdate", {}).get("lastChunk")]
    assert finals[0]["artifact"]["parts"] == [
        {"text": "let me think", "metadata": {"kagent_thought": True}},
        {"text": "Answer"},
    ]
