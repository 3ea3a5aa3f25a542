"""The sessions app's sweeps, each as beat runs it (``manage.py sweep NAME`` runs one by hand: tests/kourier/test_sweeps.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from sessions import services, sweeps
from sessions.models import Session, Turn
from tests.factories import BindingFactory
from tests.sessions.messages import CHANNEL, said
from tests.support.queue import enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding():
    return BindingFactory(channels=[CHANNEL])


def test_the_sweep_deletes_sessions_long_expired_with_their_turns_and_notes(binding):
    services.route_message(binding.connection, said())
    Session.objects.update(expires_at=timezone.now() - timedelta(days=91))
    assert sweeps.delete_expired_sessions().counts == {"sessions deleted": 1}
    assert not Session.objects.exists()
    assert not Turn.objects.exists()
    assert AuditEvent.objects.get().details == {"count": 1}


def test_the_sweep_keeps_sessions_expired_less_than_ninety_days(binding):
    services.route_message(binding.connection, said())
    Session.objects.update(expires_at=timezone.now() - timedelta(days=89))
    assert sweeps.delete_expired_sessions().counts == {"sessions deleted": 0}
    assert Session.objects.exists()
    assert not AuditEvent.objects.exists()


class TestRecoverSessions:
    def test_a_session_with_a_queued_turn_and_no_runner_is_driven_again(
        self, binding, django_capture_on_commit_callbacks
    ):
        services.route_message(binding.connection, said())
        session = Session.objects.get()
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            swept = sweeps.recover_sessions()
        assert swept.counts == {"sessions driven again": 1}
        assert enqueued(callbacks) == [("drive_session", (session.id,))]

    def test_a_session_whose_runner_holds_a_live_lease_is_left_to_it(
        self, binding, django_capture_on_commit_callbacks
    ):
        services.route_message(binding.connection, said())
        Session.objects.update(lease_owner="worker-1", lease_expires_at=timezone.now() + timedelta(minutes=1))
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert sweeps.recover_sessions().counts == {"sessions driven again": 0}
        assert callbacks == []

    def test_a_session_whose_turns_have_all_ended_is_left_alone(
        self, binding, django_capture_on_commit_callbacks
    ):
        services.route_message(binding.connection, said())
        Turn.objects.update(state=Turn.State.DONE)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert sweeps.recover_sessions().counts == {"sessions driven again": 0}
        assert callbacks == []
