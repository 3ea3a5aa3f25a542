"""Migration ``interactions.0012_question_cancellations_retried``: questions that ended before it had
their task's cancellation tried once, as it then was, and are not owed another."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from interactions import cancellations
from interactions.models import Interaction
from tests.factories import InteractionFactory

BEFORE = [("interactions", "0011_interaction_requester_and_policy_denials")]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_questions_ended_before_the_upgrade_are_not_owed_a_cancellation_approvals_still_are():
    closed = timezone.now()
    timed_out = InteractionFactory(state=Interaction.State.TIMED_OUT, closed_at=closed)
    refused = InteractionFactory(state=Interaction.State.CANCELLED)
    still_open = InteractionFactory(state=Interaction.State.OPEN)
    refused_approval = InteractionFactory(kind=Interaction.Kind.APPROVAL, state=Interaction.State.CANCELLED)
    migrate(BEFORE)
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    cancelled_at = dict(Interaction.objects.values_list("pk", "task_cancelled_at"))
    assert cancelled_at[timed_out.pk] == closed
    assert cancelled_at[refused.pk] == Interaction.objects.get(pk=refused.pk).created_at
    assert cancelled_at[still_open.pk] is None
    assert [owing.pk for owing in cancellations.owed()] == [refused_approval.pk]
