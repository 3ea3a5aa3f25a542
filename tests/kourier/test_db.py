import pytest
from django.utils import timezone

from kourier.db import insert_unless_taken
from sessions.models import Session
from tests.factories import ConnectionFactory

pytestmark = pytest.mark.django_db

KEY = ("connection", "channel_id", "thread_ts")


def a_session(connection, binding=None, **fields) -> Session:
    now = timezone.now()
    defaults = {
        "channel_id": "C1",
        "thread_ts": "1700000001.000100",
        "last_activity_at": now,
        "expires_at": now,
    }
    return Session(connection=connection, binding=binding, **{**defaults, **fields})


def test_a_new_row_is_inserted_and_gets_its_pk():
    session = a_session(ConnectionFactory())
    assert insert_unless_taken(session, KEY) is True
    stored = Session.objects.get()
    assert session.pk == stored.pk
    assert (stored.channel_id, stored.thread_ts, stored.kind) == ("C1", "1700000001.000100", "chat")
    assert stored.created_at is not None


def test_a_row_whose_key_is_taken_is_not_inserted_and_the_first_one_is_left_alone():
    connection = ConnectionFactory()
    insert_unless_taken(a_session(connection, context_id="first"), KEY)
    second = a_session(connection, context_id="second")
    assert insert_unless_taken(second, KEY) is False
    assert second.pk is None
    assert list(Session.objects.values_list("context_id", flat=True)) == ["first"]


def test_the_same_fields_outside_the_key_make_a_new_row():
    connection = ConnectionFactory()
    insert_unless_taken(a_session(connection), KEY)
    assert insert_unless_taken(a_session(connection, thread_ts="1700000002.000100"), KEY) is True
    assert Session.objects.count() == 2
