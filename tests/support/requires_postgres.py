"""The one marker for a test that PostgreSQL alone can run (row locks, concurrent claims, its
triggers): ``@pytest.mark.requires_postgres("why SQLite cannot")``. On another database the test is
skipped with that reason; CI runs the suite on PostgreSQL, where every such test runs."""

import pytest

MARKER = "requires_postgres"


def why_skipped(reason: str | None, vendor: str) -> str | None:
    """The skip's message, or None when the test can run on ``vendor``."""
    if vendor == "postgresql":
        return None
    return f"{reason or 'needs PostgreSQL'}; set DATABASE_URL to a PostgreSQL database to run it"


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return
    from django.db import connection

    message = why_skipped(marker.args[0] if marker.args else None, connection.vendor)
    if message:
        pytest.skip(message)
