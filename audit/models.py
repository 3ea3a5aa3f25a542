import logging
from typing import Any

from django.conf import settings
from django.db import connections, models, router, transaction
from django.utils import timezone

from . import chain

logger = logging.getLogger(__name__)


class AppendOnly(Exception):
    """An audit row was to be changed or deleted: the log only grows."""


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly("audit rows are never updated")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit rows are never deleted")

    def bulk_create(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnly("audit rows are appended one at a time, each chained to the one before")


# Appends on PostgreSQL take this transaction-scoped advisory lock: one writer at a time reads the
# chain's head and inserts after it, so concurrent writers never fork the chain. SQLite serializes
# writes itself. The number is arbitrary, fixed, and used for nothing else.
CHAIN_LOCK = 0x6B6F7572_61756474  # "kouraudt"


def audit_key() -> bytes | None:
    """The key the chain is hashed with (``AUDIT_KEY``), kept outside the database; None without one."""
    return settings.AUDIT_KEY.encode() if settings.AUDIT_KEY else None


class AuditEvent(models.Model):
    """One decision, sweep or change, recorded append-only: the model refuses updates and deletes.

    ``details`` holds shapes and counts (how many tools, which verdicts), never message text, answer
    text, tool arguments or rejection text. Each row is hash-chained to the one before it in id order
    (``audit.chain``): ``save`` of a new row takes the chain's lock, reads the last row's hash and
    writes both in the caller's transaction.
    """

    at = models.DateTimeField(default=timezone.now, editable=False, db_index=True)
    action = models.CharField(max_length=64, db_index=True)
    binding_name = models.CharField(max_length=100, blank=True, db_index=True)
    actor_kind = models.CharField(
        max_length=16,
        choices=[
            ("user", "Slack user"),
            ("django-user", "Django user"),
            ("operator", "Operator at a shell"),
            ("system", "System"),
            ("policy", "Policy"),
        ],
        help_text="Who acted: a Slack user (actor_id is their Slack ID), a Django user deciding outside "
        "Slack, in the admin or by manage.py (actor_id is their username), an operator running manage.py "
        "apply (actor_id is apply:<login>), a Binding's rule (policy), or the system.",
    )
    actor_id = models.CharField(max_length=160, blank=True)  # admin:<username>, a Django username up to 150
    # A decision's: whose message started the turn (a Slack user, or the system identity), and the
    # approval rules it was decided under ("binding", or the rule that matched: "tools[0] match=db_*").
    # Empty by the database's default, as the hashes are, for rows written around the one writer.
    requester = models.CharField(max_length=64, blank=True, db_default="")
    policy = models.CharField(max_length=500, blank=True, db_default="")
    subject = models.CharField(max_length=200, blank=True, help_text="What the event is about, by id.")
    details = models.JSONField(default=dict, blank=True)
    # Empty by the database's default for a row the release before the chain writes during an upgrade:
    # the next append chains it (``chain_head``).
    previous_hash = models.CharField(max_length=64, blank=True, editable=False, db_default="")
    hash = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        db_default="",
        help_text="HMAC-SHA256 under the audit key (or, without one, SHA-256) of this row and previous_hash.",
    )
    # The audit key's id (``chain.key_id``, never the key) for a row hashed with it; empty for a row
    # hashed without a key, or not yet hashed.
    key_id = models.CharField(max_length=16, blank=True, editable=False, db_default="")

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.subject}".strip()

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnly("audit rows are never updated")
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        # The lock needs a transaction, not a savepoint: inside a service's transaction this adds nothing.
        key = audit_key()
        with transaction.atomic(using=using, savepoint=False):
            self.previous_hash = chain_head(using, key)
            self.at = timezone.now()  # under the lock: time never goes back along the chain
            self.key_id = chain.key_id(key) if key is not None else ""
            self.hash = chain.digest(
                self.previous_hash, {name: getattr(self, name) for name in chain.CHAINED_FIELDS}, key
            )
            super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly("audit rows are never deleted")


def take_chain_lock(using: str) -> None:
    """The chain's lock, held to the end of the transaction (PostgreSQL; SQLite serializes writes)."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK])


def chain_head(using: str, key: bytes | None) -> str:
    """The last row's hash, read under the chain's lock (held to the end of the transaction)."""
    take_chain_lock(using)
    last = AuditEvent._base_manager.using(using).order_by("-id").values_list("hash", flat=True).first()
    if last is None:
        return chain.GENESIS
    return last or _chain_unhashed_tail(using, key)


def _chain_unhashed_tail(using: str, key: bytes | None) -> str:
    """Chains the rows after the last hashed one, in id order, and returns the last one's hash.

    They were written without a hash by the release before the chain, while an upgrade rolled out
    (the columns' database default). Their content is left as it is: on PostgreSQL the append-only
    trigger lets an UPDATE fill an empty hash and nothing else, only under the chain's lock and only
    in the chain's order (migration ``0006``); the key makes this writer the one that can fill one
    so that it verifies. Logged, with the rows' ids: the chain vouches for them from now on, not for
    who wrote them."""
    rows = AuditEvent._base_manager.using(using)
    head = rows.exclude(hash="").order_by("-id").values_list("id", "hash").first()
    after_id, previous_hash = head if head is not None else (0, chain.GENESIS)
    own_key = chain.key_id(key) if key is not None else ""
    chained = []
    for row in rows.filter(id__gt=after_id).order_by("id").values("id", *chain.CHAINED_FIELDS):
        row_hash = chain.digest(previous_hash, row, key)
        rows.filter(pk=row["id"], hash="").update(previous_hash=previous_hash, hash=row_hash, key_id=own_key)
        previous_hash = row_hash
        chained.append(row["id"])
    logger.warning("audit.unhashed_rows_chained", extra={"rows": len(chained), "ids": chained[:100]})
    return previous_hash
