import getpass
import os
from typing import Any

from . import chain
from .models import AuditEvent

DJANGO_USER = "django-user"  # a decision made outside Slack: actor_id is the Django username
OPERATOR = "operator"  # someone at a shell (manage.py apply): actor_id is apply:<login>


def record(
    action: str,
    *,
    binding_name: str = "",
    actor_id: str = "",
    subject: str = "",
    details: dict[str, Any] | None = None,
    actor_kind: str | None = None,
    requester: str = "",
    policy: str = "",
    by_policy: bool = False,
) -> AuditEvent:
    """Appends one audit row, chained to the last (in the caller's transaction, if any). An empty
    actor_id means the system acted (a sweep, a trigger); otherwise a Slack user did, unless
    ``actor_kind`` says a Django user (``DJANGO_USER``) did; ``by_policy``, that a Binding's rule
    decided (its ``policy`` says which)."""
    return AuditEvent.objects.create(
        action=action,
        binding_name=binding_name,
        actor_kind="policy" if by_policy else actor_kind or ("user" if actor_id else "system"),
        actor_id=actor_id,
        subject=subject,
        details=details or {},
        requester=requester,
        policy=policy[:500],
    )


def verify(*, chunk_size: int = 2000) -> tuple[int, chain.Break | None]:
    """Reads the whole chain in id order, in one query (one snapshot on PostgreSQL): how many rows
    match, and the first that does not."""
    rows = AuditEvent.objects.order_by("id").values("id", "previous_hash", "hash", *chain.CHAINED_FIELDS)
    return chain.first_break(rows.iterator(chunk_size=chunk_size))


def operating_system_user() -> str:
    """Who runs this process at a shell, for the audit: the login name, or ``uid <n>`` when it has none
    (no login name in the environment and no passwd entry for the uid)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"
