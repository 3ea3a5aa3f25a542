"""The generic a2a dialect: text-only pauses are questions, anything else is unusable."""

import pytest

from kourier.a2a.dialects import a2a, dialect_for, kagent
from kourier.a2a.events import (
    AnswerFormat,
    ApprovalRequest,
    AskedQuestion,
    Question,
    TaskEnded,
    TextDelta,
    ToolCall,
    ToolResult,
    UnusablePause,
)
from kourier.a2a.wire import DataPart, FilePart, Message, Role, StatusUpdate, TaskState, TextPart
from tests.a2a.transcripts import V010, V1ALPHA, exchanges, read, wire_events

T, C = "task-1", "ctx-1"


def pause(*parts, state=TaskState.INPUT_REQUIRED):
    message = Message("m", Role.AGENT, parts) if parts else None
    return StatusUpdate(T, C, state, message, final=True)


def test_dialect_interface():
    dialect = dialect_for("a2a")
    assert (dialect.name, dialect.extensions) == ("a2a", ())


def test_a_text_only_pause_is_one_text_question():
    events = a2a.reader().feed(pause(TextPart("Which environment, "), TextPart("staging or prod?")))
    assert events[1:] == [
        Question(
            questions=(AskedQuestion("Which environment, staging or prod?"),),
            task_id=T,
            context_id=C,
            answer_format=AnswerFormat.TEXT,
        ),
        TaskEnded(TaskState.INPUT_REQUIRED, "Which environment, staging or prod?"),
    ]
    # The question is the prompt, not reply text.
    assert not [event for event in events if isinstance(event, TextDelta)]


def test_a_pause_without_a_message_still_waits_for_a_reply():
    [_, question, ended] = a2a.reader().feed(pause())
    assert question.questions == (AskedQuestion(""),)
    assert ended == TaskEnded(TaskState.INPUT_REQUIRED)


@pytest.mark.parametrize(
    "parts",
    [
        (TextPart("Fill this in"), DataPart({"form": {"name": "string"}})),
        (FilePart(url="https://example.test/form.pdf"),),
    ],
)
def test_a_structured_pause_is_unusable(parts):
    events = a2a.reader().feed(pause(*parts))
    assert events[1:] == [
        UnusablePause("structured-input", T, C),
        TaskEnded(TaskState.INPUT_REQUIRED, "Fill this in" if len(parts) == 2 else None),
    ]


def test_auth_required_is_unusable_and_ends_the_turn_as_a_pause():
    events = a2a.reader().feed(pause(TextPart("Sign in first"), state=TaskState.AUTH_REQUIRED))
    assert events[1:] == [
        UnusablePause("auth-required", T, C),
        TaskEnded(TaskState.INPUT_REQUIRED, "Sign in first"),
    ]


def test_the_answer_is_a_user_text_message_to_the_paused_task():
    question = Question((AskedQuestion("Which environment?"),), T, C, AnswerFormat.TEXT)
    message = a2a.answer_message(question, [["Slack: Ada (U1): prod"]], message_id="answer-1")
    assert message == Message(
        "answer-1", Role.USER, (TextPart("Slack: Ada (U1): prod"),), context_id=C, task_id=T
    )


def test_answers_that_do_not_fit_a_text_question_are_refused():
    question = Question((AskedQuestion("?"),), T, C, AnswerFormat.TEXT)
    with pytest.raises(ValueError, match="exactly one answer"):
        a2a.answer_message(question, [["a"], ["b"]], message_id="x")
    structured = Question((AskedQuestion("?"),), T, C, AnswerFormat.HITL_V1, answer_id="q")
    with pytest.raises(ValueError, match="text questions"):
        a2a.answer_message(structured, [["a"]], message_id="x")
    with pytest.raises(ValueError, match="no tool approvals"):
        a2a.decision_message(
            ApprovalRequest((), T, C, AnswerFormat.TEXT),
            {},
            message_id="x",
        )


@pytest.mark.parametrize(
    ("line", "name"),
    [
        (V010, "01_two_tools_approve_one_deny_one"),
        (V1ALPHA, "01_two_tools_approve_one_deny_one"),
        (V010, "03_ask_user"),
    ],
)
def test_kagent_pauses_are_unusable_but_tools_and_text_read_as_in_the_kagent_dialect(line, name):
    for exchange in exchanges(line, name):
        if exchange.method not in ("message/stream", "SendStreamingMessage"):
            continue
        wire = wire_events(line, exchange)
        generic, kagent_events = read(a2a.reader(), wire), read(kagent.reader(), wire)

        def content(events):
            return [
                event for event in events if isinstance(event, TextDelta | ToolCall | ToolResult | TaskEnded)
            ]

        assert content(generic) == content(kagent_events)
        if kagent_events[-1].state is TaskState.INPUT_REQUIRED:
            assert isinstance(generic[-2], UnusablePause)


def test_a_pause_in_an_extension_is_unusable_even_with_a_text_part():
    message = Message(
        "m",
        Role.AGENT,
        (TextPart("Tool 'x' requires approval"),),
        metadata={"urn:ext": {"type": "approval"}},
        extensions=("urn:ext",),
    )
    events = a2a.reader().feed(StatusUpdate(T, C, TaskState.INPUT_REQUIRED, message, final=True))
    assert events[1] == UnusablePause("structured-input", T, C)
