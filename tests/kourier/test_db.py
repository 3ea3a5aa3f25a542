import asyncio

import pytest
from django.db import DatabaseError
from django.utils import timezone

from kourier.db import in_database_thread, insert_unless_taken
from sessions.models import Session, Turn
from tests.factories import ConnectionFactory

pytestmark = pytest.mark.django_db

KEY = ("connection", "channel_id", "thread_ts")


def a_session(connection, binding=None, **fields) -> Session:
    now = timezone.now()
    defaults = {
        "channel_id": "C1",
        "thread_ts": "1700000001.000100",
        "last_activity_at": now,
        "expires_at": now,
    }
    return Session(connection=connection, binding=binding, **{**defaults, **fields})


def test_a_new_row_is_inserted_and_gets_its_pk():
    session = a_session(ConnectionFactory())
    assert insert_unless_taken(session, KEY) is True
    stored = Session.objects.get()
    assert session.pk == stored.pk
    assert (stored.channel_id, stored.thread_ts, stored.kind) == ("C1", "1700000001.000100", "chat")
    assert stored.created_at is not None


def test_a_row_whose_key_is_taken_is_not_inserted_and_the_first_one_is_left_alone():
    connection = ConnectionFactory()
    insert_unless_taken(a_session(connection, context_id="first"), KEY)
    second = a_session(connection, context_id="second")
    assert insert_unless_taken(second, KEY) is False
    assert second.pk is None
    assert list(Session.objects.values_list("context_id", flat=True)) == ["first"]


def test_the_same_fields_outside_the_key_make_a_new_row():
    connection = ConnectionFactory()
    insert_unless_taken(a_session(connection), KEY)
    assert insert_unless_taken(a_session(connection, thread_ts="1700000002.000100"), KEY) is True
    assert Session.objects.count() == 2


class TestInDatabaseThread:
    def test_a_failure_that_broke_the_connection_closes_it_so_the_next_call_connects_again(self):
        from django.db import connection

        def break_the_connection() -> None:
            connection.ensure_connection()
            connection.connection.close()  # the server went away under the thread's connection
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")

        def count_turns() -> int:
            return Turn.objects.count()

        async def scenario() -> int:
            with pytest.raises(DatabaseError):
                await in_database_thread(break_the_connection, thread_sensitive=True)()
            try:
                return await in_database_thread(count_turns, thread_sensitive=True)()
            finally:  # the shared thread outlives the test: its connection must not hold the test database
                await in_database_thread(lambda: connection.close(), thread_sensitive=True)()

        assert asyncio.run(scenario()) == 0
