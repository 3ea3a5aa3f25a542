"""Migration ``audit.0004_hash_chain`` chains the rows written before it, in id order."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from audit import services

BEFORE = [("audit", "0002_append_only_in_the_database")]
CHAINED = [("audit", "0004_hash_chain")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_the_rows_written_before_the_chain_are_chained_in_order():
    old = migrate(BEFORE)
    try:
        AuditEvent = old.get_model("audit", "AuditEvent")
        for n in range(3):
            AuditEvent.objects.create(
                action="interaction.decided", actor_kind="system", subject=f"interaction {n}"
            )
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert services.verify() == (3, None)
    services.record("interaction.decided", subject="interaction 3")  # and the chain goes on from them
    assert services.verify() == (4, None)
