"""A Binding's live state counts its own threads only: open sessions, turns waiting and running,
pending interactions by deadline, and its most recent failure."""

from datetime import timedelta

import pytest
from django.utils import timezone

from interactions.models import Interaction
from sessions.live import live_state
from sessions.models import Turn
from tests.factories import BindingFactory, InteractionFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def binding():
    return BindingFactory(name="ops")


def test_a_binding_with_no_threads_has_nothing_going_on(binding):
    state = live_state(binding.pk)

    assert (state.sessions_open, state.sessions_running, state.turns_queued, state.turns_running) == (
        0,
        0,
        0,
        0,
    )
    assert (state.pending_count, state.pending, state.last_failure) == (0, [], None)


def test_sessions_are_open_until_they_expire_and_running_while_a_runner_holds_a_live_lease(binding):
    now = timezone.now()
    SessionFactory(binding=binding, lease_owner="worker-1", lease_expires_at=now + timedelta(seconds=30))
    SessionFactory(binding=binding, lease_owner="worker-2", lease_expires_at=now - timedelta(seconds=1))
    SessionFactory(binding=binding, expires_at=now - timedelta(minutes=1))
    SessionFactory()  # another Binding's

    state = live_state(binding.pk, now=now)

    assert (state.sessions_open, state.sessions_running) == (2, 1)


def test_turns_are_counted_queued_and_running(binding):
    session = SessionFactory(binding=binding)
    TurnFactory.create_batch(2, session=session, state=Turn.State.QUEUED)
    TurnFactory(session=session, state=Turn.State.RUNNING)
    TurnFactory(session=session, state=Turn.State.DONE)
    TurnFactory(state=Turn.State.QUEUED)  # another Binding's

    state = live_state(binding.pk)

    assert (state.turns_queued, state.turns_running) == (2, 1)


def test_pending_interactions_come_soonest_deadline_first_and_decided_ones_are_left_out(binding):
    now = timezone.now()
    later = InteractionFactory(turn__session__binding=binding, deadline=now + timedelta(hours=2))
    sooner = InteractionFactory(turn__session__binding=binding, deadline=now + timedelta(minutes=5))
    InteractionFactory(turn__session__binding=binding, state=Interaction.State.ANSWERED)
    InteractionFactory()  # another Binding's

    state = live_state(binding.pk)

    assert state.pending_count == 2
    assert [(i.pk, i.deadline) for i in state.pending] == [
        (sooner.pk, sooner.deadline),
        (later.pk, later.deadline),
    ]


def test_the_last_failure_is_the_most_recently_ended_failed_turn_with_its_outcome_and_time(binding):
    session = SessionFactory(binding=binding)
    now = timezone.now()
    TurnFactory(
        session=session,
        state=Turn.State.FAILED,
        outcome=Turn.Outcome.UNREACHABLE,
        ended_at=now - timedelta(hours=1),
    )
    latest = TurnFactory(
        session=session,
        state=Turn.State.FAILED,
        outcome=Turn.Outcome.CRASHED,
        ended_at=now - timedelta(minutes=3),
    )
    TurnFactory(session=session, state=Turn.State.DONE, outcome=Turn.Outcome.COMPLETED, ended_at=now)
    TurnFactory(state=Turn.State.FAILED, outcome=Turn.Outcome.LOST, ended_at=now)  # another Binding's

    failure = live_state(binding.pk).last_failure

    assert failure is not None
    assert (failure.turn_id, failure.outcome, failure.at) == (latest.pk, "crashed", latest.ended_at)
