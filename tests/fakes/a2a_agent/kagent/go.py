"""kagent 0.10's Go runtime pauses (A2A 0.3): the Python runtime's `adk_request_confirmation` parts,
typed with `adk_` metadata keys instead of `kagent_` ones.

From kagent's Go source, branch release/v0.10.x (tests/a2a/data/kagent_go/README.md has the file by
file account): the Go runtime writes every metadata key through the Go ADK's `adka2a.ToA2AMetaKey`
(`adk_type`, `adk_is_long_running`; go/adk/pkg/a2a/executor.go, consts.go) and reads decisions in
the 0.10 shapes (`decision_type`, `decisions`, `ask_user_answers`; go/adk/pkg/a2a/hitl.go). Use with
the "kagent-go" text style on a protocol "0.3" agent.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes.a2a_agent.kagent import v010
from tests.fakes.a2a_agent.kagent.shapes import PendingTool, Question
from tests.fakes.a2a_agent.parts import ADK_TYPE
from tests.fakes.a2a_agent.steps import InputRequired, Step, tool_call

PREFIX = "adk_"


def approval_request(tools: Sequence[PendingTool]) -> InputRequired:
    return v010.approval_request(tools, prefix=PREFIX)


def ask_user_request(questions: Sequence[Question], *, call_id: str = "call_ask_1") -> InputRequired:
    return v010.ask_user_request(questions, call_id=call_id, prefix=PREFIX)


def approval_pause(tools: Sequence[PendingTool]) -> list[Step]:
    """The calls, then the pause (the Go runtime mirrors the approval placeholders in between; the
    "kagent-go" style writes them)."""
    calls: list[Step] = [tool_call(tool.call_id, tool.name, tool.args, marker=ADK_TYPE) for tool in tools]
    return [*calls, approval_request(tools)]


def ask_user_pause(questions: Sequence[Question], *, call_id: str = "call_ask_1") -> list[Step]:
    arguments = {"questions": [question.as_json() for question in questions]}
    return [
        tool_call(call_id, "ask_user", arguments, marker=ADK_TYPE),
        ask_user_request(questions, call_id=call_id),
    ]
