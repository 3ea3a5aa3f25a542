"""The ``a2a`` dialect: any A2A agent.

A pause it can put to people is a text-only ``input-required``: one free-text question, answered with
a plain user message to the paused task. A pause with structured parts (data, files), one whose
message declares an extension, or an ``auth-required`` pause cannot be used: the reader reports ``UnusablePause`` and the runner cancels the
task and tells the thread (spec: "Let the agent ask questions").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kourier.a2a.dialects.reader import Pause, TurnReader, visible_text
from kourier.a2a.events import (
    AgentEvent,
    AnswerFormat,
    ApprovalRequest,
    AskedQuestion,
    Decision,
    Question,
    UnusablePause,
)
from kourier.a2a.wire import Message, Role, TaskState, TextPart

NAME = "a2a"
EXTENSIONS: tuple[str, ...] = ()  # nothing to opt into


def reader() -> TurnReader:
    """A reader for one turn of a generic A2A agent."""
    return TurnReader(read_pause)


def read_pause(pause: Pause) -> AgentEvent:
    if pause.state is TaskState.AUTH_REQUIRED:
        return UnusablePause(reason="auth-required", task_id=pause.task_id, context_id=pause.context_id)
    parts = pause.message.parts if pause.message is not None else ()
    # A message that declares an extension says what it wants in that extension's terms, which a
    # plain text answer does not speak (kagent's hitl/v1 pauses carry their text only as a hint).
    declares_extension = pause.message is not None and bool(pause.message.extensions)
    if declares_extension or any(not isinstance(part, TextPart) for part in parts):
        return UnusablePause(reason="structured-input", task_id=pause.task_id, context_id=pause.context_id)
    # A pause with no text at all is still a question: the agent waits for whatever the person says.
    return Question(
        questions=(AskedQuestion(text=visible_text(parts)),),
        task_id=pause.task_id,
        context_id=pause.context_id,
        answer_format=AnswerFormat.TEXT,
    )


def answer_message(question: Question, answers: Sequence[Sequence[str]], *, message_id: str) -> Message:
    """The reply to a text question: the person's text, as a user message to the paused task.

    ``answers`` holds one answer (a list of strings, joined by newlines) for the one question.
    """
    if question.answer_format is not AnswerFormat.TEXT:
        raise ValueError(f"the a2a dialect answers text questions, not {question.answer_format}")
    if len(answers) != 1:
        raise ValueError("a text question takes exactly one answer")
    return Message(
        message_id=message_id,
        role=Role.USER,
        parts=(TextPart(text="\n".join(answers[0])),),
        task_id=question.task_id,
        context_id=question.context_id,
    )


def decision_message(
    request: ApprovalRequest, decisions: Mapping[str, Decision], *, message_id: str
) -> Message:
    """The a2a dialect never reports an approval request, so there is nothing to decide."""
    raise ValueError("the a2a dialect has no tool approvals")
