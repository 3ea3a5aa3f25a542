"""What a question looks like in the thread: the prompt's Block Kit, open and closed. Pure.

Each question is an ``input`` block, so choosing an option sends nothing; the Submit button sends the
whole prompt's ``state.values`` at once. The button's value is the Interaction's id: a press finds
its Interaction from the payload alone, after any restart.

By its choices a question is a text input (none), radio buttons or checkboxes (up to 10), a select
or multi-select (up to 100), or, above that, a numbered list with a text box for the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from kourier.a2a.events import AskedQuestion, Question
from kourier.slack.mrkdwn import escape

SUBMIT_ACTION = "kourier_submit_answer"
MAX_BUTTON_CHOICES = 10  # radio_buttons and checkboxes take at most 10 options
MAX_SELECT_CHOICES = 100  # a static select takes at most 100
MAX_OPTION_TEXT = 75
MAX_LABEL = 2000
MAX_SECTION_TEXT = 3000

TYPED_REPLY_HINT = "Answer here and press Submit, or reply in this thread: your first reply is the answer."


class Widget(StrEnum):
    TEXT = "plain_text_input"
    RADIO = "radio_buttons"
    CHECKBOXES = "checkboxes"
    SELECT = "static_select"
    MULTI_SELECT = "multi_static_select"
    NUMBERS = "numbers"  # a numbered list of the choices and a text box for the numbers


def widget_for(question: AskedQuestion) -> Widget:
    count = len(question.choices)
    if count == 0:
        return Widget.TEXT
    if count <= MAX_BUTTON_CHOICES:
        return Widget.CHECKBOXES if question.multiple else Widget.RADIO
    if count <= MAX_SELECT_CHOICES:
        return Widget.MULTI_SELECT if question.multiple else Widget.SELECT
    return Widget.NUMBERS


def block_id(index: int) -> str:
    return f"question-{index}"


def action_id(index: int) -> str:
    return f"answer-{index}"


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": _shorten(text, limit), "emoji": False}


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _options(choices: Sequence[str]) -> list[dict[str, Any]]:
    # The value is the choice's index: the answer sent to the agent is the stored choice, whole.
    return [
        {"text": _plain(choice, MAX_OPTION_TEXT), "value": str(index)} for index, choice in enumerate(choices)
    ]


def asker(question: Question) -> str:
    return f"The sub-agent *{escape(question.agent)}* asks" if question.agent else "The agent asks"


def open_prompt(question: Question, interaction_id: int, *, typed_replies: bool) -> list[dict[str, Any]]:
    """The prompt as it waits for an answer."""
    count = len(question.questions)
    blocks: list[dict[str, Any]] = [
        {
            "type": "section",
            "block_id": "asker",
            "text": {
                "type": "mrkdwn",
                "text": f"{asker(question)} {'a question' if count == 1 else f'{count} questions'}:",
            },
        }
    ]
    for index, asked in enumerate(question.questions):
        blocks += _question_blocks(index, asked)
    if typed_replies:
        blocks.append(
            {
                "type": "context",
                "block_id": "typed-replies",
                "elements": [{"type": "plain_text", "text": TYPED_REPLY_HINT}],
            }
        )
    blocks.append(
        {
            "type": "actions",
            "block_id": "submit",
            "elements": [
                {
                    "type": "button",
                    "action_id": SUBMIT_ACTION,
                    "text": _plain("Submit", 75),
                    "style": "primary",
                    "value": str(interaction_id),
                }
            ],
        }
    )
    return blocks


def _question_blocks(index: int, asked: AskedQuestion) -> list[dict[str, Any]]:
    widget = widget_for(asked)
    blocks: list[dict[str, Any]] = []
    element: dict[str, Any] = {"type": widget.value, "action_id": action_id(index)}
    hint = None
    if widget is Widget.TEXT:
        element["multiline"] = True
    elif widget in (Widget.RADIO, Widget.CHECKBOXES, Widget.SELECT, Widget.MULTI_SELECT):
        element["options"] = _options(asked.choices)
        if widget in (Widget.SELECT, Widget.MULTI_SELECT):
            element["placeholder"] = _plain("Choose several" if asked.multiple else "Choose one", 150)
    else:
        blocks += numbered_choices(index, asked.choices)
        element = {"type": Widget.TEXT.value, "action_id": action_id(index)}
        hint = (
            "Type the numbers of your choices, separated by commas."
            if asked.multiple
            else "Type the number of your choice."
        )
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id(index),
        "label": _plain(asked.text, MAX_LABEL),
        "element": element,
        "optional": True,  # an empty answer is turned away with a message that says which is missing
    }
    if hint:
        block["hint"] = _plain(hint, MAX_LABEL)
    return [*blocks, block]


def numbered_choices(index: int, choices: Sequence[str]) -> list[dict[str, Any]]:
    """The choices of a long list as numbered lines, in as many sections as their length needs."""
    sections: list[dict[str, Any]] = []
    lines: list[str] = []
    size = 0
    for number, choice in enumerate(choices, start=1):
        line = f"{number}. {_escape(choice)}"
        if lines and size + len(line) + 1 > MAX_SECTION_TEXT:
            sections.append(_section(index, len(sections), lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    sections.append(_section(index, len(sections), lines))
    return sections


def _section(index: int, part: int, lines: list[str]) -> dict[str, Any]:
    return {
        "type": "section",
        "block_id": f"choices-{index}-{part}",
        "text": {"type": "mrkdwn", "text": _shorten("\n".join(lines), MAX_SECTION_TEXT)},
    }


def _escape(text: str) -> str:
    return escape(text)


def closed_prompt(question: Question, line: str) -> list[dict[str, Any]]:
    """The prompt once it is over: the questions without controls, and a line that says how it ended."""
    listed = "\n".join(f"• {_escape(asked.text)}" for asked in question.questions)
    return [
        {
            "type": "section",
            "block_id": "asker",
            "text": {"type": "mrkdwn", "text": _shorten(f"{asker(question)}:\n{listed}", MAX_SECTION_TEXT)},
        },
        {"type": "context", "block_id": "ended", "elements": [{"type": "mrkdwn", "text": line}]},
    ]


def answered_line(user_id: str, at: datetime) -> str:
    """Who answered and when, in each reader's own time zone (Slack's date formatting)."""
    stamp = int(at.timestamp())
    return f"Answered by <@{user_id}> <!date^{stamp}^{{date_short_pretty}} at {{time}}|at {at:%Y-%m-%d %H:%M} UTC>."


TIMED_OUT_LINE = "Nobody answered in time: this question timed out and the agent's task was cancelled."


def fallback_text(question: Question) -> str:
    """The notification's text (and what clients without blocks show)."""
    return (
        f"{asker(question)}: {escape(question.questions[0].text)}" if question.questions else asker(question)
    )
