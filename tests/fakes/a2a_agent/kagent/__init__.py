"""kagent's human-in-the-loop shapes, as steps: `kagent.v1` (kagent 1.0, A2A 1.0, hitl/v1 extension)
and `kagent.v010` (kagent 0.10, A2A 0.3, ADK `adk_request_confirmation` parts), `kagent.go` (kagent 0.10's
Go runtime: the same parts with `adk_` metadata keys).

    from tests.fakes.a2a_agent import kagent
    tools = [kagent.PendingTool("call_add_1", "add_numbers", {"a": 2, "b": 3})]
    agent.script([text("I will add the numbers."), *kagent.v1.approval_pause(tools)])
"""

from tests.fakes.a2a_agent.kagent import go, v010, v1
from tests.fakes.a2a_agent.kagent.shapes import (
    HITL_EXTENSION,
    PendingTool,
    Question,
    approval_hint,
    confirmation_id,
    questions_hint,
)

__all__ = [
    "HITL_EXTENSION",
    "PendingTool",
    "Question",
    "approval_hint",
    "confirmation_id",
    "go",
    "questions_hint",
    "v010",
    "v1",
]
