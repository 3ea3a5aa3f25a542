"""The audit as CSV: the rows a filtered list shows, with the columns its detail pages show, and each
row's place in the hash chain (``previous_hash``, ``hash``, and the id of the key it is hashed with,
``key_id``), so that an export can be checked too (with the key, for a keyed chain).

A spreadsheet reads a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a
formula, and a row's text is partly others' (a Slack user's, a tool's name): such a cell is written
with a ``'`` before it, as OWASP's CSV injection guidance says. So that an export can still be checked
against its hashes, the quote is added to every cell that begins with quotes and then one of those,
and ``read_cell`` takes exactly one away.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from itertools import islice
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import QuerySet

from .models import AuditEvent

COLUMNS = [
    "id", "at", "action", "binding_name", "actor_kind", "actor_id", "requester", "policy", "subject", "details",
    "previous_hash", "hash", "key_id",
]  # fmt: skip
BATCH_ROWS = 1000
# A cell a spreadsheet would run, after any quotes already there.
_FORMULA = re.compile(r"'*[=+\-@\t\r]")


def csv_text(rows: Iterable[Sequence[Any]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows([_cell(value) for value in row] for row in rows)
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict | list):
        value = json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, str) and _FORMULA.match(value):
        return "'" + value
    return value


def read_cell(cell: str) -> str:
    """A text cell of the export as the row holds it: the quote added before a formula taken away."""
    return cell[1:] if cell.startswith("'") and _FORMULA.match(cell) else cell


async def stream_csv(rows: QuerySet[AuditEvent]) -> AsyncIterator[str]:
    """The header, then the rows a batch at a time, so a long log is never held in memory.

    Async because the web process is ASGI: Django would read a sync iterator to its end before sending
    a byte. One database cursor serves the whole export; every batch is read on the one thread that
    ``sync_to_async`` keeps for this request, where that cursor lives."""
    yield csv_text([COLUMNS])
    cursor = rows.values_list(*COLUMNS).iterator(chunk_size=BATCH_ROWS)
    next_batch = sync_to_async(lambda: list(islice(cursor, BATCH_ROWS)))
    while batch := await next_batch():
        yield csv_text(batch)
