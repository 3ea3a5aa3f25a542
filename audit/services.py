from typing import Any

from .models import AuditEvent


def record(
    action: str,
    *,
    binding_name: str = "",
    actor_id: str = "",
    subject: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Appends one audit row. An empty actor_id means the system acted (a sweep, a trigger)."""
    return AuditEvent.objects.create(
        action=action,
        binding_name=binding_name,
        actor_kind="user" if actor_id else "system",
        actor_id=actor_id,
        subject=subject,
        details=details or {},
    )
