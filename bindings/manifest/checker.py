"""Reading one field of a manifest: the checks every section's reader shares, and their wording.

A refusal names the resource and the field path; a value the operator wrote is shown back (``show``),
but never one that may be a secret.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from enum import StrEnum
from typing import Any, TypeVar

from .durations import format_duration, parse_duration
from .limits import ENV_NAME_MAX_LENGTH, ENV_NAME_RE, MAX_DURATION
from .problems import Problem
from .secret_refs import FROM_ENV, FROM_FILE, SOURCES, file_path_problem

# What ``value_at`` gives for a field absent or set to null: the field takes the spec's default.
MISSING = object()
E = TypeVar("E", bound=StrEnum)
SECRET_FIELDS = SOURCES


def show(value: Any) -> str:
    """A value as the operator wrote it, for "(got ...)"; long strings are cut."""
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 60 else value[:57] + "...")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return type_name(value)


def type_name(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class Checker:
    """Reads one document, recording each refusal against its field path."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.errors: list[Problem] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(Problem(self.subject, path, message))

    def mapping(self, value: Any, path: str, allowed: Sequence[str]) -> dict[str, Any] | None:
        """A mapping with only the ``allowed`` keys, or None (refused). A missing mapping is empty."""
        if value is MISSING:
            return {}
        if not isinstance(value, dict):
            self.error(path, f"must be a mapping (got {show(value)})")
            return None
        for key in value:
            if key not in allowed:
                self.error(join_path(path, str(key)), _unknown_field(str(key), allowed))
        return {key: val for key, val in value.items() if key in allowed}

    def required(self, value: Any, path: str) -> bool:
        if value is MISSING:
            self.error(path, "is required")
            return False
        return True

    def string(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str):
            self.error(path, f"must be a string (got {show(value)})")
            return None
        return value

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        if value is MISSING:
            return default
        if not isinstance(value, bool):
            self.error(path, f"must be true or false (got {show(value)})")
            return default
        return value

    def choice(self, value: Any, path: str, choices: type[E], default: E) -> E:
        if value is MISSING:
            return default
        allowed = ", ".join(c.value for c in choices)
        if not isinstance(value, str) or value not in {c.value for c in choices}:
            self.error(path, f"must be one of {allowed} (got {show(value)})")
            return default
        return choices(value)

    def duration(self, value: Any, path: str, default: timedelta) -> timedelta:
        if value is MISSING:
            return default
        try:
            parsed = parse_duration(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        except OverflowError:
            parsed = MAX_DURATION + timedelta(days=1)  # beyond what Python holds: refused as too long
        if parsed is None:
            self.error(path, f"must be a duration such as 45s, 30m, 1h30m or 90d (got {show(value)})")
            return default
        if parsed <= timedelta(0):
            self.error(path, f"must be longer than zero (got {show(value)})")
        elif parsed > MAX_DURATION:
            self.error(path, f"must be at most {format_duration(MAX_DURATION)} (got {show(value)})")
        return parsed

    def env_reference(self, value: Any, path: str) -> str | None:
        """``{fromEnv: NAME}`` or ``{fromFile: /path}`` (``secret_refs``). A secret never appears in a
        manifest, so its value is never echoed."""
        if not isinstance(value, dict):
            self.error(
                path,
                "must be a reference to an environment variable or a file, {fromEnv: VARIABLE_NAME} "
                f"or {{fromFile: /path}}; a secret is never written in a manifest (got {type_name(value)})",
            )
            return None
        ref = self.mapping(value, path, SECRET_FIELDS)
        if ref is None:
            return None
        if not ref:
            self.required(MISSING, f"{path}.{FROM_ENV}")
            return None
        if len(ref) > 1:
            self.error(path, "must hold one of fromEnv and fromFile, not both")
            return None
        if FROM_FILE in ref:
            return self.file_path(ref[FROM_FILE], f"{path}.{FROM_FILE}")
        return self.env_name(ref[FROM_ENV], f"{path}.{FROM_ENV}")

    def file_path(self, value: Any, path: str) -> str | None:
        name = self.string(value, path)
        if name is None:
            return None
        # Not echoed, like a variable's name: a value here may well be the secret itself.
        problem = file_path_problem(name)
        if problem is None and len(name) > ENV_NAME_MAX_LENGTH:
            problem = f"must be at most {ENV_NAME_MAX_LENGTH} characters"
        if problem is not None:
            self.error(path, problem)
            return None
        return name

    def env_name(self, value: Any, path: str) -> str | None:
        name = self.string(value, path)
        if name is None:
            return None
        if not ENV_NAME_RE.fullmatch(name) or len(name) > ENV_NAME_MAX_LENGTH:
            # Not echoed: a value here that is not a variable name may well be the secret itself.
            self.error(
                path,
                "must be an environment variable name: letters, digits and underscores, "
                f"not starting with a digit, at most {ENV_NAME_MAX_LENGTH} characters",
            )
            return None
        return name

    def id_list(
        self, value: Any, path: str, pattern: re.Pattern[str], what: str, example: str
    ) -> list[tuple[int, str]] | None:
        """A list of Slack IDs, refusing wrong types, empty entries, bad shapes and duplicates."""
        if not isinstance(value, list):
            self.error(path, f"must be a list (got {show(value)})")
            return None
        entries: list[tuple[int, str]] = []
        seen: set[str] = set()
        for i, entry in enumerate(value):
            entry_path = f"{path}[{i}]"
            if not isinstance(entry, str):
                self.error(entry_path, f"must be a string (got {show(entry)})")
            elif not entry.strip():
                self.error(entry_path, "must not be empty")
            elif not pattern.fullmatch(entry):
                self.error(entry_path, f"must be a Slack {what} ID such as {example} (got {show(entry)})")
            elif entry in seen:
                self.error(entry_path, f"duplicate entry {show(entry)}")
            else:
                seen.add(entry)
                entries.append((i, entry))
        return entries


def _unknown_field(key: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    if close:
        return f'unknown field (did you mean "{close[0]}"?)'
    return f"unknown field (expected one of: {', '.join(allowed)})"


def value_at(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """The value of a field, or MISSING when it is absent or null."""
    if mapping is None:
        return MISSING
    value = mapping.get(key, MISSING)
    return MISSING if value is None else value
