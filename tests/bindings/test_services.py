"""Lookups and runtime writes of bindings.services (applying manifests is in test_apply.py)."""

import pytest

from bindings.models import Connection
from bindings.services import note_slack_identity
from tests.factories import ConnectionFactory

pytestmark = pytest.mark.django_db


def test_the_identity_auth_test_named_is_kept():
    connection = ConnectionFactory()
    note_slack_identity(connection.pk, team_id="T1", bot_user_id="U1")
    connection.refresh_from_db()
    assert (connection.team_id, connection.bot_user_id) == ("T1", "U1")


def test_noting_the_same_identity_again_writes_nothing(django_assert_num_queries):
    connection = ConnectionFactory()
    note_slack_identity(connection.pk, team_id="T1", bot_user_id="U1")
    with django_assert_num_queries(0) as queries:
        note_slack_identity(connection.pk, team_id="T1", bot_user_id="U1")
    assert queries.captured_queries == []


def test_a_new_identity_is_written():
    connection = ConnectionFactory()
    note_slack_identity(connection.pk, team_id="T1", bot_user_id="U1")
    note_slack_identity(connection.pk, team_id="T1", bot_user_id="U2")
    assert Connection.objects.get(pk=connection.pk).bot_user_id == "U2"


def test_an_empty_identity_is_not_written():
    connection = ConnectionFactory(team_id="T1", bot_user_id="U1")
    note_slack_identity(connection.pk, team_id="", bot_user_id="")
    assert Connection.objects.filter(pk=connection.pk, team_id="T1", bot_user_id="U1").exists()
