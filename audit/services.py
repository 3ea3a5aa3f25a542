import getpass
import os
from typing import Any

from django.db import connections, transaction

from . import chain
from .models import AuditEvent, audit_key, chain_head

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


CHAIN_COLUMNS = ("id", "previous_hash", "hash", "key_id", *chain.CHAINED_FIELDS)


def verify(*, unkeyed_too: bool = False, chunk_size: int = 2000) -> tuple[int, chain.Break | None]:
    """Reads the whole chain in id order, in one query (one snapshot on PostgreSQL), with the audit
    key when there is one: how many rows match, and the first that does not."""
    rows = AuditEvent.objects.order_by("id").values(*CHAIN_COLUMNS)
    return chain.first_break(rows.iterator(chunk_size=chunk_size), audit_key(), unkeyed_too=unkeyed_too)


def head() -> chain.Head | None:
    """The chain's last row as a head to keep outside the database, signed with the audit key; None
    while the audit is empty."""
    last = AuditEvent.objects.order_by("-id").values("id", "hash", "at").first()
    if last is None:
        return None
    rows = AuditEvent.objects.filter(id__lte=last["id"]).count()
    at = last["at"].isoformat(timespec="microseconds")
    return chain.Head(last["id"], last["hash"], rows, at).signed_with(audit_key())


def head_problem(kept: chain.Head) -> str | None:
    """Why the chain does not pass through a head kept outside the database, or None when it does."""
    found = AuditEvent.objects.filter(pk=kept.row_id).values("hash").first()
    rows_up_to = AuditEvent.objects.filter(id__lte=kept.row_id).count()
    return chain.head_problem(kept, found, rows_up_to, audit_key())


class NotRekeyed(Exception):
    """Why ``rekey`` changed nothing, in one sentence."""


TRIGGER = "audit_auditevent_append_only"
REKEY_BATCH_ROWS = 2000


def rekey() -> int:
    """Hashes every row again with the audit key, in one transaction under the chain's lock, after
    checking the chain as it stands (each row by its own hash, keyed or not): the path from a chain
    hashed the old way (docs/operations.md). Returns how many rows it keyed; raises ``NotRekeyed``
    when there is no key or the chain does not hold, and then nothing is changed.

    On PostgreSQL the append-only trigger is switched off for this one transaction (as migration
    ``0004`` did), which takes the table's owner, and on again before it commits."""
    key = audit_key()
    if key is None:
        raise NotRekeyed("AUDIT_KEY is not set: there is no key to hash the chain with. Nothing was changed.")
    with transaction.atomic():
        chain_head("default", key)  # takes the chain's lock, and chains rows left without a hash
        matched, broken = verify(unkeyed_too=True)
        if broken is not None:
            raise NotRekeyed(f"{chain.verdict(matched, broken)} Nothing was changed.")
        own_key = chain.key_id(key)
        connection = connections["default"]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {TRIGGER}")
        previous_hash, after_id = chain.GENESIS, 0
        rows = AuditEvent._base_manager.order_by("id").values("id", *chain.CHAINED_FIELDS)
        while batch := list(rows.filter(id__gt=after_id)[:REKEY_BATCH_ROWS]):  # read ahead of the writes
            for row in batch:
                row_hash = chain.digest(previous_hash, row, key)
                AuditEvent._base_manager.filter(pk=row["id"]).update(
                    previous_hash=previous_hash, hash=row_hash, key_id=own_key
                )
                previous_hash = row_hash
            after_id = batch[-1]["id"]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"ALTER TABLE audit_auditevent ENABLE TRIGGER {TRIGGER}")
    return matched


def operating_system_user() -> str:
    """Who runs this process at a shell, for the audit: the login name, or ``uid <n>`` when it has none
    (no login name in the environment and no passwd entry for the uid)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"
