"""The kagent-v1 dialect on real kagent transcripts (both lines) and on the documented shapes it cannot
be captured with here (sub-agent pauses)."""

import pytest

from kourier.a2a import codec_v03, codec_v10
from kourier.a2a.dialects import dialect_for, kagent
from kourier.a2a.dialects.reader import Pause
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
    UnusablePause,
)
from kourier.a2a.wire import DataPart, Message, Role, TaskState, TextPart
from tests.a2a.transcripts import V010, V1ALPHA, exchanges, read, wire_events

HITL = "https://kagent.dev/extensions/hitl/v1"
ANSWERS = [["PostgreSQL"], ["Auth", "Caching"], ["Use the existing backup policy"]]
QUESTIONS = (
    AskedQuestion("Which database should I use?", ("PostgreSQL", "MySQL", "SQLite"), multiple=False),
    AskedQuestion("Which features do you want?", ("Auth", "Caching", "Audit logging"), multiple=True),
    AskedQuestion("Any additional requirements?", (), multiple=False),
)
FIRST_MODEL_TURN = "I will add the numbers and check the payments service."
SECOND_MODEL_TURN = (
    'Tool results received. add_numbers -> {"sum": 5} | '
    'check_status -> {"result": "Tool call was rejected by user. Reason: Status checks are frozen today"}'
)


def turn(line, name, index):
    exchange = exchanges(line, name)[index]
    return exchange, read(kagent.reader(), wire_events(line, exchange))


def shown_text(events):
    text = ""
    for event in events:
        if isinstance(event, TextDelta):
            text = event.text if event.replace else text + event.text
    return text


def of_type(events, kind):
    return [event for event in events if isinstance(event, kind)]


def test_dialect_interface():
    dialect = dialect_for("kagent-v1")
    assert dialect.name == "kagent-v1"
    assert dialect.extensions == (HITL,)
    assert dialect.reader().feed is not None
    with pytest.raises(ValueError, match="unknown dialect"):
        dialect_for("kagent-v2")


# -- kagent 0.10 (A2A 0.3) ---------------------------------------------------------------------------


def test_v010_approval_pause_turn():
    exchange, events = turn(V010, "01_two_tools_approve_one_deny_one", 0)
    task_id = "ef47ccc6-05a1-4c59-a553-61c568055903"
    context_id = exchange.request["params"]["message"]["contextId"]

    assert events == [
        TaskStarted(task_id, context_id),
        TextDelta("I will add the num"),
        TextDelta("bers and check the"),
        TextDelta(" payments service."),
        ToolCall("call_add_1", "add_numbers", {"a": 2, "b": 3}),
        ToolCall("call_status_1", "check_status", {"service": "payments"}),
        ApprovalRequest(
            tools=(
                ToolToApprove("call_add_1", "call_add_1", "add_numbers", {"a": 2, "b": 3}),
                ToolToApprove("call_status_1", "call_status_1", "check_status", {"service": "payments"}),
            ),
            task_id=task_id,
            context_id=context_id,
            answer_format=AnswerFormat.ADK_CONFIRMATION,
        ),
        TaskEnded(TaskState.INPUT_REQUIRED),
    ]


def test_v010_turn_after_the_decision_reports_results_and_each_chunk_once():
    _, events = turn(V010, "01_two_tools_approve_one_deny_one", 2)

    assert of_type(events, ToolResult) == [
        ToolResult("call_add_1", ok=True, name="add_numbers"),
        ToolResult(
            "call_status_1", ok=False, name="check_status"
        ),  # denied: "Tool call was rejected by user."
    ]
    # Partial deltas, the full message and the closing artifact that repeats it: shown once, no replace.
    assert shown_text(events) == SECOND_MODEL_TURN
    assert not any(event.replace for event in of_type(events, TextDelta))
    assert events[-1] == TaskEnded(TaskState.COMPLETED)


def test_v010_decision_message_is_what_kagent_0_10_took():
    _, events = turn(V010, "01_two_tools_approve_one_deny_one", 0)
    request = of_type(events, ApprovalRequest)[0]
    captured = exchanges(V010, "01_two_tools_approve_one_deny_one")[2].request["params"]["message"]

    message = kagent.decision_message(
        request,
        {
            "call_add_1": Decision(approved=True),
            "call_status_1": Decision(approved=False, reason="Status checks are frozen today"),
        },
        message_id=captured["messageId"],
    )
    assert codec_v03.CODEC.encode_message(message) == captured


def test_v010_ask_user_pause_and_answer():
    exchange, events = turn(V010, "03_ask_user", 0)
    question = of_type(events, Question)[0]

    assert question == Question(
        questions=QUESTIONS,
        task_id="4fe82ec5-caee-46a5-9ab3-d71b5b08b27a",
        context_id=exchange.request["params"]["message"]["contextId"],
        answer_format=AnswerFormat.ADK_CONFIRMATION,
    )
    assert of_type(events, ToolCall)[0].name == "ask_user"
    assert shown_text(events) == "I need a few answers first."

    captured = exchanges(V010, "03_ask_user")[1].request["params"]["message"]
    message = kagent.answer_message(question, ANSWERS, message_id=captured["messageId"])
    assert codec_v03.CODEC.encode_message(message) == captured


def test_v010_turn_after_the_answers():
    _, events = turn(V010, "03_ask_user", 1)
    assert of_type(events, ToolResult) == [ToolResult("call_ask_1", ok=True, name="ask_user")]
    assert shown_text(events).startswith('Tool results received. ask_user -> {"result": "[{\\"question\\"')
    assert events[-1] == TaskEnded(TaskState.COMPLETED)


def test_v010_task_snapshot_shows_the_current_turn_only():
    # tasks/get after the decision: the history holds both turns, partial chunks and all.
    [snapshot] = wire_events(V010, exchanges(V010, "01_two_tools_approve_one_deny_one")[3])
    events = kagent.reader().feed(snapshot)

    assert shown_text(events) == SECOND_MODEL_TURN
    assert of_type(events, ToolCall) == []
    assert [result.call_id for result in of_type(events, ToolResult)] == ["call_add_1", "call_status_1"]
    assert events[-1] == TaskEnded(TaskState.COMPLETED)


def test_v010_snapshot_fed_after_the_stream_changes_nothing():
    exchange = exchanges(V010, "01_two_tools_approve_one_deny_one")[2]
    reader = kagent.reader()
    stream = wire_events(V010, exchange)
    read(reader, stream[:-1])  # everything but the closing status: the stream dropped
    [snapshot] = wire_events(V010, exchanges(V010, "01_two_tools_approve_one_deny_one")[3])

    assert reader.feed(snapshot) == [TaskEnded(TaskState.COMPLETED)]
    assert reader.text == SECOND_MODEL_TURN


# -- kagent 1.0 alpha (A2A 1.0, hitl/v1) ---------------------------------------------------------------


def test_v1_approval_pause_turn():
    exchange, events = turn(V1ALPHA, "01_two_tools_approve_one_deny_one", 0)
    task_id = "817201e9-e9f4-4e75-8c70-2b590e3540ce"
    context_id = exchange.request["params"]["message"]["contextId"]

    assert events == [
        TaskStarted(task_id, context_id),
        TextDelta("I will add the num"),
        TextDelta("bers and check the"),
        TextDelta(" payments service."),
        # The lastChunk (no append) restates the turn in full: no text event, the calls ride with it.
        ToolCall("call_add_1", "add_numbers", {"a": 2.0, "b": 3.0}),
        ToolCall("call_status_1", "check_status", {"service": "payments"}),
        # The {"status": "confirmation_requested"} placeholders are not results.
        ApprovalRequest(
            tools=(
                ToolToApprove(
                    "adk-aced4a00-7475-4860-be2e-ec1855f71ede",
                    "call_add_1",
                    "add_numbers",
                    {"a": 2.0, "b": 3.0},
                ),
                ToolToApprove(
                    "adk-dce6b76d-b321-4dcd-b801-8d0b4ccc1e95",
                    "call_status_1",
                    "check_status",
                    {"service": "payments"},
                ),
            ),
            task_id=task_id,
            context_id=context_id,
            answer_format=AnswerFormat.HITL_V1,
        ),
        TaskEnded(
            TaskState.INPUT_REQUIRED,
            "Tool 'add_numbers' requires approval before execution.; Tool 'check_status' requires approval "
            "before execution. (add_numbers, check_status)",
        ),
    ]


def test_v1_turn_after_the_decision():
    _, events = turn(V1ALPHA, "01_two_tools_approve_one_deny_one", 2)
    assert of_type(events, ToolResult) == [
        ToolResult("call_add_1", ok=True, name="add_numbers"),
        ToolResult("call_status_1", ok=False, name="check_status"),
    ]
    assert shown_text(events) == SECOND_MODEL_TURN
    assert not any(event.replace for event in of_type(events, TextDelta))
    assert events[-1] == TaskEnded(TaskState.COMPLETED)


def test_v1_decision_message_is_what_kagent_1_0_took():
    _, events = turn(V1ALPHA, "01_two_tools_approve_one_deny_one", 0)
    request = of_type(events, ApprovalRequest)[0]
    captured = exchanges(V1ALPHA, "01_two_tools_approve_one_deny_one")[2].request["params"]["message"]

    message = kagent.decision_message(
        request,
        {
            "adk-aced4a00-7475-4860-be2e-ec1855f71ede": Decision(approved=True),
            "adk-dce6b76d-b321-4dcd-b801-8d0b4ccc1e95": Decision(
                approved=False, reason="Status checks are frozen today"
            ),
        },
        message_id=captured["messageId"],
    )
    assert codec_v10.CODEC.encode_message(message) == captured


def test_v1_ask_user_pause_and_answer():
    _, events = turn(V1ALPHA, "03_ask_user", 0)
    [question] = of_type(events, Question)

    assert question.questions == QUESTIONS
    assert question.answer_format is AnswerFormat.HITL_V1
    assert question.answer_id == "adk-ae1d3fd1-5970-470c-a553-5af0322b9c58"
    # ask_user's {"status": "pending", ...} placeholder is not its result.
    assert of_type(events, ToolResult) == []

    captured = exchanges(V1ALPHA, "03_ask_user")[1].request["params"]["message"]
    message = kagent.answer_message(question, ANSWERS, message_id=captured["messageId"])
    assert codec_v10.CODEC.encode_message(message) == captured


def test_v1_pause_without_the_extension_is_unusable():
    # Without the opt-in kagent 1.0 pauses with a bare hint, and a text reply does not resume it.
    exchange = exchanges(V1ALPHA, "02_pause_without_extension_optin")[0]
    events = read(kagent.reader(), wire_events(V1ALPHA, exchange))
    assert of_type(events, UnusablePause) == [
        UnusablePause(
            "unstructured-pause",
            "088946f0-4da4-4d89-9ded-37ea79cafb39",
            "4e9b3c28-d59d-4e19-9955-6fb969dfb838",
        )
    ]
    assert events[-1].state is TaskState.INPUT_REQUIRED


def test_v1_rejected_decision_fails_the_task_with_its_reason():
    _, events = turn(V1ALPHA, "04_invalid_hitl_responses", 1)
    assert events[-1] == TaskEnded(
        TaskState.FAILED, "Tool approval response is missing ids: adk-17fd75eb-f328-44e5-ad5f-dceac90316a1"
    )
    assert "missing ids" not in shown_text(events)


def test_v1_subscription_snapshot_of_a_paused_task():
    lifecycle = exchanges(V1ALPHA, "05_errors_and_lifecycle")
    subscription = next(e for e in lifecycle if e.method == "SubscribeToTask" and e.results)
    events = read(kagent.reader(), wire_events(V1ALPHA, subscription))

    assert isinstance(events[0], TaskStarted)
    assert shown_text(events) == FIRST_MODEL_TURN
    assert [tool.name for tool in of_type(events, ApprovalRequest)[0].tools] == [
        "add_numbers",
        "check_status",
    ]
    assert events[-1].state is TaskState.INPUT_REQUIRED


def test_v1_completed_snapshot_shows_every_artifact_once():
    [snapshot] = wire_events(V1ALPHA, exchanges(V1ALPHA, "01_two_tools_approve_one_deny_one")[3])
    events = kagent.reader().feed(snapshot)

    assert shown_text(events) == FIRST_MODEL_TURN + "\n\n" + SECOND_MODEL_TURN
    assert [call.call_id for call in of_type(events, ToolCall)] == ["call_add_1", "call_status_1"]
    assert [(r.call_id, r.ok) for r in of_type(events, ToolResult)] == [
        ("call_add_1", True),
        ("call_status_1", False),
    ]


# -- sub-agent pauses and other shapes (docs/kagent-dialect.md §3, not captured) -------------------------


def pause_with(message: Message, state: TaskState = TaskState.INPUT_REQUIRED) -> Pause:
    return Pause(state=state, message=message, task_id="T", context_id="C")


def hitl_message(request: dict) -> Message:
    return Message(
        message_id="m",
        role=Role.AGENT,
        parts=(TextPart("hint"),),
        metadata={HITL: request},
        extensions=(HITL,),
    )


def test_v1_nested_tool_approval_decides_on_the_sub_agents_tools():
    request = {
        "type": "tool_approval_request",
        "tools": [
            {"id": "parent-conf", "call_id": "call_outer", "name": "k8s_agent", "args": {"request": "x"}}
        ],
        "nested": {
            "subagent_name": "k8s_agent",
            "task_id": "child-task",
            "context_id": "child-ctx",
            "tools": [
                {"id": "inner-1", "call_id": "call_del", "name": "delete_pod", "args": {"pod": "checkout"}},
                {"id": "inner-2", "call_id": "call_scale", "name": "scale", "args": {"replicas": 0}},
            ],
        },
    }
    approval = kagent.read_pause(pause_with(hitl_message(request)))

    assert approval == ApprovalRequest(
        tools=(
            ToolToApprove("inner-1", "call_del", "delete_pod", {"pod": "checkout"}),
            ToolToApprove("inner-2", "call_scale", "scale", {"replicas": 0}),
        ),
        task_id="T",
        context_id="C",
        answer_format=AnswerFormat.HITL_V1,
        agent="k8s_agent",
    )
    message = kagent.decision_message(approval, kagent.deny_all(approval), message_id="d")
    assert message.metadata[HITL]["approvals"] == [
        {"id": "inner-1", "approved": False, "rejection_reason": kagent.DENIAL_REASON},
        {"id": "inner-2", "approved": False, "rejection_reason": kagent.DENIAL_REASON},
    ]


def test_v1_nested_question_is_answered_with_the_nested_tool_id():
    request = {
        "type": "ask_user_request",
        "id": "parent-conf",
        "questions": [{"question": "Which namespace?", "choices": [], "multiple": False}],
        "nested": {
            "subagent_name": "k8s_agent",
            "task_id": "child",
            "tools": [{"id": "child-conf", "call_id": "call_ask", "name": "ask_user", "args": {}}],
        },
    }
    question = kagent.read_pause(pause_with(hitl_message(request)))

    assert (question.agent, question.answer_id) == ("k8s_agent", "child-conf")
    message = kagent.answer_message(question, [["prod"]], message_id="a")
    assert message.metadata[HITL] == {
        "type": "ask_user_response",
        "id": "child-conf",
        "answers": [{"answer": ["prod"]}],
    }
    assert (message.task_id, message.context_id, message.extensions) == ("T", "C", (HITL,))


def confirmation_part(call: dict, payload: dict | None = None, marker: str = "kagent_") -> DataPart:
    return DataPart(
        data={
            "name": "adk_request_confirmation",
            "id": f"adk-{call['id']}",
            "args": {
                "originalFunctionCall": call,
                "toolConfirmation": {"hint": "h", "confirmed": False, "payload": payload},
            },
        },
        metadata={f"{marker}type": "function_call", f"{marker}is_long_running": True},
    )


def test_v010_sub_agent_pause_decides_on_the_inner_calls():
    payload = {
        "task_id": "child",
        "context_id": "child-ctx",
        "subagent_name": "k8s_agent",
        "hitl_parts": [
            {
                "name": "adk_request_confirmation",
                "id": "inner-conf",
                "originalFunctionCall": {"id": "inner_call_1", "name": "delete", "args": {"path": "/tmp/x"}},
            },
        ],
    }
    message = Message(
        message_id="m",
        role=Role.AGENT,
        parts=(
            confirmation_part(
                {"id": "call_outer", "name": "k8s_agent", "args": {"request": "clean"}}, payload
            ),
        ),
    )
    approval = kagent.read_pause(pause_with(message))

    assert approval.agent == "k8s_agent"
    assert approval.tools == (ToolToApprove("inner_call_1", "inner_call_1", "delete", {"path": "/tmp/x"}),)
    decision = kagent.decision_message(approval, {"inner_call_1": Decision(approved=True)}, message_id="d")
    assert decision.parts[0] == DataPart({"decision_type": "batch", "decisions": {"inner_call_1": "approve"}})


def test_v010_sub_agent_question():
    payload = {
        "task_id": "child",
        "subagent_name": "helper",
        "hitl_parts": [
            {
                "originalFunctionCall": {
                    "id": "c1",
                    "name": "ask_user",
                    "args": {"questions": [{"question": "Why?"}]},
                }
            }
        ],
    }
    message = Message(
        message_id="m",
        role=Role.AGENT,
        parts=(confirmation_part({"id": "outer", "name": "helper"}, payload, "adk_"),),
    )
    question = kagent.read_pause(pause_with(message))
    assert question == Question(
        questions=(AskedQuestion("Why?"),),
        task_id="T",
        context_id="C",
        answer_format=AnswerFormat.ADK_CONFIRMATION,
        agent="helper",
    )


def test_v010_question_mixed_with_an_approval_is_unusable():
    message = Message(
        message_id="m",
        role=Role.AGENT,
        parts=(
            confirmation_part({"id": "c1", "name": "ask_user", "args": {"questions": [{"question": "?"}]}}),
            confirmation_part({"id": "c2", "name": "delete_pod"}),
        ),
    )
    assert kagent.read_pause(pause_with(message)) == UnusablePause("question-with-approval", "T", "C")


@pytest.mark.parametrize(
    "request_",
    [
        {"type": "tool_approval_request", "tools": []},
        {"type": "tool_approval_request", "tools": [{"call_id": "c", "name": "x"}]},  # no approval id
        {"type": "tool_approval_request", "tools": [{"id": "a", "name": "x"}, {"id": "a", "name": "y"}]},
        {"type": "ask_user_request", "questions": [{"question": "?"}]},  # no id to answer with
        {"type": "ask_user_request", "id": "q", "questions": [{"choices": []}]},
        {"type": "ask_user_request", "id": "q", "questions": [{"question": "?"}], "nested": {"tools": []}},
        {"type": "something_new"},
    ],
)
def test_malformed_or_unknown_hitl_requests_are_unusable(request_):
    assert isinstance(kagent.read_pause(pause_with(hitl_message(request_))), UnusablePause)


def test_auth_required_is_unusable():
    message = Message(message_id="m", role=Role.AGENT, parts=(TextPart("log in"),))
    assert kagent.read_pause(pause_with(message, TaskState.AUTH_REQUIRED)) == UnusablePause(
        "auth-required", "T", "C"
    )


# -- builders ---------------------------------------------------------------------------------------------

APPROVAL_V010 = ApprovalRequest(
    tools=(ToolToApprove("c1", "c1", "a", {}), ToolToApprove("c2", "c2", "b", {})),
    task_id="T",
    context_id="C",
    answer_format=AnswerFormat.ADK_CONFIRMATION,
)


@pytest.mark.parametrize(
    "decisions",
    [
        {"c1": Decision(True)},  # kagent 0.10 would approve the missing one
        {"c1": Decision(True), "c2": Decision(True), "c3": Decision(False)},
    ],
)
def test_a_decision_is_needed_for_every_pending_tool_and_no_other(decisions):
    with pytest.raises(ValueError, match="every pending tool"):
        kagent.decision_message(APPROVAL_V010, decisions, message_id="d")


def test_v010_denial_of_everything_is_an_explicit_batch_with_the_fixed_reason():
    message = kagent.decision_message(
        APPROVAL_V010, kagent.deny_all(APPROVAL_V010, reason=kagent.TIMEOUT_DENIAL_REASON), message_id="d"
    )
    assert message.role is Role.USER
    assert (message.task_id, message.context_id) == ("T", "C")
    assert message.parts == (
        DataPart(
            {
                "decision_type": "batch",
                "decisions": {"c1": "reject", "c2": "reject"},
                "rejection_reasons": {"c1": kagent.TIMEOUT_DENIAL_REASON, "c2": kagent.TIMEOUT_DENIAL_REASON},
            }
        ),
        TextPart("Batch decision: 0 approved, 2 rejected"),
    )


def test_answers_must_match_the_questions():
    question = Question(QUESTIONS, "T", "C", AnswerFormat.HITL_V1, answer_id="q")
    with pytest.raises(ValueError, match="3 questions"):
        kagent.answer_message(question, [["PostgreSQL"]], message_id="a")
