"""The audit refuses UPDATE and DELETE in PostgreSQL itself, not only through the model.

A row-level trigger, so that neither a queryset that bypasses ``AuditQuerySet`` (``_base_manager``)
nor plain SQL can rewrite or remove a row. TRUNCATE is a statement of its own that row triggers do
not see: the test database's flush between tests still works, and only the table's owner may run
it. SQLite keeps the model-level guard (``AuditQuerySet``, ``AuditEvent.save``/``delete``).
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION audit_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION USING
        MESSAGE = 'audit rows are never ' || CASE TG_OP WHEN 'UPDATE' THEN 'updated' ELSE 'deleted' END,
        ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER audit_auditevent_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_auditevent_append_only();
"""

DROP = """
DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_auditevent_append_only();
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP), elidable=False)]
