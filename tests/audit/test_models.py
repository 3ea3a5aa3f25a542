"""The audit only grows: the model refuses changes everywhere, PostgreSQL refuses them in SQL too;
each row is chained to the one before, one chain however many write at once."""

import threading

import pytest
from django.db import DatabaseError, connection, transaction

from audit import chain, services
from audit.models import CHAIN_LOCK, AppendOnly, AuditEvent


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


@pytest.mark.requires_postgres("the trigger is PostgreSQL's")
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


@pytest.mark.requires_postgres("the trigger is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_a_transactional_test_still_empties_the_table_after_it():
    # pytest-django flushes with TRUNCATE, which row triggers do not see: the next test starts empty.
    services.record("approval.decided", subject="interaction:2")
    assert AuditEvent.objects.count() == 1


@pytest.mark.requires_postgres("the trigger is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_the_table_is_empty_again_for_the_next_test():
    assert AuditEvent.objects.count() == 0


# -- the hash chain ------------------------------------------------------------------------------------


def test_each_row_is_chained_to_the_one_written_before_it(db):
    first = services.record("interaction.decided", actor_id="U0ADA", subject="interaction 1")
    second = services.record("interaction.timed_out", subject="interaction 2")

    assert first.previous_hash == chain.GENESIS
    assert second.previous_hash == first.hash
    assert services.verify() == (2, None)  # each hash matches the row as the database reads it back


def test_rows_are_appended_one_at_a_time_never_in_bulk(db):
    with pytest.raises(AppendOnly):
        AuditEvent.objects.bulk_create([AuditEvent(action="interaction.decided")])


def test_a_row_inside_a_transaction_that_rolls_back_leaves_the_chain_whole(db):
    services.record("interaction.decided", subject="interaction 1")

    def failing_writer() -> None:
        with transaction.atomic():
            services.record("interaction.decided", subject="interaction 2")
            raise RuntimeError("the writer's transaction fails")

    with pytest.raises(RuntimeError):
        failing_writer()
    services.record("interaction.decided", subject="interaction 3")

    assert services.verify() == (2, None)


@pytest.mark.requires_postgres("SQLite serializes every write, so appends cannot race there")
@pytest.mark.django_db(transaction=True)
def test_twenty_writers_at_once_keep_one_chain():
    writers = 20
    start = threading.Barrier(writers)
    failures: list[BaseException] = []

    def append(n: int) -> None:
        try:
            start.wait()
            with transaction.atomic():  # as a service's transaction: the lock is held to its commit
                services.record("interaction.decided", actor_id=f"U{n:08d}", subject=f"interaction {n}")
        except BaseException as error:  # reported by the test, not lost in its thread
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=append, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert services.verify() == (writers, None)
    assert len(set(AuditEvent.objects.values_list("previous_hash", flat=True))) == writers  # no fork


def under_the_chains_lock(sql: str, *params):
    """``sql`` in a transaction that holds the chain's lock, as the one writer's does."""

    def run():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK])
            cursor.execute(sql, params)

    return run


FILL = "UPDATE audit_auditevent SET previous_hash = %s, hash = %s"


@pytest.fixture
def unhashed(row) -> int:
    """A row the release before the chain wrote during an upgrade: no hash, after ``row``."""
    raw(
        "INSERT INTO audit_auditevent (at, action, binding_name, actor_kind, actor_id, subject, details)"
        " VALUES (now(), 'interaction.decided', 'ops', 'user', 'U0ADA', 'interaction 2', '{}')"
    )()
    return AuditEvent.objects.get(hash="").pk


@pytest.mark.requires_postgres("the trigger is PostgreSQL's")
@pytest.mark.django_db(transaction=True)  # the row's own append took the lock: its commit lets it go
@pytest.mark.parametrize(
    ("fill", "why"),
    [
        (lambda row, pk: raw(f"{FILL} WHERE id = %s", row.hash, "c" * 64, pk), "without the chain's lock"),
        (lambda row, pk: under_the_chains_lock(f"{FILL}, actor_id = 'U0EVE' WHERE id = %s", row.hash, "a" * 64, pk),
         "its content changed"),
        (lambda row, pk: under_the_chains_lock(f"{FILL}, requester = 'U0EVE' WHERE id = %s", row.hash, "a" * 64, pk),
         "its requester changed"),
        (lambda row, pk: under_the_chains_lock(f"{FILL}, policy = 'binding' WHERE id = %s", row.hash, "a" * 64, pk),
         "its policy changed"),
        (lambda row, pk: under_the_chains_lock(f"{FILL} WHERE id = %s", chain.GENESIS, "b" * 64, pk),
         "out of the chain's order"),
        (lambda row, pk: under_the_chains_lock(f"{FILL} WHERE id = %s", chain.GENESIS, "b" * 64, row.pk),
         "a hashed row"),
    ],
)  # fmt: skip
def test_postgresql_refuses_a_fill_of_an_empty_hash_but_the_writers(row, unhashed, fill, why):
    assert refused_by_the_database(fill(row, unhashed)), why

    assert AuditEvent.objects.filter(hash="").count() == 1


@pytest.mark.requires_postgres("the trigger is PostgreSQL's")
def test_postgresql_lets_the_writer_fill_an_empty_hash_under_its_lock_in_the_chains_order(row, unhashed):
    assert not refused_by_the_database(
        under_the_chains_lock(f"{FILL} WHERE id = %s", row.hash, "c" * 64, unhashed)
    )


@pytest.mark.requires_postgres("the trigger is PostgreSQL's")
def test_the_next_append_chains_such_a_row_with_the_key(row, unhashed, settings):
    settings.AUDIT_KEY = "an-audit-key-of-the-operator-s-own-at-least-32-chars"

    services.record("interaction.decided", subject="interaction 3")

    assert services.verify(unkeyed_too=True) == (3, None)  # the first row was hashed before the key
    assert AuditEvent.objects.get(pk=unhashed).key_id == chain.key_id(settings.AUDIT_KEY.encode())


def test_rekey_chains_rows_left_without_a_hash_then_keys_them_all(row, settings):
    raw(
        "INSERT INTO audit_auditevent (at, action, binding_name, actor_kind, actor_id, subject, details)"
        " VALUES (%s, 'interaction.decided', 'ops', 'user', 'U0ADA', 'interaction 2', '{}')",
        row.at,
    )()
    settings.AUDIT_KEY = "an-audit-key-of-the-operator-s-own-at-least-32-chars"

    assert services.rekey() == 2

    assert services.verify() == (2, None)
