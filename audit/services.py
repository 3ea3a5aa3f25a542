from typing import Any

from . import chain
from .models import AuditEvent


def record(
    action: str,
    *,
    binding_name: str = "",
    actor_id: str = "",
    subject: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Appends one audit row, chained to the last (in the caller's transaction, if any). An empty
    actor_id means the system acted (a sweep, a trigger)."""
    return AuditEvent.objects.create(
        action=action,
        binding_name=binding_name,
        actor_kind="user" if actor_id else "system",
        actor_id=actor_id,
        subject=subject,
        details=details or {},
    )


def verify(*, chunk_size: int = 2000) -> tuple[int, chain.Break | None]:
    """Reads the whole chain in id order, in one query (one snapshot on PostgreSQL): how many rows
    match, and the first that does not."""
    rows = AuditEvent.objects.order_by("id").values("id", "previous_hash", "hash", *chain.CHAINED_FIELDS)
    return chain.first_break(rows.iterator(chunk_size=chunk_size))
