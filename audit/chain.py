"""The audit's hash chain: what a row's hash covers, and where a chain of rows first breaks. No I/O.

Each row's ``hash`` is the SHA-256, in hex, of one canonical JSON object: the row's content fields
(``CHAINED_FIELDS``) and ``previous_hash``, the hash of the row before it in id order (``GENESIS``
for the first). Changing, removing or inserting a row breaks the chain at that row or the next one.
The format is fixed: rows already written are checked against it forever.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# What a row's hash covers, besides the hash before it. The id is not covered: it is the chain's order.
CHAINED_FIELDS = (
    "at", "action", "binding_name", "actor_kind", "actor_id", "requester", "policy", "subject", "details",
)  # fmt: skip
GENESIS = "0" * 64

# What ``manage.py audit verify`` says of the first row that does not match (docs/security.md).
NO_HASH = (
    "it has no hash: it was written around the audit's one writer, or during an upgrade by the release"
    " before the chain (the next append chains such rows at the end)"
)
NOT_ITS_HASH = "its content does not match its hash"
NOT_FIRST = "its previous_hash is not the chain's start, though no row comes before it"
NOT_NEXT = "its previous_hash is not the hash of row {previous_id}, the row before it"
HOLDS = "The audit chain holds: every row matches its hash and the row before it. Rows: {count}."
BREAKS = "The audit chain breaks at row {row_id}: {why}. Rows before it that match: {count}."


def canonical(previous_hash: str, content: Mapping[str, Any]) -> bytes:
    """The bytes a hash is taken over: sorted keys, no spaces, UTF-8, time in UTC to the microsecond."""
    document = {name: _plain(content[name]) for name in CHAINED_FIELDS}
    document["previous_hash"] = previous_hash
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(previous_hash: str, content: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(previous_hash, content)).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="microseconds")
    return value


@dataclass(frozen=True)
class Break:
    """The first row of a chain that does not match, and why."""

    row_id: int
    why: str


def verdict(matched: int, broken: Break | None) -> str:
    if broken is None:
        return HOLDS.format(count=matched)
    return BREAKS.format(row_id=broken.row_id, why=broken.why, count=matched)


def first_break(rows: Iterable[Mapping[str, Any]]) -> tuple[int, Break | None]:
    """Walks rows in id order (each with ``id``, ``previous_hash``, ``hash`` and the chained fields):
    how many matched, and the first that does not (None when all do)."""
    previous_id: int | None = None
    previous_hash = GENESIS
    matched = 0
    for row in rows:
        if not row["hash"]:
            return matched, Break(row["id"], NO_HASH)
        if row["previous_hash"] != previous_hash:
            why = NOT_FIRST if previous_id is None else NOT_NEXT.format(previous_id=previous_id)
            return matched, Break(row["id"], why)
        if digest(row["previous_hash"], row) != row["hash"]:
            return matched, Break(row["id"], NOT_ITS_HASH)
        previous_id, previous_hash = row["id"], row["hash"]
        matched += 1
    return matched, None
