"""Database helpers the ORM does not give: an insert that yields to a row already holding its key, and
sync database work for async callers that survives a broken connection."""

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection, connections, router
from django.db.models import Model

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
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    column_of = {field.name: str(field.column) for field in meta.concrete_fields}
    values = [field.get_db_prep_save(field.pre_save(instance, add=True), database) for field in fields]
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"ON CONFLICT ({', '.join(quote(column_of[name]) for name in key)}) DO NOTHING "
        f"RETURNING {quote(column_of[meta.pk.name])}"
    )
    with database.cursor() as cursor:
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return False
    instance.pk = row[0]
    instance._state.adding = False
    instance._state.db = database.alias
    return True


def in_database_thread(fn: Callable[P, R], *, thread_sensitive: bool = False) -> Callable[P, Awaitable[R]]:
    """``fn`` for async callers, on a thread of the loop's executor (one transaction per call).

    Django resets a thread's connection only around its own requests; these threads serve many
    calls, so a connection a failure left broken (the database restarted, a network cut) is closed
    here, and the thread's next call connects again instead of failing until the process restarts.
    """

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except DatabaseError:
            connection.close_if_unusable_or_obsolete()
            raise

    return sync_to_async(call, thread_sensitive=thread_sensitive)
