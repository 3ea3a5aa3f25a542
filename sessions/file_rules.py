"""Pure: which files a person shares go to the agent (issue 30, point 2), which files the agent returns
go to the thread (point 3), and the fixed lines that say what did not.

A file goes to the agent when its media type is one the Binding allows (``spec.chat.files.types``) and
one the agent's card takes (its ``defaultInputModes``), it is at most ``maxFileBytes``, and the turn's
files so far leave room for it under ``maxTurnBytes``. What does not go is named in one line of the
thread, in the order shared: ``Not sent to the agent: big.zip (type not allowed), huge.pdf (too big)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bindings.manifest import FilesSpec
from kourier.redaction import redact_text

# The fixed wordings (docs/manifests.md, "Files").
NOT_SENT_LINE = "Not sent to the agent: {files}"
NOT_UPLOADED_LINE = "Not uploaded to the thread: {files}"
TYPE_NOT_ALLOWED = "type not allowed"
TYPE_NOT_TAKEN = "type the agent does not take"
TOO_BIG = "too big"
OVER_TURN_LIMIT = "over the turn's limit"
UNREACHABLE = "could not be downloaded"
NO_SCOPE = "the app lacks the files:read scope"
TOO_MANY = "too many files"
UPLOAD_FAILED = "could not be uploaded"
URL_NOT_ALLOWED = "its address is not allowed"

# An agent card that names no input modes is taken to take text only (A2A's own default mode).
DEFAULT_INPUT_MODES = ("text/plain",)


@dataclass(frozen=True)
class Refused:
    name: str
    reason: str


def matches(pattern: str, media_type: str) -> bool:
    """Whether a media type is one a pattern names: ``*/*`` or ``*`` any, ``image/*`` a family, a
    bare family (``text``, as kagent's cards say) its family, else the type itself (parameters and
    case aside)."""
    pattern = pattern.split(";")[0].strip().lower()
    kind = media_type.split(";")[0].strip().lower()
    if pattern in ("*", "*/*"):
        return True
    if "/" not in pattern:
        return kind.split("/")[0] == pattern
    family, _, sub = pattern.partition("/")
    return kind == pattern or (sub == "*" and kind.split("/")[0] == family)


def allowed(patterns: Iterable[str], media_type: str) -> bool:
    return any(matches(pattern, media_type) for pattern in patterns)


def first_refusal(media_type: str, size: int, spec: FilesSpec, input_modes: Sequence[str]) -> str | None:
    """Why a file cannot go, from what Slack says of it before it is downloaded; None when it may."""
    if not allowed(spec.types, media_type):
        return TYPE_NOT_ALLOWED
    if not allowed(input_modes or DEFAULT_INPUT_MODES, media_type):
        return TYPE_NOT_TAKEN
    if size > spec.max_file_bytes:
        return TOO_BIG
    return None


def not_sent_line(refused: Sequence[Refused]) -> str:
    return NOT_SENT_LINE.format(files=", ".join(f"{r.name} ({r.reason})" for r in refused))


def not_uploaded_line(refused: Sequence[Refused]) -> str:
    return NOT_UPLOADED_LINE.format(files=", ".join(f"{r.name} ({r.reason})" for r in refused))


def is_text(media_type: str) -> bool:
    kind = media_type.split(";")[0].strip().lower()
    return kind.startswith("text/") or kind in ("application/json", "application/x-ndjson")


def redacted(content: bytes, media_type: str) -> bytes:
    """A text file's bytes with its secrets redacted as message text is (kourier/redaction.py); any
    other file's as they are. Bytes that are not UTF-8 are read with replacement characters."""
    if not is_text(media_type):
        return content
    return redact_text(content.decode("utf-8", errors="replace")).encode("utf-8")
