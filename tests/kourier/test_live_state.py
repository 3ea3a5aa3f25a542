"""What is going on now (kourier/live_state.py): the counts /metrics reads from the database when it
is scraped, and a Binding's live page, which counts its own threads only: open sessions, turns
waiting and running, pending interactions by deadline, and its most recent failure."""

from datetime import timedelta

import pytest
from django.utils import timezone

from interactions.models import Interaction
from kourier.live_state import binding_live_state, read_live_state
from sessions.models import PostIntent, Turn
from tests.factories import BindingFactory, InteractionFactory, PostIntentFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db


def test_turns_waiting_and_running_are_counted_by_binding():
    ops = SessionFactory(binding__name="ops")
    TurnFactory.create_batch(2, session=ops)
    TurnFactory(session=ops, state=Turn.State.RUNNING)
    TurnFactory(session=ops, state=Turn.State.DONE)
    TurnFactory(session__binding__name="support")

    state = read_live_state()

    assert state.turns_queued == {"ops": 2, "support": 1}
    assert state.turns_running == {"ops": 1, "support": 0}


def test_an_idle_binding_counts_zero_rather_than_nothing():
    BindingFactory(name="idle")

    state = read_live_state()

    assert (state.turns_queued, state.turns_running) == ({"idle": 0}, {"idle": 0})
    assert state.interactions_pending == {("idle", "question"): 0, ("idle", "approval"): 0}


def test_only_open_interactions_are_pending_by_binding_and_kind():
    binding = BindingFactory(name="ops")
    InteractionFactory(turn__session__binding=binding)
    InteractionFactory(turn__session__binding=binding, kind=Interaction.Kind.APPROVAL)
    InteractionFactory(turn__session__binding=binding, state=Interaction.State.ANSWERED)

    assert read_live_state().interactions_pending == {("ops", "question"): 1, ("ops", "approval"): 1}


def test_a_notice_is_owed_once_its_turn_ended_until_slack_took_it():
    PostIntentFactory(turn__state=Turn.State.FAILED)
    PostIntentFactory(turn__state=Turn.State.FAILED, state=PostIntent.State.CONFIRMED, ts="1.2")
    PostIntentFactory(turn__state=Turn.State.RUNNING)  # its runner is posting it

    assert read_live_state().notices_owed == 1


def test_a_notice_past_the_sweeps_horizon_is_no_longer_owed():
    old = PostIntentFactory(turn__state=Turn.State.FAILED)
    PostIntent.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=2))

    assert read_live_state().notices_owed == 0


# -- a Binding's live page -------------------------------------------------------------------------


@pytest.fixture
def binding():
    return BindingFactory(name="ops")


def test_a_binding_with_no_threads_has_nothing_going_on(binding):
    state = binding_live_state(binding.pk)

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

    state = binding_live_state(binding.pk, now=now)

    assert (state.sessions_open, state.sessions_running) == (2, 1)


def test_turns_are_counted_queued_and_running(binding):
    session = SessionFactory(binding=binding)
    TurnFactory.create_batch(2, session=session, state=Turn.State.QUEUED)
    TurnFactory(session=session, state=Turn.State.RUNNING)
    TurnFactory(session=session, state=Turn.State.DONE)
    TurnFactory(state=Turn.State.QUEUED)  # another Binding's

    state = binding_live_state(binding.pk)

    assert (state.turns_queued, state.turns_running) == (2, 1)


def test_pending_interactions_come_soonest_deadline_first_and_decided_ones_are_left_out(binding):
    now = timezone.now()
    later = InteractionFactory(turn__session__binding=binding, deadline=now + timedelta(hours=2))
    sooner = InteractionFactory(turn__session__binding=binding, deadline=now + timedelta(minutes=5))
    InteractionFactory(turn__session__binding=binding, state=Interaction.State.ANSWERED)
    InteractionFactory()  # another Binding's

    state = binding_live_state(binding.pk)

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

    failure = binding_live_state(binding.pk).last_failure

    assert failure is not None
    assert (failure.turn_id, failure.outcome, failure.at) == (latest.pk, "crashed", latest.ended_at)
