"""Durations as manifests write them: ``45s``, ``30m``, ``1h30m``, ``90d``."""

from __future__ import annotations

import re
from datetime import timedelta

DURATION_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_DURATION_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def parse_duration(text: str) -> timedelta:
    """Parse ``45s``, ``30m``, ``1h30m``, ``90d``: whole numbers of units, largest unit first."""
    match = DURATION_RE.fullmatch(text)
    if not text or match is None:
        raise ValueError(f"not a duration: {text!r}")
    seconds = sum(int(n) * size for n, (_, size) in zip(match.groups(), _DURATION_UNITS, strict=True) if n)
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The canonical form: each unit at most once, largest first, zero units left out (``1h30m``)."""
    seconds = int(value.total_seconds())
    if seconds <= 0:
        return "0s"
    parts = []
    for unit, size in _DURATION_UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
