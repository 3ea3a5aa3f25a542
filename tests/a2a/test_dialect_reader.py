"""The turn reader shared by every dialect: text, tool calls and results, task ids, endings."""

import pytest

from kourier.a2a.dialects import a2a
from kourier.a2a.dialects.reader import is_placeholder_response, reports_failure
from kourier.a2a.events import FileReturned, TaskEnded, TaskStarted, TextDelta, ToolCall, ToolResult
from kourier.a2a.wire import (
    Artifact,
    ArtifactUpdate,
    DataPart,
    FilePart,
    Message,
    Role,
    StatusUpdate,
    Task,
    TaskState,
    TextPart,
)
from tests.a2a.transcripts import read

T, C = "task-1", "ctx-1"


def status(state=TaskState.WORKING, *parts, role=Role.AGENT, message_id="m", metadata=None):
    message = Message(message_id, role, parts, metadata=metadata or {}) if parts else None
    return StatusUpdate(T, C, state, message)


def artifact(artifact_id, *parts, append=False, last_chunk=False):
    return ArtifactUpdate(T, C, artifact_id, parts, append=append, last_chunk=last_chunk)


def call(call_id, name="list_pods", args=None, marker="kagent.dev/a2a/part-type"):
    return DataPart({"id": call_id, "name": name, "args": args or {}}, metadata={marker: "function_call"})


def result(call_id, response, name="list_pods", marker="kagent.dev/a2a/part-type"):
    return DataPart(
        {"id": call_id, "name": name, "response": response}, metadata={marker: "function_response"}
    )


def test_generic_agent_streaming_an_artifact():
    events = read(
        a2a.reader(),
        [
            Task(T, C, TaskState.SUBMITTED, history=(Message("u", Role.USER, (TextPart("hi"),)),)),
            status(TaskState.WORKING),
            artifact("answer", TextPart("Hel"), last_chunk=False),
            artifact("answer", TextPart("lo"), append=True),
            artifact("answer", TextPart("!"), append=True, last_chunk=True),
            status(TaskState.COMPLETED),
        ],
    )
    assert events == [
        TaskStarted(T, C),
        TextDelta("Hel"),
        TextDelta("lo"),
        TextDelta("!"),
        TaskEnded(TaskState.COMPLETED),
    ]


def test_status_messages_are_reply_text_and_the_request_echo_is_not():
    events = read(
        a2a.reader(),
        [
            status(TaskState.SUBMITTED, TextPart("please run the tools"), role=Role.USER, message_id="u"),
            status(TaskState.WORKING, TextPart("Looking it up."), message_id="m1"),
            artifact("a", TextPart("It is 5."), last_chunk=True),
            status(TaskState.COMPLETED, TextPart("It is 5."), message_id="m2"),  # restates the artifact
        ],
    )
    assert events == [
        TaskStarted(T, C),
        TextDelta("Looking it up."),
        TextDelta("\n\nIt is 5."),
        TaskEnded(TaskState.COMPLETED, "It is 5."),
    ]


@pytest.mark.parametrize("thought_key", ["kagent_thought", "adk_thought"])
def test_thoughts_are_never_shown(thought_key):
    thought = {thought_key: True}
    events = read(
        a2a.reader(),
        [
            status(
                TaskState.WORKING,
                TextPart("hmm", thought),
                metadata={"kagent_adk_partial": True},
                message_id="p1",
            ),
            status(
                TaskState.WORKING, TextPart("Answer"), metadata={"kagent_adk_partial": True}, message_id="p2"
            ),
            status(TaskState.WORKING, TextPart("hmm", thought), TextPart("Answer"), message_id="full"),
            artifact("a", TextPart("private", thought), TextPart(" more"), last_chunk=True),
            status(TaskState.COMPLETED),
        ],
    )
    assert [event for event in events if isinstance(event, TextDelta)] == [
        TextDelta("Answer"),
        TextDelta("\n\n more"),
    ]


@pytest.mark.parametrize(
    ("state", "text"),
    [(TaskState.FAILED, "boom"), (TaskState.CANCELED, None), (TaskState.REJECTED, "not allowed")],
)
def test_unsuccessful_endings_carry_their_message_outside_the_reply(state, text):
    parts = (TextPart(text),) if text else ()
    events = read(a2a.reader(), [artifact("a", TextPart("partial answer")), status(state, *parts)])
    assert events[-1] == TaskEnded(state, text)
    assert [event for event in events if isinstance(event, TextDelta)] == [TextDelta("partial answer")]


def test_a_direct_message_is_the_whole_answer():
    events = a2a.reader().feed(Message("m", Role.AGENT, (TextPart("Hi there"),)))
    assert events == [TextDelta("Hi there"), TaskEnded(TaskState.COMPLETED)]


def test_nothing_is_read_after_the_end_and_unknown_states_do_not_end_the_turn():
    reader = a2a.reader()
    assert reader.feed(status(TaskState.UNKNOWN, TextPart("still going"))) == [
        TaskStarted(T, C),
        TextDelta("still going"),
    ]
    assert not reader.ended
    reader.feed(status(TaskState.COMPLETED))
    assert reader.ended
    assert reader.feed(artifact("late", TextPart("late"), last_chunk=True)) == []


def test_a_new_task_id_is_reported_again():
    reader = a2a.reader()
    assert reader.feed(status()) == [TaskStarted(T, C)]
    assert reader.feed(status()) == []
    assert reader.feed(StatusUpdate("task-2", C, TaskState.WORKING)) == [TaskStarted("task-2", C)]


# -- tool calls and results ---------------------------------------------------------------------------


@pytest.mark.parametrize("marker", ["adk_type", "kagent_type", "kagent.dev/a2a/part-type"])
def test_tool_calls_and_results_by_every_marker_in_messages_and_artifacts(marker):
    events = read(
        a2a.reader(),
        [
            status(TaskState.WORKING, TextPart("Checking."), call("c1", args={"ns": "prod"}, marker=marker)),
            artifact("r1", result("c1", {"pods": 3}, marker=marker), last_chunk=True),
            artifact("c2", call("c2", "delete_pod", marker=marker), last_chunk=True),
            status(TaskState.WORKING, result("c2", {"error": "forbidden"}, "delete_pod", marker=marker)),
            status(TaskState.COMPLETED),
        ],
    )
    assert events == [
        TaskStarted(T, C),
        TextDelta("Checking."),
        ToolCall("c1", "list_pods", {"ns": "prod"}),
        ToolResult("c1", ok=True, name="list_pods"),
        ToolCall("c2", "delete_pod", {}),
        ToolResult("c2", ok=False, name="delete_pod"),
        TaskEnded(TaskState.COMPLETED),
    ]


def test_each_call_and_result_is_reported_once():
    events = read(
        a2a.reader(),
        [
            status(TaskState.WORKING, call("c1"), message_id="m1"),
            artifact("a", call("c1"), last_chunk=True),  # the same call restated
            status(TaskState.WORKING, result("c1", {"ok": 1}), message_id="m2"),
            status(TaskState.WORKING, result("c1", {"ok": 1}), message_id="m3"),
        ],
    )
    assert [event for event in events if isinstance(event, ToolCall | ToolResult)] == [
        ToolCall("c1", "list_pods", {}),
        ToolResult("c1", ok=True, name="list_pods"),
    ]


def test_parts_that_are_not_tool_events():
    events = read(
        a2a.reader(),
        [
            status(TaskState.WORKING, DataPart({"id": "x", "name": "n", "args": {}})),  # unmarked data
            status(TaskState.WORKING, DataPart({"name": "no_id"}, metadata={"adk_type": "function_call"})),
            status(TaskState.WORKING, call("adk-1", "adk_request_confirmation")),  # the approval mechanism
            status(TaskState.WORKING, call("c9"), metadata={"adk_partial": True}),  # a delta: args may be cut
            status(
                TaskState.WORKING,
                DataPart({"id": "c0", "name": "x"}, metadata={"adk_type": "code_execution_result"}),
            ),
        ],
    )
    assert events == [TaskStarted(T, C)]


@pytest.mark.parametrize(
    "response",
    [
        {"status": "confirmation_requested", "tool": "add_numbers"},
        {"status": "pending", "questions": []},
        {"status": "pending", "waiting_for": "subagent_approval", "subagent": "k8s"},
        {"error": "This tool call requires confirmation, please approve or reject."},
    ],
)
def test_placeholders_written_while_a_call_waits_for_people_are_not_results(response):
    assert is_placeholder_response(response)
    events = read(
        a2a.reader(), [status(TaskState.WORKING, call("c1")), artifact("p", result("c1", response))]
    )
    assert not [event for event in events if isinstance(event, ToolResult)]
    # The real result still counts when it comes.
    later = read(
        a2a.reader(), [artifact("p", result("c1", response)), artifact("r", result("c1", {"sum": 5}))]
    )
    assert [event for event in later if isinstance(event, ToolResult)] == [
        ToolResult("c1", True, "list_pods")
    ]


@pytest.mark.parametrize(
    ("response", "failed"),
    [
        ({"error": "pod not found"}, True),
        ({"error": "This tool call is rejected."}, True),  # ADK's own denial
        ({"content": [{"type": "text", "text": "boom"}], "isError": True}, True),  # MCP
        ({"result": "Tool call was rejected by user."}, True),  # kagent's denial
        ({"result": "Tool call was rejected by user. Reason: frozen"}, True),
        ({"result": "ok"}, False),
        ({"content": [], "isError": False}, False),
        ({"error": None, "result": 1}, False),
        ({"error": ""}, False),
        ({"result": "The build was rejected by user review."}, False),
        ("plain string", False),
        (None, False),
    ],
)
def test_which_results_report_a_failure(response, failed):
    assert reports_failure(response) is failed


def test_a_file_part_of_an_artifact_is_returned_once_even_when_the_task_is_read_again():
    chart = FilePart(raw=b"png", media_type="image/png", filename="chart.png")
    reader = a2a.reader()
    first = reader.feed(artifact("a1", chart, last_chunk=True))
    snapshot = Task(T, C, TaskState.COMPLETED, artifacts=(Artifact("a1", (chart,)),))
    again = reader.feed(snapshot)

    files = [event for event in first + again if isinstance(event, FileReturned)]
    assert [(f.filename, f.media_type, f.raw) for f in files] == [("chart.png", "image/png", b"png")]


def test_a_file_in_the_status_message_and_again_in_the_artifact_is_returned_once():
    chart = FilePart(raw=b"png", media_type="image/png")
    reader = a2a.reader()
    events = reader.feed(status(TaskState.WORKING, chart)) + reader.feed(
        artifact("a1", chart, last_chunk=True)
    )
    assert len([event for event in events if isinstance(event, FileReturned)]) == 1


def test_a_file_part_by_url_without_a_name_or_type_gets_defaults():
    [event] = [
        e
        for e in a2a.reader().feed(artifact("a2", FilePart(url="https://x.example/f"), last_chunk=True))
        if isinstance(e, FileReturned)
    ]
    assert (event.url, event.media_type, event.raw) == (
        "https://x.example/f",
        "application/octet-stream",
        None,
    )
