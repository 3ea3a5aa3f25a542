"""The counts /metrics reads from the database when it is scraped (kourier/live_state.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from interactions.models import Interaction
from kourier.live_state import read_live_state
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
