import pytest
from django.db import connection

from tests.support.requires_postgres import why_skipped


def test_a_test_needing_postgresql_runs_there():
    assert why_skipped("row locks", "postgresql") is None


def test_elsewhere_it_is_skipped_saying_why_and_how_to_run_it():
    assert why_skipped("row locks", "sqlite") == (
        "row locks; set DATABASE_URL to a PostgreSQL database to run it"
    )


@pytest.mark.requires_postgres("the marker's own check")
def test_a_test_marked_requires_postgres_runs_only_on_postgresql():
    assert connection.vendor == "postgresql"
