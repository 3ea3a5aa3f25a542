"""Reading ``spec.chat.files`` (issue 30): which files a person shares go to the agent, and which files
the agent returns go to the thread (sessions/file_rules.py, sessions/files_in.py, sessions/files_out.py)."""

from __future__ import annotations

import re
from typing import Any

from .checker import MISSING, Checker, show, value_at
from .limits import MAX_FILE_BYTES, MAX_FILE_TYPES, MAX_FILES_OUT
from .specs import (
    DEFAULT_FILE_TYPES,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES_OUT,
    DEFAULT_MAX_TURN_FILE_BYTES,
    FilesSpec,
)

FILES_FIELDS = ("types", "maxFileBytes", "maxTurnBytes", "maxFilesOut", "fromUrls")
PATH = "spec.chat.files"
# A media type as agent cards name them: "image/png", a family "image/*", or anything "*/*".
_MEDIA_TYPE = re.compile(r"^(\*/\*|[a-z0-9][a-z0-9!#$&^_.+-]*/(\*|[a-z0-9][a-z0-9!#$&^_.+-]*))$")


def read_files(check: Checker, value: Any) -> FilesSpec | None:
    """The section (a mapping of its fields, each optional), or None when refused."""
    section = check.mapping(value, PATH, FILES_FIELDS)
    if section is None:
        return None
    types = _types(check, value_at(section, "types"))
    file_bytes = _whole(check, value_at(section, "maxFileBytes"), "maxFileBytes", 1, DEFAULT_MAX_FILE_BYTES)
    turn_bytes = _whole(
        check, value_at(section, "maxTurnBytes"), "maxTurnBytes", 1, DEFAULT_MAX_TURN_FILE_BYTES
    )
    files_out = _whole(
        check, value_at(section, "maxFilesOut"), "maxFilesOut", 0, DEFAULT_MAX_FILES_OUT, MAX_FILES_OUT
    )
    from_urls = _urls(check, value_at(section, "fromUrls"))
    if types is None or file_bytes is None or turn_bytes is None or files_out is None or from_urls is None:
        return None
    return FilesSpec(
        types=types,
        max_file_bytes=file_bytes,
        max_turn_bytes=turn_bytes,
        max_files_out=files_out,
        from_urls=from_urls,
    )


def _types(check: Checker, value: Any) -> tuple[str, ...] | None:
    if value is MISSING:
        return DEFAULT_FILE_TYPES
    path = f"{PATH}.types"
    if not isinstance(value, list) or len(value) > MAX_FILE_TYPES:
        check.error(path, f"must be a list of at most {MAX_FILE_TYPES} media types (got {show(value)})")
        return None
    for item in value:
        if not isinstance(item, str) or not _MEDIA_TYPE.match(item):
            check.error(path, f"must name media types such as image/png or text/* (got {show(item)})")
            return None
    return tuple(dict.fromkeys(value))


def _whole(
    check: Checker, value: Any, name: str, low: int, default: int, high: int = MAX_FILE_BYTES
) -> int | None:
    if value is MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        check.error(f"{PATH}.{name}", f"must be a whole number from {low} to {high} (got {show(value)})")
        return None
    return value


def _urls(check: Checker, value: Any) -> tuple[str, ...] | None:
    if value is MISSING:
        return ()
    path = f"{PATH}.fromUrls"
    if not isinstance(value, list):
        check.error(path, f"must be a list of URL prefixes (got {show(value)})")
        return None
    for item in value:
        # A prefix names a host and a path, so that it cannot be matched by another host's URL.
        if not isinstance(item, str) or not re.match(r"^https?://[^/\s]+/\S*$", item):
            check.error(path, f"must be URL prefixes such as https://files.example.com/ (got {show(item)})")
            return None
    return tuple(value)
