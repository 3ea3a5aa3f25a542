"""What kagent's pauses are about: tools waiting for approval, questions for a person."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HITL_EXTENSION = "https://kagent.dev/extensions/hitl/v1"


def confirmation_id() -> str:
    """An ADK confirmation call id, like the `adk-…` ids kagent sends."""
    return f"adk-{uuid.uuid4()}"


@dataclass(frozen=True)
class PendingTool:
    """A tool call that waits for a person's approval.

    `call_id` is the model's tool-call id (matches the function_call part's `data.id`);
    `approval_id` is ADK's confirmation call id, the id a 1.0 client must echo back.
    """

    call_id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    approval_id: str = field(default_factory=confirmation_id)

    @property
    def hint(self) -> str:
        return f"Tool '{self.name}' requires approval before execution."


@dataclass(frozen=True)
class Question:
    """One `ask_user` question; `choices` empty means free text."""

    question: str
    choices: Sequence[str] = ()
    multiple: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "choices": list(self.choices), "multiple": self.multiple}


def approval_hint(tools: Sequence[PendingTool]) -> str:
    """The text kagent puts on an approval pause (captured verbatim)."""
    hints = "; ".join(tool.hint for tool in tools)
    return f"{hints} ({', '.join(tool.name for tool in tools)})"


def questions_hint(questions: Sequence[Question]) -> str:
    return "; ".join(question.question for question in questions)
