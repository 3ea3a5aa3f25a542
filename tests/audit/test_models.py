"""The audit only grows: the model refuses changes everywhere, PostgreSQL refuses them in SQL too."""

import pytest
from django.db import DatabaseError, connection, transaction

from audit import services
from audit.models import AppendOnly, AuditEvent

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the trigger is PostgreSQL's; set DATABASE_URL to PostgreSQL"
)


@pytest.fixture
def row(db):
    return services.record("approval.decided", binding_name="ops", actor_id="U0ADA", subject="interaction:1")


def test_the_model_refuses_to_change_or_delete_a_row(row):
    for attempt in (row.save, row.delete, AuditEvent.objects.all().delete):
        with pytest.raises(AppendOnly):
            attempt()
    with pytest.raises(AppendOnly):
        AuditEvent.objects.all().update(actor_id="U0EVE")


def refused_by_the_database(attempt) -> bool:
    try:
        with transaction.atomic():
            attempt()
    except DatabaseError as error:
        return "audit rows are never" in str(error)
    return False


def raw(sql: str, *params):
    def run():
        with connection.cursor() as cursor:
            cursor.execute(sql, params)

    return run


@pytest.mark.postgres
@on_postgresql
@pytest.mark.parametrize(
    "attempt",
    [
        pytest.param(
            lambda pk: AuditEvent._base_manager.filter(pk=pk).update(actor_id="U0EVE"),
            id="base manager update",
        ),
        pytest.param(
            lambda pk: AuditEvent._base_manager.filter(pk=pk)._raw_delete("default"), id="raw delete"
        ),
        pytest.param(
            lambda pk: raw("UPDATE audit_auditevent SET actor_id = 'U0EVE' WHERE id = %s", pk)(),
            id="SQL UPDATE",
        ),
        pytest.param(lambda pk: raw("DELETE FROM audit_auditevent WHERE id = %s", pk)(), id="SQL DELETE"),
    ],
)
def test_postgresql_refuses_what_goes_around_the_model(row, attempt):
    assert refused_by_the_database(lambda: attempt(row.pk))

    assert AuditEvent.objects.values_list("actor_id", flat=True).get(pk=row.pk) == "U0ADA"


@pytest.mark.postgres
@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_still_empties_the_table_after_it():
    # pytest-django flushes with TRUNCATE, which row triggers do not see: the next test starts empty.
    services.record("approval.decided", subject="interaction:2")
    assert AuditEvent.objects.count() == 1


@pytest.mark.postgres
@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_the_table_is_empty_again_for_the_next_test():
    assert AuditEvent.objects.count() == 0
