"""The A2A adapter and the kagent-v1 dialect against the real kagent runtimes, once per line people run
(tests/support/kagent_runtime/lines.py: kagent-adk 0.10.4 on A2A 0.3, the newest 1.0 pre-release on 1.0).

The agent is kagent's own server with a scripted model: what these tests prove is that the pauses
kagent really sends read as the dialect says, and that the answers and decisions the dialect builds
reach the model as the people gave them.
"""

import json
import uuid

import pytest

from kourier.a2a.dialects import dialect_for
from kourier.a2a.dialects.kagent import DENIAL_REASON
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
)
from kourier.a2a.factory import make_client
from kourier.a2a.follow import follow_turn
from kourier.a2a.wire import Message, Role, TaskState, TextPart
from tests.support.kagent_runtime.script import Call, Script, Tool, ToolRun, Turn, ask_user, question

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

KAGENT = dialect_for("kagent-v1")
POLL_TIMEOUT_SECONDS = 60

DATABASE = question("Which database should I use?", ["PostgreSQL", "MySQL", "SQLite"], multiple=False)
FEATURES = question("Which features do you want?", ["Auth", "Caching", "Audit logging"], multiple=True)
REQUIREMENTS = question("Any additional requirements?")  # free text: no choices, as models often ask it


def new_message_id() -> str:
    return str(uuid.uuid4())


def user_says(text: str, *, context_id: str) -> Message:
    return Message(new_message_id(), Role.USER, (TextPart(text),), context_id=context_id)


async def run_turn(agent, message: Message) -> list:
    """One turn as the runner follows it: a fresh reader, the message sent, events to the task's end."""
    reader = KAGENT.reader()
    events = []
    async for event in follow_turn(
        agent, reader, message, task_id=None, resumed=False, poll_timeout=POLL_TIMEOUT_SECONDS
    ):
        events.append(event)
    return events


def of_type(events: list, kind: type) -> list:
    return [event for event in events if isinstance(event, kind)]


def shown_text(events: list) -> str:
    text = ""
    for event in of_type(events, TextDelta):
        text = event.text if event.replace else text + event.text
    return text


def answer_format_of(line) -> AnswerFormat:
    return AnswerFormat.ADK_CONFIRMATION if line.is_v010 else AnswerFormat.HITL_V1


async def test_the_model_receives_exactly_the_answers_people_gave_to_its_questions(
    start_kagent_runtime, kagent_line
):
    runtime = start_kagent_runtime(
        Script(
            [
                Turn("I need a few answers first.", [ask_user("call_ask", DATABASE, FEATURES, REQUIREMENTS)]),
                Turn("Thanks, setting it up."),
            ]
        )
    )
    context_id = str(uuid.uuid4())

    async with make_client(runtime.url, extensions=KAGENT.extensions) as agent:
        asking = await run_turn(agent, user_says("Set up the service", context_id=context_id))
        [asked] = of_type(asking, Question)
        answers = [["PostgreSQL"], ["Auth", "Caching"], ["Keep the nightly backups"]]
        answered = await run_turn(agent, KAGENT.answer_message(asked, answers, message_id=new_message_id()))

    assert asking[0] == TaskStarted(asked.task_id, context_id)
    assert asked.questions == (
        AskedQuestion("Which database should I use?", ("PostgreSQL", "MySQL", "SQLite"), multiple=False),
        AskedQuestion("Which features do you want?", ("Auth", "Caching", "Audit logging"), multiple=True),
        AskedQuestion("Any additional requirements?", (), multiple=False),
    )
    assert asked.answer_format is answer_format_of(kagent_line)
    if not kagent_line.is_v010:
        assert asked.answer_id  # kagent 1.0's opaque id, echoed with the answers
    assert asking[-1].state is TaskState.INPUT_REQUIRED
    assert of_type(asking, ToolResult) == []  # ask_user's "pending" placeholder is no result

    assert answered[-1] == TaskEnded(TaskState.COMPLETED)
    assert of_type(answered, TaskStarted) == [TaskStarted(asked.task_id, context_id)]
    assert of_type(answered, ToolResult) == [ToolResult("call_ask", ok=True, name="ask_user")]
    assert shown_text(answered) == "Thanks, setting it up."

    first_request, after_answers = runtime.model_requests()
    assert first_request.text == "Set up the service"
    [call_id] = after_answers.function_responses
    assert call_id == "call_ask"
    assert json.loads(after_answers.function_responses["call_ask"]["result"]) == [
        {"question": "Which database should I use?", "answer": ["PostgreSQL"]},
        {"question": "Which features do you want?", "answer": ["Auth", "Caching"]},
        {"question": "Any additional requirements?", "answer": ["Keep the nightly backups"]},
    ]


async def test_only_the_approved_tool_runs_and_the_model_reads_the_denial(start_kagent_runtime, kagent_line):
    runtime = start_kagent_runtime(
        Script(
            [
                Turn(
                    "I will restart the service and drop the table.",
                    [
                        Call("call_restart", "restart_service", {"service": "payments"}),
                        Call("call_drop", "drop_table", {"table": "sessions"}),
                    ],
                ),
                Turn("Restarted; the table stays."),
            ],
            tools=[
                Tool("restart_service", {"restarted": True}, requires_approval=True),
                Tool("drop_table", {"dropped": True}, requires_approval=True),
            ],
        )
    )
    context_id = str(uuid.uuid4())

    async with make_client(runtime.url, extensions=KAGENT.extensions) as agent:
        asking = await run_turn(agent, user_says("Fix the payments outage", context_id=context_id))
        [request] = of_type(asking, ApprovalRequest)
        restart, drop = request.tools
        decisions = {
            restart.approval_id: Decision(approved=True),
            drop.approval_id: Decision(False, DENIAL_REASON),
        }
        decided = await run_turn(
            agent, KAGENT.decision_message(request, decisions, message_id=new_message_id())
        )

    assert of_type(asking, ToolCall) == [
        ToolCall("call_restart", "restart_service", {"service": "payments"}),
        ToolCall("call_drop", "drop_table", {"table": "sessions"}),
    ]
    assert [(tool.call_id, tool.name, dict(tool.args)) for tool in request.tools] == [
        ("call_restart", "restart_service", {"service": "payments"}),
        ("call_drop", "drop_table", {"table": "sessions"}),
    ]
    assert request.answer_format is answer_format_of(kagent_line)
    assert asking[-1].state is TaskState.INPUT_REQUIRED
    assert of_type(asking, ToolResult) == []  # the approval callback's placeholders are no results

    assert decided[-1] == TaskEnded(TaskState.COMPLETED)
    assert of_type(decided, ToolResult) == [
        ToolResult("call_restart", ok=True, name="restart_service"),
        ToolResult("call_drop", ok=False, name="drop_table"),
    ]
    assert shown_text(decided) == "Restarted; the table stays."

    assert runtime.tool_runs() == [ToolRun("call_restart", "restart_service", {"service": "payments"})]
    after_decisions = runtime.model_requests()[-1]
    assert after_decisions.function_responses == {
        "call_restart": {"restarted": True},
        "call_drop": {"result": f"Tool call was rejected by user. Reason: {DENIAL_REASON}"},
    }
