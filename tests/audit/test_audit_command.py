"""``manage.py audit verify``: a count when the chain holds; the first row that does not match, named,
and exit 1, when a row was changed or removed in the database itself."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from audit import chain, services
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db

TRIGGER = "audit_auditevent_append_only"


@pytest.fixture
def rows():
    return [
        services.record(
            "interaction.decided", binding_name="ops", actor_id="U0ADA", subject=f"interaction {n}"
        )
        for n in range(1, 5)
    ]


def verify() -> str:
    out = StringIO()
    call_command("audit", "verify", stdout=out)
    return out.getvalue().strip()


def refused() -> CommandError:
    with pytest.raises(CommandError) as refusal:
        verify()
    return refusal.value


def around_the_model(sql: str, *params) -> None:
    """What someone with the database's credentials could do: on PostgreSQL, with the append-only
    trigger switched off (as the table's owner may) for this test's transaction."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {TRIGGER}")
        cursor.execute(sql, params)


def test_an_intact_audit_verifies_with_its_count(rows):
    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 4."


def test_an_empty_audit_verifies():
    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 0."


def test_a_row_changed_in_the_database_is_named_and_verify_fails(rows):
    around_the_model("UPDATE audit_auditevent SET actor_id = 'U0EVE' WHERE id = %s", rows[2].pk)

    error = refused()

    assert str(error) == (
        f"The audit chain breaks at row {rows[2].pk}: its content does not match its hash. "
        "Rows before it that match: 2."
    )
    assert error.returncode == 1


def test_a_changed_row_whose_hash_was_recomputed_breaks_the_chain_at_the_next_row(rows):
    changed = {name: getattr(rows[1], name) for name in chain.CHAINED_FIELDS} | {"actor_id": "U0EVE"}
    around_the_model(
        "UPDATE audit_auditevent SET actor_id = 'U0EVE', hash = %s WHERE id = %s",
        chain.digest(rows[1].previous_hash, changed),
        rows[1].pk,
    )

    assert str(refused()) == (
        f"The audit chain breaks at row {rows[2].pk}: its previous_hash is not the hash of row {rows[1].pk}, "
        "the row before it. Rows before it that match: 2."
    )


def test_a_row_removed_from_the_database_breaks_the_chain_at_the_row_after_it(rows):
    around_the_model("DELETE FROM audit_auditevent WHERE id = %s", rows[1].pk)

    assert str(refused()) == (
        f"The audit chain breaks at row {rows[2].pk}: its previous_hash is not the hash of row {rows[0].pk}, "
        "the row before it. Rows before it that match: 1."
    )


def written_without_a_hash(at) -> None:
    """An INSERT that names no hash column, as the release before the chain writes a row (the append-only
    trigger lets an INSERT through)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditevent (at, action, binding_name, actor_kind, actor_id, subject, details)"
            " VALUES (%s, 'interaction.decided', 'ops', 'user', 'U0ADA', 'interaction 5', '{}')",
            [at],
        )


def test_a_row_written_without_a_hash_is_named(rows):
    written_without_a_hash(rows[-1].at)
    [unhashed] = AuditEvent.objects.filter(hash="")

    assert str(refused()) == (
        f"The audit chain breaks at row {unhashed.pk}: it has no hash: it was written around the audit's one "
        "writer, or during an upgrade by the release before the chain (the next append chains such rows at "
        "the end). Rows before it that match: 4."
    )


def test_rows_the_release_before_wrote_during_an_upgrade_are_chained_by_the_next_append(rows):
    written_without_a_hash(rows[-1].at)
    written_without_a_hash(rows[-1].at)

    services.record("interaction.timed_out", subject="interaction 6")

    assert verify() == "The audit chain holds: every row matches its hash and the row before it. Rows: 7."
    assert not AuditEvent.objects.filter(hash="").exists()
