"""The audit's hash chain: what a row's hash covers, and where a chain of rows first breaks. No I/O.

Each row's ``hash`` is taken over one canonical JSON object: the row's content fields
(``CHAINED_FIELDS``) and ``previous_hash``, the hash of the row before it in id order (``GENESIS``
for the first). Changing, removing or inserting a row breaks the chain at that row or the next one.
The format is fixed: rows already written are checked against it forever.

With the audit key (``AUDIT_KEY``, kept outside the database) the hash is an HMAC-SHA256 under it,
and the row names the key by its id (``key_id``, never the key): someone who can write the table but
does not hold the key can neither change a row nor append one whose hash verifies. Without it the
hash is a plain SHA-256, which shows a change but not a rewrite (anyone can recompute it). A chain
cut at its end still verifies: only a head kept outside the database (``Head``, signed with the key)
shows that rows are missing after it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
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
NOT_KEYED = (
    "it is not hashed with the audit key: it was written before AUDIT_KEY was set (run manage.py audit"
    " rekey, docs/operations.md), or appended by someone without the key"
)
OTHER_KEY = "it is hashed with another audit key (key id {row_key}), not AUDIT_KEY's (key id {key})"
KEY_NOT_SET = "it is hashed with an audit key (key id {row_key}), and AUDIT_KEY is not set here"
HOLDS = "The audit chain holds: every row matches its hash and the row before it. Rows: {count}."
BREAKS = "The audit chain breaks at row {row_id}: {why}. Rows before it that match: {count}."


def canonical(previous_hash: str, content: Mapping[str, Any]) -> bytes:
    """The bytes a hash is taken over: sorted keys, no spaces, UTF-8, time in UTC to the microsecond."""
    document = {name: _plain(content[name]) for name in CHAINED_FIELDS}
    document["previous_hash"] = previous_hash
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(previous_hash: str, content: Mapping[str, Any], key: bytes | None = None) -> str:
    """The row's hash: HMAC-SHA256 under ``key``, or a plain SHA-256 without one."""
    data = canonical(previous_hash, content)
    if key is None:
        return hashlib.sha256(data).hexdigest()
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def key_id(key: bytes) -> str:
    """What a row keyed with ``key`` names it by: not the key, nothing to find it from."""
    return hmac.new(key, b"kourier audit key id", hashlib.sha256).hexdigest()[:16]


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


def first_break(
    rows: Iterable[Mapping[str, Any]], key: bytes | None = None, *, unkeyed_too: bool = False
) -> tuple[int, Break | None]:
    """Walks rows in id order (each with ``id``, ``previous_hash``, ``hash``, ``key_id`` and the
    chained fields): how many matched, and the first that does not (None when all do).

    With ``key`` every row must be keyed with it; ``unkeyed_too`` also takes a row hashed without a
    key (``audit rekey`` reads the chain so, before it keys every row). Without ``key`` every row must
    be unkeyed: a keyed row cannot be checked."""
    own_key = key_id(key) if key is not None else ""
    previous_id: int | None = None
    previous_hash = GENESIS
    matched = 0
    for row in rows:
        if not row["hash"]:
            return matched, Break(row["id"], NO_HASH)
        row_key = row.get("key_id") or ""
        if row_key and key is None:
            return matched, Break(row["id"], KEY_NOT_SET.format(row_key=row_key))
        if row_key and row_key != own_key:
            return matched, Break(row["id"], OTHER_KEY.format(row_key=row_key, key=own_key))
        if not row_key and key is not None and not unkeyed_too:
            return matched, Break(row["id"], NOT_KEYED)
        if row["previous_hash"] != previous_hash:
            why = NOT_FIRST if previous_id is None else NOT_NEXT.format(previous_id=previous_id)
            return matched, Break(row["id"], why)
        if digest(row["previous_hash"], row, key if row_key else None) != row["hash"]:
            return matched, Break(row["id"], NOT_ITS_HASH)
        previous_id, previous_hash = row["id"], row["hash"]
        matched += 1
    return matched, None


# -- the head kept outside the database ---------------------------------------------------------------

HEAD_HOLDS = "The chain passes through the head you kept: row {row_id} of {at}, {rows} rows up to it."
HEAD_CUT = (
    "The chain no longer reaches the head you kept (row {row_id} of {at}): rows were cut from its end, or "
    "the head is not this audit's"
)
HEAD_CHANGED = "Row {row_id}, the head you kept, has another hash now: the chain was rewritten up to it"
HEAD_COUNT = "Up to row {row_id}, the head you kept, the chain has {found} rows where it had {rows}"
HEAD_UNSIGNED = "The head you kept is not signed with AUDIT_KEY's key (key id {key}): it cannot be trusted"
HEAD_UNREADABLE = "The head you kept cannot be read: {why}"


@dataclass(frozen=True)
class Head:
    """The chain's last row as it was when exported (``manage.py audit head``): kept where the operator
    keeps it, outside the database, it shows rows cut from the chain's end since. Signed with the
    audit key when there is one, so that a head cannot be made up."""

    row_id: int
    hash: str
    rows: int
    at: str
    key_id: str = ""
    signature: str = ""

    def signed_part(self) -> bytes:
        return f"kourier audit head|{self.row_id}|{self.hash}|{self.rows}|{self.at}|{self.key_id}".encode()

    def signed_with(self, key: bytes | None) -> Head:
        """The head signed with ``key`` (as it is, unsigned, without one)."""
        if key is None:
            return replace(self, key_id="", signature="")
        unsigned = replace(self, key_id=key_id(key), signature="")
        return replace(unsigned, signature=unsigned.sign(key))

    def sign(self, key: bytes) -> str:
        return hmac.new(key, self.signed_part(), hashlib.sha256).hexdigest()

    def to_json(self) -> str:
        return json.dumps(
            {"row": self.row_id, "hash": self.hash, "rows": self.rows, "at": self.at, "key_id": self.key_id,
             "signature": self.signature},
            separators=(",", ":"),
        )  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> Head:
        """Raises ValueError with a sentence when the text is not a head."""
        try:
            data = json.loads(text)
            return cls(
                row_id=int(data["row"]), hash=str(data["hash"]), rows=int(data["rows"]), at=str(data["at"]),
                key_id=str(data.get("key_id", "")), signature=str(data.get("signature", "")),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError("it is not the JSON object manage.py audit head writes") from error


def head_problem(
    head: Head, found: Mapping[str, Any] | None, rows_up_to: int, key: bytes | None
) -> str | None:
    """Why the chain does not pass through ``head`` (``found``: its row now, with ``hash``; ``rows_up_to``:
    how many rows have an id up to it), or None when it does."""
    if key is not None and not hmac.compare_digest(head.signature, head.sign(key)):
        return HEAD_UNSIGNED.format(key=key_id(key))
    if found is None:
        return HEAD_CUT.format(row_id=head.row_id, at=head.at)
    if found["hash"] != head.hash:
        return HEAD_CHANGED.format(row_id=head.row_id)
    if rows_up_to != head.rows:
        return HEAD_COUNT.format(row_id=head.row_id, found=rows_up_to, rows=head.rows)
    return None
