"""Reading an answer from a Submit press: Slack's ``state.values`` against the stored questions. Pure.

The result is one list of strings per question, positional (what the dialects send back), or why
the press cannot be an answer: ``Incomplete`` (the person can fix it: a question left empty, a
number out of range) or ``Mismatch`` (the values do not fit the questions: a stale or forged press).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from kourier.a2a.events import AskedQuestion, Question
from kourier.slack.mrkdwn import escape

from .prompts import Widget, action_id, block_id, widget_for


@dataclass(frozen=True)
class Incomplete:
    """The answer cannot be taken as it is; ``message`` tells the person what to fix."""

    message: str


@dataclass(frozen=True)
class Mismatch:
    """The press does not fit the prompt's questions; ``reason`` is a fixed token for the log."""

    reason: str


Answers = list[list[str]]
_NUMBERS = re.compile(r"\s*\d+\s*(?:[,;\s]\s*\d+\s*)*")


def read_answers(question: Question, values: Mapping[str, Any]) -> Answers | Incomplete | Mismatch:
    answers: Answers = []
    problems: list[str] = []
    for index, asked in enumerate(question.questions):
        block = values.get(block_id(index), {})
        if not isinstance(block, Mapping):
            return Mismatch("block value not an object")
        read = _read_one(index, asked, block.get(action_id(index)))
        if isinstance(read, Mismatch):
            return read
        if isinstance(read, Incomplete):
            problems.append(read.message)
        else:
            answers.append(read)
    if problems:
        return Incomplete(" ".join(problems))
    return answers


def read_typed_reply(question: Question, text: str) -> Answers:
    """A reply typed in the thread answers the one text question it can answer."""
    return [[text]]


def _label(index: int, asked: AskedQuestion) -> str:
    return f"Question {index + 1} ({escape(_shorten(asked.text, 60))})"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _read_one(index: int, asked: AskedQuestion, entry: Any) -> list[str] | Incomplete | Mismatch:
    widget = widget_for(asked)
    if entry is None:
        return Incomplete(f"{_label(index, asked)} needs an answer.")
    if not isinstance(entry, Mapping):
        return Mismatch("value not an object")
    if widget in (Widget.TEXT, Widget.NUMBERS):
        text = entry.get("value")
        if text is not None and not isinstance(text, str):
            return Mismatch("text value not a string")
        if not text or not text.strip():
            return Incomplete(f"{_label(index, asked)} needs an answer.")
        return [text.strip()] if widget is Widget.TEXT else _numbers(index, asked, text)
    if widget in (Widget.RADIO, Widget.SELECT):
        option = entry.get("selected_option")
        if option is None:
            return Incomplete(f"{_label(index, asked)} needs a choice.")
        picked = _choices(asked, [option])
    else:
        options = entry.get("selected_options")
        if options is not None and not isinstance(options, list):
            return Mismatch("selected options not a list")
        if not options:
            return Incomplete(f"{_label(index, asked)} needs at least one choice.")
        picked = _choices(asked, options)
    return picked


def _choices(asked: AskedQuestion, options: list[Any]) -> list[str] | Mismatch:
    picked: list[str] = []
    for option in options:
        value = option.get("value") if isinstance(option, Mapping) else None
        if not _is_index(value) or int(value) >= len(asked.choices):
            return Mismatch("option not among the question's choices")
        choice = asked.choices[int(value)]
        if choice in picked:
            return Mismatch("option chosen twice")
        picked.append(choice)
    return picked


def _is_index(value: Any) -> TypeGuard[str]:
    # isdigit alone lets through digits int() refuses ("²").
    return isinstance(value, str) and value.isascii() and value.isdigit()


def _numbers(index: int, asked: AskedQuestion, text: str) -> list[str] | Incomplete:
    label = _label(index, asked)
    if not _NUMBERS.fullmatch(text):
        return Incomplete(f"{label}: type numbers from the list, separated by commas.")
    numbers = [int(number) for number in re.findall(r"\d+", text)]
    outside = [number for number in numbers if not 1 <= number <= len(asked.choices)]
    if outside:
        return Incomplete(f"{label}: {outside[0]} is not on the list (1 to {len(asked.choices)}).")
    if len(set(numbers)) != len(numbers):
        return Incomplete(f"{label}: each number may be given once.")
    if not asked.multiple and len(numbers) != 1:
        return Incomplete(f"{label}: choose just one number.")
    return [asked.choices[number - 1] for number in numbers]
