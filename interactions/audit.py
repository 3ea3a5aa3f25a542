"""What the audit keeps of an answer (its shape, never its text) and of a tool decision (counts and
cleaned tool names, never arguments or rejection text): design invariant 6. Pure."""

from __future__ import annotations

from typing import Any

from kourier.a2a.events import Question
from kourier.redaction import redact_text, shorten

# Free-text lengths are kept as a bucket, so that no answer can be told from its length.
LENGTH_BUCKETS = ((0, "empty"), (20, "1-20"), (100, "21-100"), (500, "101-500"))


def length_bucket(length: int) -> str:
    for limit, name in LENGTH_BUCKETS:
        if length <= limit:
            return name
    return "over 500"


def answer_shape(question: Question, answers: list[list[str]]) -> dict[str, Any]:
    """Which questions were answered, how many choices each picked, and free text's length bucket."""
    shape: list[dict[str, Any]] = []
    for index, (asked, answer) in enumerate(zip(question.questions, answers, strict=True)):
        if asked.choices:
            shape.append({"question": index + 1, "choices": len(asked.choices), "picked": len(answer)})
        else:
            shape.append(
                {"question": index + 1, "text_length": length_bucket(sum(len(part) for part in answer))}
            )
    return {"questions": len(question.questions), "answers": shape, "agent": question.agent or ""}


def clean_tool_name(name: str) -> str:
    """A tool's name as the audit keeps it: redacted, one line, at most 100 characters."""
    return shorten(" ".join(redact_text(name).split()), 100)


def decision_shape(tool_names: list[str], verdicts: tuple[bool, ...] | list[bool]) -> dict[str, Any]:
    """Counts and cleaned tool names of a decision, never arguments or rejection text."""
    approved = [clean_tool_name(name) for name, ok in zip(tool_names, verdicts, strict=True) if ok]
    denied = [clean_tool_name(name) for name, ok in zip(tool_names, verdicts, strict=True) if not ok]
    return {
        "tools": len(tool_names),
        "approved": len(approved),
        "denied": len(denied),
        "approved_tools": approved,
        "denied_tools": denied,
    }
