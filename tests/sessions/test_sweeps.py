"""The sessions app's sweeps, each as beat runs it and as ``manage.py sweep NAME`` runs it by hand."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from audit.models import AuditEvent
from kourier.sweeps import all_sweeps
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


class TestTheSweepCommand:
    def test_it_runs_the_sweep_named_and_prints_what_it_did(self, binding):
        services.route_message(binding.connection, said())
        Session.objects.update(expires_at=timezone.now() - timedelta(days=91))
        out = StringIO()
        call_command("sweep", "delete-expired-sessions", stdout=out)
        assert out.getvalue() == "delete-expired-sessions: 1 sessions deleted\n"
        assert not Session.objects.exists()

    def test_a_sweep_with_nothing_to_do_says_so(self):
        out = StringIO()
        call_command("sweep", "recover-sessions", stdout=out)
        assert out.getvalue() == "recover-sessions: nothing to do\n"

    def test_without_a_name_it_lists_every_sweep(self):
        out = StringIO()
        call_command("sweep", stdout=out)
        names = [line.split(":")[0] for line in out.getvalue().splitlines()]
        assert names == [
            "close-owed-prompts",
            "delete-expired-sessions",
            "deliver-alerts",
            "deliver-kept-answers",
            "post-owed-notices",
            "recover-sessions",
            "remind-approvers",
            "remove-stale-acknowledgments",
            "retry-kept-presses",
            "time-out-interactions",
        ]

    def test_every_sweep_listed_says_what_it_does(self):
        out = StringIO()
        call_command("sweep", stdout=out)
        undescribed = [line for line in out.getvalue().splitlines() if not line.split(":", 1)[1].strip()]
        assert undescribed == []

    def test_an_unknown_name_is_refused_with_the_names_there_are(self):
        with pytest.raises(CommandError, match="No sweep is named 'nope'; there are: close-owed-prompts"):
            call_command("sweep", "nope")


def test_every_sweep_has_a_beat_schedule_through_its_task(settings):
    scheduled = {entry["task"].rsplit(".", 1)[-1] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled == {name.replace("-", "_") for name in all_sweeps()}
