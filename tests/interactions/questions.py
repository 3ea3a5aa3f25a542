"""The agent's questions, as the dialects read them, for the interactions app's tests."""

from kourier.a2a.events import AnswerFormat, AskedQuestion, Question


def choices(count: int, *, name: str = "Option") -> tuple[str, ...]:
    return tuple(f"{name} {number}" for number in range(1, count + 1))


def asked(
    text: str = "Which region?", choices: tuple[str, ...] = (), *, multiple: bool = False
) -> AskedQuestion:
    return AskedQuestion(text=text, choices=choices, multiple=multiple)


def question(
    *questions: AskedQuestion,
    agent: str | None = None,
    answer_format: AnswerFormat = AnswerFormat.HITL_V1,
    task_id: str = "task-1",
) -> Question:
    """A kagent hitl/v1 pause (several questions, answered with Submit) unless told otherwise."""
    return Question(
        questions=questions or (asked(),),
        task_id=task_id,
        context_id="context-1",
        answer_format=answer_format,
        agent=agent,
        answer_id="answer-id-1" if answer_format is AnswerFormat.HITL_V1 else None,
    )


def text_question(text: str = "What should the release be called?", *, task_id: str = "task-1") -> Question:
    """The a2a dialect's text-only pause: one text question, which a typed reply can answer."""
    return question(asked(text), answer_format=AnswerFormat.TEXT, task_id=task_id)


REGIONS = ("Europe", "North America", "Asia Pacific")
ONE_OF_THREE = asked("Which region?", REGIONS)
SEVERAL_OF_THREE = asked("Which regions?", REGIONS, multiple=True)
FREE_TEXT = asked("Anything else?")
