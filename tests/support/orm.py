"""What the ORM does behind a test's back, counted."""

import pytest
from django.db.models.sql.compiler import SQLCompiler


def count_compilations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on until the test ends, one entry in the returned list per statement the ORM compiles."""
    compiled: list[int] = []
    as_sql = SQLCompiler.as_sql

    def counted(compiler, *args, **kwargs):
        compiled.append(1)
        return as_sql(compiler, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", counted)
    return compiled
