from datetime import timedelta

import pytest
from django.utils import timezone

from sessions import services, turns
from sessions.models import Session, Turn
from tests.factories import BindingFactory
from tests.sessions.messages import CHANNEL, said

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding():
    return BindingFactory(channels=[CHANNEL])


class TestLease:
    def test_a_free_lease_is_taken_and_a_held_one_is_not(self, binding):
        services.route_message(binding.connection, said())
        session = Session.objects.get()
        assert turns.claim_lease(session.id, "runner-a", seconds=60)
        assert not turns.claim_lease(session.id, "runner-b", seconds=60)

    def test_an_expired_lease_is_taken_over(self, binding):
        services.route_message(binding.connection, said())
        session = Session.objects.get()
        past = timezone.now() - timedelta(minutes=5)
        assert turns.claim_lease(session.id, "runner-a", seconds=60, now=past)
        assert turns.claim_lease(session.id, "runner-b", seconds=60)
        assert not turns.renew_lease(session.id, "runner-a", seconds=60)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [({}, (False, 10)), ({"allow_mentions": "users", "max_messages": 3}, (True, 3))],
)
def test_a_turns_work_carries_the_bindings_reply_limits(monkeypatch, fields, expected):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    binding = BindingFactory(channels=[CHANNEL], **fields)
    services.route_message(binding.connection, said())

    work = turns.start_turn(Turn.objects.get().pk)

    assert (work.allow_user_mentions, work.max_messages) == expected
