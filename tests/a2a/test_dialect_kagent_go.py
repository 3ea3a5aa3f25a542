"""The kagent-v1 dialect on kagent 0.10's Go runtime: its golden transcripts (tests/a2a/data/kagent_go,
written from kagent's Go source, cited there) read as the Python runtime's do, and the answers the
dialect builds are what the Go runtime's decision reader takes (go/adk/pkg/a2a/hitl.go)."""

import json

from kourier.a2a import codec_v03
from kourier.a2a.dialects import kagent
from kourier.a2a.events import (
    AnswerFormat,
    ApprovalRequest,
    AskedQuestion,
    Decision,
    Question,
    TaskEnded,
    TaskStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolToApprove,
)
from kourier.a2a.wire import TaskState
from tests.a2a.transcripts import GO, exchanges, read, wire_events

CONTEXT = "5a0f6c1e-3b7d-4e62-9a51-0c2d7e8f9a10"
TASK = "go-task-7c3e9b21"


def turn(name, index):
    exchange = exchanges(GO, name)[index]
    return exchange, read(kagent.reader(), wire_events(GO, exchange))


def shown_text(events):
    text = ""
    for event in events:
        if isinstance(event, TextDelta):
            text = event.text if event.replace else text + event.text
    return text


def of_type(events, kind):
    return [event for event in events if isinstance(event, kind)]


def sent_data_part(message):
    """The decision data part as it goes over the wire (what hitl.go's extractors read)."""
    [data] = [
        part["data"] for part in codec_v03.CODEC.encode_message(message)["parts"] if part["kind"] == "data"
    ]
    return data


def test_a_two_tool_pause_reads_as_one_approval_request_on_the_original_call_ids():
    _, events = turn("01_two_tools_approve_one_deny_one", 0)

    assert events == [
        TaskStarted(TASK, CONTEXT),
        *of_type(events, TextDelta),
        ToolCall("call_add_1", "add_numbers", {"a": 2, "b": 3}),
        ToolCall("call_status_1", "check_status", {"service": "payments"}),
        ApprovalRequest(
            tools=(
                ToolToApprove("call_add_1", "call_add_1", "add_numbers", {"a": 2, "b": 3}),
                ToolToApprove("call_status_1", "call_status_1", "check_status", {"service": "payments"}),
            ),
            task_id=TASK,
            context_id=CONTEXT,
            answer_format=AnswerFormat.ADK_CONFIRMATION,
        ),
        TaskEnded(TaskState.INPUT_REQUIRED),
    ]
    # The approval callback's placeholders (approval.go) are not results.
    assert shown_text(events) == "I will add the numbers and check the payments service."


def test_the_decision_is_a_batch_keyed_by_the_original_call_ids_as_the_go_runtime_reads_it():
    _, events = turn("01_two_tools_approve_one_deny_one", 0)
    [request] = of_type(events, ApprovalRequest)

    message = kagent.decision_message(
        request,
        {"call_add_1": Decision(True), "call_status_1": Decision(False, "Status checks are frozen today")},
        message_id="m-1",
    )

    written = exchanges(GO, "01_two_tools_approve_one_deny_one")[1].request["params"]["message"]
    assert sent_data_part(message) == written["parts"][0]["data"]
    assert (message.task_id, message.context_id) == (TASK, CONTEXT)


def test_after_the_decision_the_results_and_the_answer_read_once():
    _, events = turn("01_two_tools_approve_one_deny_one", 1)

    assert of_type(events, ToolResult) == [
        ToolResult("call_add_1", ok=True, name="add_numbers"),
        ToolResult("call_status_1", ok=False, name="check_status"),  # approval.go's denial
    ]
    assert shown_text(events) == "Added the numbers; the status check was denied."
    assert not any(event.replace for event in of_type(events, TextDelta))
    assert events[-1] == TaskEnded(TaskState.COMPLETED)


def test_ask_user_reads_as_three_questions_and_the_answers_go_back_as_ask_user_answers():
    _, events = turn("03_ask_user", 0)
    [question] = of_type(events, Question)

    assert question == Question(
        questions=(
            AskedQuestion("Which database should I use?", ("PostgreSQL", "MySQL", "SQLite"), multiple=False),
            AskedQuestion("Which features do you want?", ("Auth", "Caching", "Audit logging"), multiple=True),
            AskedQuestion("Any additional requirements?", (), multiple=False),
        ),
        task_id=TASK,
        context_id=CONTEXT,
        answer_format=AnswerFormat.ADK_CONFIRMATION,
    )
    assert of_type(events, ToolResult) == []  # ask_user.go's "pending" placeholder is no result

    answers = [["PostgreSQL"], ["Auth", "Caching"], ["Use the existing backup policy"]]
    message = kagent.answer_message(question, answers, message_id="m-2")
    written = exchanges(GO, "03_ask_user")[1].request["params"]["message"]
    assert sent_data_part(message) == written["parts"][0]["data"]


def test_the_model_gets_the_answers_and_the_turn_completes():
    _, events = turn("03_ask_user", 1)

    [result] = of_type(events, ToolResult)
    assert result == ToolResult("call_ask_1", ok=True, name="ask_user")
    assert shown_text(events) == "Thanks, setting it up."
    assert events[-1] == TaskEnded(TaskState.COMPLETED)


def test_a_sub_agents_pause_decides_on_the_sub_agents_own_calls():
    _, events = turn("06_sub_agent_approval", 0)
    [request] = of_type(events, ApprovalRequest)

    assert request.agent == "ops_agent"
    assert [(tool.approval_id, tool.name) for tool in request.tools] == [
        ("call_add", "add_numbers"),
        ("call_check", "check_status"),
    ]
    message = kagent.decision_message(
        request, {"call_add": Decision(True), "call_check": Decision(False)}, message_id="m-3"
    )
    written = exchanges(GO, "06_sub_agent_approval")[1].request["params"]["message"]
    assert sent_data_part(message)["decisions"] == written["parts"][0]["data"]["decisions"]


def test_every_event_carries_adk_prefixed_metadata_and_no_kagent_prefixed_key():
    """The fixtures are the Go runtime's, not the Python one's (executor.go writes adk_ keys only)."""
    for name in ("01_two_tools_approve_one_deny_one", "03_ask_user", "06_sub_agent_approval"):
        text = "\n".join(json.dumps(exchange.responses) for exchange in exchanges(GO, name))
        assert '"adk_session_id"' in text
        assert '"kagent_' not in text
