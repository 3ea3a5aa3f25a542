from typing import Any

from .models import AuditEvent


def record(
    action: str,
    *,
    binding_name: str = "",
    actor_id: str = "",
    subject: str = "",
    details: dict[str, Any] | None = None,
    requester: str = "",
    policy: str = "",
    by_policy: bool = False,
) -> AuditEvent:
    """Appends one audit row. An empty actor_id means the system acted (a sweep, a trigger);
    ``by_policy``, that a Binding's rule decided (its ``policy`` says which)."""
    return AuditEvent.objects.create(
        action=action,
        binding_name=binding_name,
        actor_kind="policy" if by_policy else "user" if actor_id else "system",
        actor_id=actor_id,
        subject=subject,
        details=details or {},
        requester=requester,
        policy=policy[:500],
    )
