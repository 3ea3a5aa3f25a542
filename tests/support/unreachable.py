"""A database the process cannot reach, for the readiness tests: the connection settings point where
nothing answers (a closed port for PostgreSQL, a file in a missing directory for SQLite) until the
block ends; connections opened meanwhile fail as they would against a database that is down."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


@contextmanager
def unreachable_database() -> Iterator[None]:
    kept = dict(connection.settings_dict)
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-kourier-test/db.sqlite3"
    else:
        connection.settings_dict.update(HOST="127.0.0.1", PORT="9")
    try:
        yield
    finally:
        connection.settings_dict.clear()
        connection.settings_dict.update(kept)
