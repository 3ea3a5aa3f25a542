"""Statements the ORM does not spell: an insert that yields to a row already holding its key."""

from collections.abc import Sequence

from django.db import connections, router
from django.db.models import Model


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
