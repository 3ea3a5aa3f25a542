"""Reading ``spec.chat.threadContext``: whether a mention that starts a session in a thread Kourier
did not start carries the thread so far, and how much of it (sessions/thread_context.py)."""

from __future__ import annotations

from typing import Any

from .checker import MISSING, Checker, show, value_at
from .limits import MAX_THREAD_CONTEXT_CHARACTERS, MAX_THREAD_CONTEXT_MESSAGES, MIN_THREAD_CONTEXT_CHARACTERS
from .specs import (
    DEFAULT_THREAD_CONTEXT_ENABLED,
    DEFAULT_THREAD_CONTEXT_MAX_CHARACTERS,
    DEFAULT_THREAD_CONTEXT_MAX_MESSAGES,
    ThreadContextSpec,
)

THREAD_CONTEXT_FIELDS = ("enabled", "maxMessages", "maxCharacters")
PATH = "spec.chat.threadContext"


def read_thread_context(check: Checker, value: Any) -> ThreadContextSpec | None:
    """The section (a mapping of its fields, each optional), or None when refused."""
    section = check.mapping(value, PATH, THREAD_CONTEXT_FIELDS)
    if section is None:
        return None
    enabled = check.boolean(value_at(section, "enabled"), f"{PATH}.enabled", DEFAULT_THREAD_CONTEXT_ENABLED)
    messages = _whole_number(
        check,
        value_at(section, "maxMessages"),
        f"{PATH}.maxMessages",
        (1, MAX_THREAD_CONTEXT_MESSAGES),
        DEFAULT_THREAD_CONTEXT_MAX_MESSAGES,
    )
    characters = _whole_number(
        check,
        value_at(section, "maxCharacters"),
        f"{PATH}.maxCharacters",
        (MIN_THREAD_CONTEXT_CHARACTERS, MAX_THREAD_CONTEXT_CHARACTERS),
        DEFAULT_THREAD_CONTEXT_MAX_CHARACTERS,
    )
    if messages is None or characters is None:
        return None
    return ThreadContextSpec(enabled=enabled, max_messages=messages, max_characters=characters)


def _whole_number(check: Checker, value: Any, path: str, bounds: tuple[int, int], default: int) -> int | None:
    if value is MISSING:
        return default
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        check.error(path, f"must be a whole number from {low} to {high} (got {show(value)})")
        return None
    return value
