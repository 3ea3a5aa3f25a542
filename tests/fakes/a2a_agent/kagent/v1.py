"""kagent 1.0 alpha pauses (A2A 1.0): the hitl/v1 extension on the input-required message.

Shapes as captured in tests/a2a/data/kagent_v1alpha (01 approval, 03 ask_user). Like
kagent, the structured metadata is only sent when the request activated the extension
(`A2A-Extensions: https://kagent.dev/extensions/hitl/v1`); otherwise the pause is just its text.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes.a2a_agent.kagent.shapes import (
    HITL_EXTENSION,
    PendingTool,
    Question,
    approval_hint,
    confirmation_id,
    questions_hint,
)
from tests.fakes.a2a_agent.parts import KAGENT_PART_TYPE
from tests.fakes.a2a_agent.steps import (
    InputRequired,
    Step,
    ToolResult,
    input_required,
    tool_call,
    tool_result,
)


def approval_request(tools: Sequence[PendingTool]) -> InputRequired:
    """`tool_approval_request`: one pause for several tools, each decided by its `id`."""
    hint = approval_hint(tools)
    payload = {
        "type": "tool_approval_request",
        "hint": hint,
        "tools": [
            {"id": tool.approval_id, "call_id": tool.call_id, "name": tool.name, "args": dict(tool.args)}
            for tool in tools
        ],
    }
    return input_required(hint, {HITL_EXTENSION: payload}, [HITL_EXTENSION], only_if_requested=True)


def ask_user_request(questions: Sequence[Question], request_id: str | None = None) -> InputRequired:
    """`ask_user_request`: positional questions; the answer echoes `id` (generated when not given)."""
    payload = {
        "type": "ask_user_request",
        "id": request_id or confirmation_id(),
        "questions": [question.as_json() for question in questions],
    }
    return input_required(
        questions_hint(questions), {HITL_EXTENSION: payload}, [HITL_EXTENSION], only_if_requested=True
    )


def approval_placeholder(tool: PendingTool) -> ToolResult:
    """The `function_response` kagent emits before an approval pause. Not the tool's result."""
    return tool_result(
        tool.call_id,
        tool.name,
        {"status": "confirmation_requested", "tool": tool.name},
        marker=KAGENT_PART_TYPE,
    )


def ask_user_placeholder(call_id: str, questions: Sequence[Question]) -> ToolResult:
    """The pending `ask_user` result kagent emits before the questions pause."""
    response = {"status": "pending", "questions": [question.as_json() for question in questions]}
    return tool_result(call_id, "ask_user", response, marker=KAGENT_PART_TYPE)


def approval_pause(tools: Sequence[PendingTool]) -> list[Step]:
    """The end of a turn that needs approval: the calls (joining any text before them), the
    placeholder results, then the pause - the order kagent 1.0 sends them in."""
    calls: list[Step] = [
        tool_call(tool.call_id, tool.name, tool.args, marker=KAGENT_PART_TYPE) for tool in tools
    ]
    placeholders: list[Step] = [approval_placeholder(tool) for tool in tools]
    return [*calls, *placeholders, approval_request(tools)]


def ask_user_pause(
    questions: Sequence[Question], *, call_id: str = "call_ask_1", request_id: str | None = None
) -> list[Step]:
    """The `ask_user` tool call, its pending result, then the questions pause."""
    arguments = {"questions": [question.as_json() for question in questions]}
    return [
        tool_call(call_id, "ask_user", arguments, marker=KAGENT_PART_TYPE),
        ask_user_placeholder(call_id, questions),
        ask_user_request(questions, request_id),
    ]
