"""The registry of sweeps: a sweep is registered once, and its Celery task and beat's schedule are
made from that registration; ``manage.py sweep`` lists them and runs one by hand."""

from datetime import timedelta
from importlib import import_module
from io import StringIO

import pytest
from celery import current_app
from django.apps import apps
from django.core.management import CommandError, call_command
from django.utils import timezone

from kourier import sweeps
from kourier.queue import import_task_modules
from kourier.sweeps import Swept, all_sweeps, beat_schedule, sweep
from sessions import services
from sessions.models import Session
from tests.factories import BindingFactory
from tests.sessions.messages import CHANNEL, said


@pytest.fixture
def registry(monkeypatch):
    """The registry as the apps left it, restored after the test registers sweeps of its own."""
    all_sweeps()
    monkeypatch.setattr(sweeps, "_sweeps", dict(sweeps._sweeps))
    return sweeps._sweeps


def product_tasks() -> set[str]:
    """Every Celery task of the product (Celery's own, ``celery.*``, left out)."""
    import_task_modules()
    return {name for name in current_app.tasks if not name.startswith("celery.")}


def tasks_sent_by_name() -> set[str]:
    """The tasks the apps send by name (each app's task_names module)."""
    names: set[str] = set()
    for app in apps.get_app_configs():
        try:
            module = import_module(f"{app.name}.task_names")
        except ModuleNotFoundError:
            continue
        names |= {value for key, value in vars(module).items() if key.isupper() and isinstance(value, str)}
    return names


def test_every_registered_sweep_has_its_celery_task_and_its_beat_entry():
    registered = all_sweeps()
    schedule = beat_schedule()
    assert set(schedule) == set(registered)
    for name, registered_sweep in registered.items():
        assert registered_sweep.task_name in current_app.tasks
        assert schedule[name] == {"task": registered_sweep.task_name, "schedule": registered_sweep.interval()}


def test_beat_runs_the_schedule_made_from_the_registrations_and_nothing_else():
    current_app.loader.import_default_modules()  # what beat does at its start, before it reads its schedule
    scheduled = {entry["task"] for entry in current_app.conf.beat_schedule.values()}
    assert scheduled == {registered.task_name for registered in all_sweeps().values()}


def test_no_celery_task_of_the_product_is_a_sweep_without_its_registration():
    sweep_tasks = {registered.task_name for registered in all_sweeps().values()}
    assert product_tasks() - sweep_tasks == tasks_sent_by_name()


@pytest.mark.django_db
def test_a_sweeps_task_runs_the_sweep_and_returns_its_counts():
    all_sweeps()
    assert current_app.tasks["sweeps.recover-sessions"]() == {"sessions driven again": 0}


def test_a_sweep_runs_every_recovery_interval_unless_it_names_its_own(settings):
    settings.RECOVERY_INTERVAL_SECONDS = 7.0
    schedule = beat_schedule()
    assert schedule["recover-sessions"]["schedule"] == 7.0
    assert schedule["delete-expired-sessions"]["schedule"] == 3600.0


def test_a_sweep_registered_is_given_its_task_and_its_place_in_beats_schedule(registry):
    @sweep("count-to-three", every=5)
    def count_to_three() -> Swept:
        """Counts to three."""
        return Swept({"numbers counted": 3})

    assert current_app.tasks["sweeps.count-to-three"]() == {"numbers counted": 3}
    assert beat_schedule()["count-to-three"] == {"task": "sweeps.count-to-three", "schedule": 5}


def test_two_sweeps_of_one_name_are_refused(registry):
    def another() -> Swept:
        return Swept()

    with pytest.raises(ValueError, match="two sweeps are named 'recover-sessions'"):
        sweep("recover-sessions")(another)


class TestTheSweepCommand:
    @pytest.mark.django_db
    def test_it_runs_the_sweep_named_and_prints_what_it_did(self):
        binding = BindingFactory(channels=[CHANNEL])
        services.route_message(binding.connection, said())
        Session.objects.update(expires_at=timezone.now() - timedelta(days=91))
        out = StringIO()
        call_command("sweep", "delete-expired-sessions", stdout=out)
        assert out.getvalue() == "delete-expired-sessions: 1 sessions deleted\n"
        assert not Session.objects.exists()

    @pytest.mark.django_db
    def test_a_sweep_with_nothing_to_do_says_so(self):
        out = StringIO()
        call_command("sweep", "recover-sessions", stdout=out)
        assert out.getvalue() == "recover-sessions: nothing to do\n"

    def test_without_a_name_it_lists_every_sweep_with_how_often_beat_runs_it(self, settings):
        settings.RECOVERY_INTERVAL_SECONDS = 30.0
        out = StringIO()
        call_command("sweep", stdout=out)
        lines = out.getvalue().splitlines()
        assert [line.split(":")[0] for line in lines] == [
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
        assert lines[1].endswith("(every 3600 s)")
        assert lines[5].endswith("(every 30 s)")

    def test_every_sweep_says_what_it_does(self):
        assert [name for name, registered in all_sweeps().items() if not registered.description()] == []

    def test_an_unknown_name_is_refused_with_the_names_there_are(self):
        with pytest.raises(CommandError, match="No sweep is named 'nope'; there are: close-owed-prompts"):
            call_command("sweep", "nope")
