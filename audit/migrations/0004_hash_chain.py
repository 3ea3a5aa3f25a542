"""Every audit row carries a hash over its content and the previous row's (``audit.chain``).

The rows already there are chained here, in id order, as the model chains new ones. On PostgreSQL the
append-only trigger (``0002``) is switched off for this one transaction so that the two new columns
can be filled, and on again before it commits. ``at`` loses ``auto_now_add``: the model sets it under
the chain's lock, before the hash is taken over it. ``actor_id`` widens to hold ``admin:`` and a
Django username of up to 150 characters.

While an upgrade rolls out, the release before goes on writing rows without the two columns: the
database's default leaves their hash empty, and the next append chains them (``AuditEvent.save``).
The trigger now lets an UPDATE do that and nothing else: fill an empty hash, the content unchanged.
"""

import django.utils.timezone
from django.db import migrations, models

from audit import chain

TRIGGER = "audit_auditevent_append_only"

REFUSAL = """
    RAISE EXCEPTION USING
        MESSAGE = 'audit rows are never ' || CASE TG_OP WHEN 'UPDATE' THEN 'updated' ELSE 'deleted' END,
        ERRCODE = 'insufficient_privilege';
"""

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

NOTHING_ALLOWED = f"""
CREATE OR REPLACE FUNCTION audit_auditevent_append_only() RETURNS trigger AS $$
BEGIN
{REFUSAL}
END;
$$ LANGUAGE plpgsql;
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


def chain_existing_rows(apps, schema_editor):
    AuditEvent = apps.get_model("audit", "AuditEvent")
    on_postgresql = schema_editor.connection.vendor == "postgresql"
    if on_postgresql:
        schema_editor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {TRIGGER}")
    previous_hash = chain.GENESIS
    rows = AuditEvent.objects.order_by("id").values("id", *chain.CHAINED_FIELDS)
    for row in rows.iterator(chunk_size=2000):
        row_hash = chain.digest(previous_hash, row)
        AuditEvent.objects.filter(pk=row["id"]).update(previous_hash=previous_hash, hash=row_hash)
        previous_hash = row_hash
    if on_postgresql:
        schema_editor.execute(f"ALTER TABLE audit_auditevent ENABLE TRIGGER {TRIGGER}")


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_audit_requester_and_policy")]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="at",
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False),
        ),
        migrations.AlterField(
            model_name="auditevent", name="actor_id", field=models.CharField(blank=True, max_length=160)
        ),
        migrations.AddField(
            model_name="auditevent",
            name="previous_hash",
            field=models.CharField(blank=True, db_default="", editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="hash",
            field=models.CharField(
                blank=True,
                db_default="",
                editable=False,
                help_text="SHA-256 of this row and previous_hash.",
                max_length=64,
            ),
        ),
        migrations.RunPython(chain_existing_rows, migrations.RunPython.noop, elidable=False),
        migrations.RunPython(
            _on_postgresql(CHAINING_ALLOWED), _on_postgresql(NOTHING_ALLOWED), elidable=False
        ),
    ]
