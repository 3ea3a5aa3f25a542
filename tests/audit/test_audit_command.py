"""``manage.py audit verify``: a count when the chain holds; the first row that does not match, named,
and exit 1, when a row was changed or removed in the database itself."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from audit import chain, services

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


def test_a_row_inserted_around_the_writer_is_named(rows):
    around_the_model(
        "INSERT INTO audit_auditevent (at, action, binding_name, actor_kind, actor_id, subject, details,"
        " previous_hash, hash) VALUES (%s, 'interaction.decided', 'ops', 'user', 'U0EVE', '', '{}', '', '')",
        rows[-1].at,
    )

    assert (
        "it has no hash: it was written around the audit's one writer. Rows before it that match: 4."
        in str(refused())
    )
