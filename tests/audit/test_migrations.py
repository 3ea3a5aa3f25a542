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


HASHED_THE_OLD_WAY = [("audit", "0005_actor_kind_django_user")]


@pytest.mark.django_db(transaction=True)
def test_rows_hashed_the_old_way_verify_after_the_keyed_chain_and_rekey_keys_them(settings):
    from audit import chain
    from audit.models import AuditEvent as Current

    old = migrate(HASHED_THE_OLD_WAY)
    try:
        AuditEvent = old.get_model("audit", "AuditEvent")
        previous_hash = chain.GENESIS
        for n in range(3):  # as the release before writes them: SHA-256, no key
            row = AuditEvent(
                action="interaction.decided",
                actor_kind="system",
                subject=f"interaction {n}",
                requester="",
                policy="",
            )
            row.previous_hash = previous_hash
            row.hash = chain.digest(
                previous_hash, {name: getattr(row, name) for name in chain.CHAINED_FIELDS}
            )
            row.save()
            previous_hash = row.hash
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert services.verify() == (3, None)  # no key yet: as before
    settings.AUDIT_KEY = "an-audit-key-of-the-operator-s-own-at-least-32-chars"
    assert services.verify()[1] == chain.Break(Current.objects.order_by("id")[0].pk, chain.NOT_KEYED)

    assert services.rekey() == 3

    assert services.verify() == (3, None)
