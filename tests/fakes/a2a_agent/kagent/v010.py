"""kagent 0.10 pauses (A2A 0.3): ADK `adk_request_confirmation` data parts, no text.

Shapes as captured in tests/a2a/data/kagent_v010 (01 approval, 03 ask_user). Use with the
"kagent-0.10" text style on a protocol "0.3" agent; the client answers with a `decision_type` data
part (the agent only records it - decide the continuation in `on_message`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.fakes.a2a_agent.kagent.shapes import PendingTool, Question, confirmation_id, questions_hint
from tests.fakes.a2a_agent.parts import KAGENT_TYPE
from tests.fakes.a2a_agent.steps import InputRequired, Step, input_required, tool_call


def confirmation_part(
    original_call: Mapping[str, Any],
    hint: str,
    confirmation_call_id: str | None = None,
    *,
    prefix: str = "kagent_",
) -> dict[str, Any]:
    """One long-running `adk_request_confirmation` function call wrapping the original call.

    ``prefix``: the metadata keys' (``kagent_`` for the Python runtime, ``adk_`` for the Go one)."""
    return {
        "data": {
            "name": "adk_request_confirmation",
            "id": confirmation_call_id or confirmation_id(),
            "args": {
                "originalFunctionCall": dict(original_call),
                "toolConfirmation": {"hint": hint, "confirmed": False},
            },
        },
        "metadata": {f"{prefix}type": "function_call", f"{prefix}is_long_running": True},
    }


def approval_request(tools: Sequence[PendingTool], *, prefix: str = "kagent_") -> InputRequired:
    """One confirmation part per tool, in one input-required message."""
    parts = [
        confirmation_part(
            {"id": tool.call_id, "name": tool.name, "args": dict(tool.args)},
            tool.hint,
            tool.approval_id,
            prefix=prefix,
        )
        for tool in tools
    ]
    return input_required(None, data_parts=parts)


def ask_user_request(
    questions: Sequence[Question],
    *,
    call_id: str = "call_ask_1",
    confirmation_call_id: str | None = None,
    prefix: str = "kagent_",
) -> InputRequired:
    original = {"id": call_id, "name": "ask_user", "args": {"questions": [q.as_json() for q in questions]}}
    part = confirmation_part(original, questions_hint(questions), confirmation_call_id, prefix=prefix)
    return input_required(None, data_parts=[part])


def approval_pause(tools: Sequence[PendingTool]) -> list[Step]:
    """The calls (joining any text before them), then the pause. kagent 0.10 stops before the
    approval placeholder results, so there are none."""
    calls: list[Step] = [tool_call(tool.call_id, tool.name, tool.args, marker=KAGENT_TYPE) for tool in tools]
    return [*calls, approval_request(tools)]


def ask_user_pause(questions: Sequence[Question], *, call_id: str = "call_ask_1") -> list[Step]:
    arguments = {"questions": [question.as_json() for question in questions]}
    return [
        tool_call(call_id, "ask_user", arguments, marker=KAGENT_TYPE),
        ask_user_request(questions, call_id=call_id),
    ]
