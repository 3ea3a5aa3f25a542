"""Database helpers the ORM does not give: an insert that yields to a row already holding its key, and
sync database work for async callers that survives a broken connection."""

import asyncio
import contextvars
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


def insert_unless_taken(instance: Model, key: Sequence[str]) -> bool:
    """``INSERT … ON CONFLICT (key) DO NOTHING RETURNING pk``: one statement, no savepoint.

    True when the row was inserted (``instance`` then has its pk); False when a row already holds
    the key, which must be a unique constraint. Runs on PostgreSQL and on SQLite 3.35 or later.
    """
    model = type(instance)
    meta = model._meta
    database = connections[router.db_for_write(model, instance=instance)]
    quote = database.ops.quote_name
    columns = insert_columns(model, database)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) "
        f"ON CONFLICT ({', '.join(quoted_columns(model, key, database))}) DO NOTHING "
        f"RETURNING {quote(meta.pk.column)}"
    )
    with database.cursor() as cursor:
        cursor.execute(sql, insert_values(instance, database))
        row = cursor.fetchone()
    if row is None:
        return False
    inserted(instance, row[0], database)
    return True


def insert_columns(model: type[Model], database: BaseDatabaseWrapper) -> list[str]:
    """The quoted columns an INSERT of a ``model`` row writes: all but its pk, in ``insert_values``' order."""
    return [database.ops.quote_name(field.column) for field in _inserted_fields(model)]


def insert_values(instance: Model, database: BaseDatabaseWrapper) -> list[Any]:
    """The values an INSERT of ``instance`` writes (``insert_columns``), prepared for ``database`` as
    ``save()`` prepares them (defaults, ``auto_now_add``)."""
    return [
        field.get_db_prep_save(field.pre_save(instance, add=True), database)
        for field in _inserted_fields(type(instance))
    ]


def _inserted_fields(model: type[Model]) -> list[Any]:
    return [field for field in model._meta.concrete_fields if not field.primary_key]


def quoted_columns(model: type[Model], names: Sequence[str], database: BaseDatabaseWrapper) -> list[str]:
    """The quoted columns of the fields ``names`` (a foreign key's name gives its ``_id`` column)."""
    column_of = {field.name: str(field.column) for field in model._meta.concrete_fields}
    return [database.ops.quote_name(column_of[name]) for name in names]


def inserted(instance: Model, pk: Any, database: BaseDatabaseWrapper) -> None:
    """Marks ``instance`` as the stored row ``pk``, as ``save()`` leaves it."""
    instance.pk = pk
    instance._state.adding = False
    instance._state.db = database.alias


def in_database_thread(fn: Callable[P, R], *, thread_sensitive: bool = False) -> Callable[P, Awaitable[R]]:
    """``fn`` for async callers, on another thread (one transaction per call), made again on a new
    connection when the thread's one was dead (``on_a_live_connection``).

    ``thread_sensitive``: on the process's ingress threads (``ingress_threads``); else on a thread of
    the running loop's executor. A plain ``run_in_executor``: asgiref's ``sync_to_async`` did the same
    for twice the CPU (docs/performance.md, section "Point 10").
    """
    executor = ingress_threads() if thread_sensitive else None

    @functools.wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        def work() -> R:
            return on_a_live_connection(fn, *args, **kwargs)

        context = contextvars.copy_context()  # as sync_to_async: the caller's context variables
        return await asyncio.get_running_loop().run_in_executor(executor, context.run, work)

    return call


@functools.cache
def ingress_threads() -> ThreadPoolExecutor:
    """The threads a web process does ingress's database work on: ``INGRESS_DATABASE_THREADS`` on
    PostgreSQL, where one event's round trip overlaps the next one's work; one on SQLite, which
    takes one writer at a time (a second thread would only wait in its busy handler).

    Calls on different threads may commit in another order than they came. Nothing depends on it:
    a thread's turns are ordered by their Slack ts, and two deliveries of one message are settled by
    the unique constraints. Several web processes never had an order between them either.
    """
    threads = settings.INGRESS_DATABASE_THREADS if connection.vendor == "postgresql" else 1
    return ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="database")


def on_a_live_connection(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Calls ``fn``; when the thread's connection turns out to be dead before anything was done, calls
    it once more on a new one.

    These threads (ingress's, the worker's turn loop's) serve many calls outside Django's request cycle,
    which is what checks a connection before use (CONN_HEALTH_CHECKS). A connection kept from an earlier
    call is dead once the database restarted: its first statement fails. That is not the caller's
    fault, and nothing was written, so the call is made again on a new connection instead of failing
    (a request answered 500, a turn left for the recovery sweep). Checking every connection first would
    cost a round trip per call; this costs nothing until a connection is lost. A failure after a
    statement went through is not repeated: what was committed is not known. Any other failure
    closes a connection it left unusable, so the thread's next call connects again.

    ``fn`` is database work: anything else it does before its first statement may be done twice.
    """
    statements = _Statements()
    kept = None if connection.in_atomic_block else connection.connection
    try:
        with connection.execute_wrapper(statements):
            return fn(*args, **kwargs)
    except (OperationalError, InterfaceError):
        if kept is not None and statements.succeeded == 0 and _was_lost(kept):
            connection.close()
            logger.info("database.reconnected", extra={"call": getattr(fn, "__name__", "")})
            return _closing_if_broken(fn, *args, **kwargs)
        connection.close_if_unusable_or_obsolete()
        raise
    except DatabaseError:
        connection.close_if_unusable_or_obsolete()
        raise


def _was_lost(kept: Any) -> bool:
    # A transaction that failed on a dead connection leaves it closed, or already replaced (leaving
    # atomic() connects again to restore autocommit); a statement outside one leaves it unusable.
    return connection.connection is not kept or not connection.is_usable()


def _closing_if_broken(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    try:
        return fn(*args, **kwargs)
    except DatabaseError:
        connection.close_if_unusable_or_obsolete()
        raise


class _Statements:
    """An execute wrapper that counts the statements the database answered."""

    def __init__(self) -> None:
        self.succeeded = 0

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        self.succeeded += 1
        return result
