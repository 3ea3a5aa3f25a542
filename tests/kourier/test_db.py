import asyncio
import threading
import time
from datetime import timedelta

import pytest
from django.db import DatabaseError, OperationalError, connection, transaction
from django.utils import timezone

from kourier.db import CompiledFirst, in_database_thread, ingress_threads, insert_unless_taken
from sessions.models import Session, Turn
from tests.factories import ConnectionFactory, TurnFactory
from tests.support.orm import count_compilations

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


BACKEND_GONE_TIMEOUT_SECONDS = 10


def this_threads_backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def on_the_database_thread(fn):
    """Runs fn on an ingress thread, whose connection outlives each call."""
    return asyncio.run(in_database_thread(fn, thread_sensitive=True)())


def drop(backend: int) -> None:
    """Ends a backend from the server's side, as a restart does, and waits until it is gone."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
        deadline = time.monotonic() + BACKEND_GONE_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            cursor.execute("SELECT pg_stat_clear_snapshot()")  # this transaction's view is a snapshot
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [backend])
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.05)  # polling the server for the backend's exit
    raise AssertionError(f"backend {backend} still runs")


@pytest.fixture
def one_database_thread(settings):
    """Ingress made with one thread, so each call meets the connection the call before it left (with
    two, a call could land on a thread holding a connection an earlier test dropped), and closed
    afterwards: its thread must not hold the test database."""
    settings.INGRESS_DATABASE_THREADS = 1
    ingress_threads.cache_clear()
    yield
    on_the_database_thread(lambda: connection.close())
    ingress_threads().shutdown()
    ingress_threads.cache_clear()


@pytest.mark.requires_postgres("a server that drops connections: PostgreSQL")
@pytest.mark.usefixtures("one_database_thread")
class TestOnALiveConnection:
    @pytest.mark.parametrize("in_a_transaction", [False, True], ids=["statement", "transaction"])
    def test_a_connection_the_database_dropped_while_idle_is_replaced_and_the_call_goes_through(
        self, in_a_transaction
    ):
        def whose_backend() -> int:
            if not in_a_transaction:
                return this_threads_backend()
            with transaction.atomic():
                return this_threads_backend()

        first = on_the_database_thread(whose_backend)
        drop(first)
        second = on_the_database_thread(whose_backend)
        assert second != first

    def test_a_call_that_failed_after_a_statement_went_through_is_not_made_again(self):
        calls = []

        def work_then_lose_the_connection() -> None:
            calls.append("called")
            this_threads_backend()
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

        on_the_database_thread(this_threads_backend)
        with pytest.raises(OperationalError):
            on_the_database_thread(work_then_lose_the_connection)
        assert calls == ["called"]
        assert on_the_database_thread(this_threads_backend) > 0  # and the next call connects again

    def test_a_failure_on_a_live_connection_is_not_made_again(self):
        calls = []

        def fail_on_purpose() -> None:
            calls.append("called")
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 / 0")

        on_the_database_thread(this_threads_backend)
        with pytest.raises(DatabaseError):
            on_the_database_thread(fail_on_purpose)
        assert calls == ["called"]


@pytest.fixture
def ingress_threads_of(settings):
    """``ingress_threads`` made again with ``INGRESS_DATABASE_THREADS`` set to what the test says."""

    def made(count: int):
        settings.INGRESS_DATABASE_THREADS = count
        ingress_threads.cache_clear()
        return ingress_threads()

    yield made
    ingress_threads.cache_clear()


@pytest.mark.requires_postgres("SQLite has one ingress thread")
def test_on_postgresql_ingress_runs_as_many_calls_at_once_as_it_has_threads(ingress_threads_of):
    executor = ingress_threads_of(3)
    all_started = threading.Barrier(3, timeout=30)  # passes only when three calls run at once
    calls = [executor.submit(all_started.wait) for _ in range(3)]
    assert sorted(call.result() for call in calls) == [0, 1, 2]


def test_on_sqlite_ingress_has_one_thread_whatever_the_setting(ingress_threads_of, monkeypatch):
    monkeypatch.setattr(connection, "vendor", "sqlite")
    executor = ingress_threads_of(3)
    release = threading.Event()

    def thread_name() -> str:
        release.wait(timeout=30)  # every call is submitted while the first still holds its thread
        return threading.current_thread().name

    calls = [executor.submit(thread_name) for _ in range(6)]
    release.set()
    assert len({call.result() for call in calls}) == 1


class TestCompiledFirst:
    """A hot look built and compiled by the ORM once per connection, then run with other values."""

    STAND_INS = (
        {"session_id": -1, "since": timezone.now() - timedelta(days=3000)},
        {"session_id": -2, "since": timezone.now() - timedelta(days=4000)},
    )

    def turns_of(self, *, session_id, since):
        return Turn.objects.filter(session_id=session_id, created_at__gte=since).order_by("message_ts")

    def test_its_rows_are_the_querys_and_it_is_compiled_once(self, monkeypatch):
        turn = TurnFactory()
        look = CompiledFirst(Turn, self.turns_of, self.STAND_INS)
        since = turn.created_at - timedelta(seconds=1)
        assert look(session_id=turn.session_id, since=since) == turn
        compiled = count_compilations(monkeypatch)
        found = look(session_id=turn.session_id, since=since)
        assert look(session_id=turn.session_id, since=turn.created_at + timedelta(seconds=1)) is None
        assert compiled == []  # the ORM would compile each look
        assert (found.pk, found.message_ts, found.created_at, found.state) == (
            turn.pk,
            turn.message_ts,
            turn.created_at,
            turn.state,
        )
        assert found.stream_cards == turn.stream_cards  # a JSON column, read as the ORM reads it

    def test_a_value_the_statement_derives_from_an_argument_is_refused(self):
        def derived(*, session_id, since):
            return self.turns_of(session_id=session_id, since=since - timedelta(days=1))

        with pytest.raises(ValueError, match="not one of the values"):
            CompiledFirst(Turn, derived, self.STAND_INS)(session_id=1, since=timezone.now())
