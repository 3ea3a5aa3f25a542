"""Database helpers the ORM does not give: an insert that yields to a row already holding its key, sync
database work for async callers that survives a broken connection, and a hot look compiled once."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model, QuerySet

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


M = TypeVar("M", bound=Model)


class CompiledFirst(Generic[M]):
    """The first row of a query that the ORM builds and compiles once per database connection, then
    runs with other values: for a hot look whose building costs more than its running (the runner's
    look for its next turn, built for each call, was 11 % of the worker's Python CPU, 2 % compiled
    once: docs/performance.md, issue 17 point 6, session 2).

    ``build(**values)`` makes the queryset (ordered). It is built twice, with the two sets of
    ``stand_ins`` (values no row has), and its statement kept only when the two differ in parameters
    alone, each where a stand-in went in, as it is or as the database stores a datetime. Anything else
    (a parameter derived from a value, such as ``now - 1 day``; a value that changes the statement's
    text) is refused at the first call (ValueError), never run wrong.
    """

    def __init__(
        self,
        model: type[M],
        build: Callable[..., QuerySet[M]],
        stand_ins: tuple[dict[str, Any], dict[str, Any]],
    ) -> None:
        self.model = model
        self.build = build
        self.stand_ins = stand_ins
        self._compiled: weakref.WeakKeyDictionary[BaseDatabaseWrapper, _Compiled[M]] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, **values: Any) -> M | None:
        database = connections[router.db_for_read(self.model)]
        compiled = self._compiled.get(database)
        if compiled is None:  # each thread has its connection: no two threads make one entry
            compiled = self._compiled[database] = self._compile(database)
        return compiled.first(database, values)

    def _compile(self, database: BaseDatabaseWrapper) -> _Compiled[M]:
        first, second = (self._statement(database, stand_ins) for stand_ins in self.stand_ins)
        (sql, params, compiler), (other_sql, other_params, _) = first, second
        if sql != other_sql or len(params) != len(other_params):
            raise ValueError(f"the statement's text depends on its values: {sql!r}")
        slots: list[tuple[int, str, Callable[[Any], Any]]] = []
        for position, (one, other) in enumerate(zip(params, other_params, strict=True)):
            if one == other:
                continue  # a constant of the query
            slot = next(
                (
                    (position, name, adapt)
                    for name in self.stand_ins[0]
                    for adapt in (_as_it_is, database.ops.adapt_datetimefield_value)
                    if _adapts(adapt, self.stand_ins[0][name], one)
                    and _adapts(adapt, self.stand_ins[1][name], other)
                ),
                None,
            )
            if slot is None:
                raise ValueError(f"parameter {position} of {sql!r} is not one of the values as they are")
            slots.append(slot)
        columns = [expression for expression, _, _ in compiler.select]
        names = [getattr(getattr(column, "target", None), "attname", None) for column in columns]
        if compiler.query.model is not self.model or names != [
            field.attname for field in self.model._meta.concrete_fields
        ]:
            raise ValueError(f"the statement does not read every column of {self.model.__name__}, only")
        return _Compiled(
            sql,
            list(params),
            slots,
            [str(name) for name in names],
            compiler.get_converters(columns),
            self.model,
        )

    def _statement(
        self, database: BaseDatabaseWrapper, stand_ins: dict[str, Any]
    ) -> tuple[str, tuple[Any, ...], Any]:
        compiler = self.build(**stand_ins)[:1].query.get_compiler(connection=database)
        sql, params = compiler.as_sql()
        return sql, tuple(params), compiler


def _as_it_is(value: Any) -> Any:
    return value


def _adapts(adapt: Callable[[Any], Any], value: Any, parameter: Any) -> bool:
    try:
        return bool(adapt(value) == parameter)
    except (TypeError, ValueError, AttributeError):
        return False


@dataclass(frozen=True)
class _Compiled(Generic[M]):
    sql: str
    params: list[Any]
    slots: list[tuple[int, str, Callable[[Any], Any]]]
    names: list[str]
    converters: dict[int, Any]
    model: type[M]

    def first(self, database: BaseDatabaseWrapper, values: dict[str, Any]) -> M | None:
        params = list(self.params)
        for position, name, adapt in self.slots:
            params[position] = adapt(values[name])
        with database.cursor() as cursor:
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        row = list(row)
        for position, (converters, expression) in self.converters.items():
            for convert in converters:
                row[position] = convert(row[position], expression, database)
        return self.model.from_db(database.alias, self.names, row)
