"""What is going on now (kourier/live_state.py): the counts /metrics reads from the database when it
is scraped, and a Binding's live page, which counts its own threads only: open sessions, turns
waiting and running, pending interactions by deadline, and its most recent failure."""

from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.models import Alert
from interactions.models import Interaction
from kourier.live_state import AlertFailure, binding_live_state, read_live_state
from kourier.slack import failures
from kourier.slack.clients import connection_workspace
from sessions.models import PostIntent, Turn
from tests.factories import (
    AlertFactory,
    BindingFactory,
    InteractionFactory,
    PostIntentFactory,
    SessionFactory,
    TurnFactory,
)

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


def test_the_last_hours_turns_are_counted_per_minute_by_outcome_and_timed_to_their_first_reply(binding):
    now = timezone.now()
    session = SessionFactory(binding=binding)
    for outcome in ("completed", "completed", "unreachable"):
        TurnFactory(session=session, state=Turn.State.DONE, outcome=outcome, ended_at=now)
    TurnFactory(
        session=session, state=Turn.State.DONE, outcome="completed", ended_at=now - timedelta(hours=2)
    )
    TurnFactory(state=Turn.State.DONE, outcome="completed", ended_at=now)  # another Binding's
    replied = TurnFactory(session=session, state=Turn.State.RUNNING)
    TurnFactory(session=session, state=Turn.State.RUNNING, reply_ts="")  # no reply yet
    replied_ts = f"{replied.created_at.timestamp() + 3.5:.6f}"
    Turn.objects.filter(pk=replied.pk).update(reply_ts=replied_ts)

    state = binding_live_state(binding.pk, now=now)

    assert [(e.outcome, e.count) for e in state.turns_chart.legend] == [("completed", 2), ("unreachable", 1)]
    assert (state.reply_chart.replies, state.reply_chart.median_seconds) == (1, 3.5)


def test_the_last_slack_failure_is_its_connections_and_the_last_alert_failure_its_own(binding):
    now = timezone.now()
    workspace = connection_workspace(binding.connection_id)
    failures.remember(workspace, "chat.postMessage", "not_in_channel", at=now.timestamp())
    thread = AlertFactory(binding=binding)
    Alert.objects.filter(pk=thread.pk).update(
        delivery_failed=True, last_delivery_error="channel_not_found", last_delivery_failed_at=now
    )
    other = AlertFactory()  # another Binding's, more recent
    Alert.objects.filter(pk=other.pk).update(last_delivery_error="ratelimited", last_delivery_failed_at=now)

    state = binding_live_state(binding.pk, now=now)

    assert (state.last_slack_failure.method, state.last_slack_failure.error) == (
        "chat.postMessage",
        "not_in_channel",
    )
    assert state.last_alert_failure == AlertFailure(thread.pk, "channel_not_found", now, given_up=True)
