"""The audit's chain is kept with a key (``AUDIT_KEY``, outside the database), and its database guard
covers every column and lets only the chain's writer fill an empty hash (issue 32, point 6).

``key_id`` names the key a row is hashed with (empty: hashed without one, as every row before this
migration). Rows hashed the old way stay as they are until ``manage.py audit rekey`` keys the whole
chain (docs/operations.md, "The audit key").

The append-only trigger (``0002``, ``0004``) let any UPDATE fill an empty hash, provided the content
it compared did not change; it did not compare ``requester`` and ``policy``, so such an UPDATE could
rewrite them. Now it compares every content column, and it lets the fill through only

- under the chain's lock (``AuditEvent``'s transaction-scoped advisory lock, ``CHAIN_LOCK``), which
  the one writer holds while it appends, so that a fill never races an append; and
- in the chain's order: the row's ``previous_hash`` must be the hash of the row before it.

Who fills it so that it verifies is the key's affair: only the writer holds it.
"""

from django.db import migrations, models

CHAIN_LOCK = 0x6B6F7572_61756474  # audit.models.CHAIN_LOCK, fixed

REFUSAL = """
    RAISE EXCEPTION USING
        MESSAGE = 'audit rows are never ' || CASE TG_OP WHEN 'UPDATE' THEN 'updated' ELSE 'deleted' END,
        ERRCODE = 'insufficient_privilege';
"""

CONTENT = "id, at, action, binding_name, actor_kind, actor_id, requester, policy, subject, details"

FILL_BY_THE_WRITER_ONLY = f"""
CREATE OR REPLACE FUNCTION audit_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.hash = '' AND OLD.previous_hash = '' AND NEW.hash <> ''
        AND ({", ".join(f"NEW.{column}" for column in CONTENT.split(", "))})
            IS NOT DISTINCT FROM
            ({", ".join(f"OLD.{column}" for column in CONTENT.split(", "))})
        AND EXISTS (
            SELECT 1 FROM pg_locks
            WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                AND classid = {CHAIN_LOCK >> 32}::oid AND objid = {CHAIN_LOCK & 0xFFFFFFFF}::oid AND objsubid = 1
        )
        AND NEW.previous_hash = COALESCE(
            (SELECT hash FROM audit_auditevent WHERE id < NEW.id ORDER BY id DESC LIMIT 1),
            '{"0" * 64}'
        )
    THEN
        RETURN NEW;
    END IF;
{REFUSAL}
END;
$$ LANGUAGE plpgsql;
"""

# 0004's, to go back to.
CHAINING_ALLOWED = f"""
CREATE OR REPLACE FUNCTION audit_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.hash = '' AND NEW.hash <> ''
        AND (NEW.id, NEW.at, NEW.action, NEW.binding_name, NEW.actor_kind, NEW.actor_id, NEW.subject, NEW.details)
            IS NOT DISTINCT FROM
            (OLD.id, OLD.at, OLD.action, OLD.binding_name, OLD.actor_kind, OLD.actor_id, OLD.subject, OLD.details)
    THEN
        RETURN NEW;
    END IF;
{REFUSAL}
END;
$$ LANGUAGE plpgsql;
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0005_actor_kind_django_user")]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="key_id",
            field=models.CharField(blank=True, db_default="", editable=False, max_length=16),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="hash",
            field=models.CharField(
                blank=True,
                db_default="",
                editable=False,
                help_text="HMAC-SHA256 under the audit key (or, without one, SHA-256) of this row and previous_hash.",
                max_length=64,
            ),
        ),
        migrations.RunPython(
            _on_postgresql(FILL_BY_THE_WRITER_ONLY), _on_postgresql(CHAINING_ALLOWED), elidable=False
        ),
    ]
