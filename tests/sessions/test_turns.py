from datetime import timedelta

import pytest
from django.utils import timezone

from sessions import services, turns
from sessions.models import Session
from tests.factories import BindingFactory, TurnFactory
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


def test_a_turn_keeps_the_tokens_the_agent_reported_for_it():
    turn = TurnFactory(task_id="task-1")

    charged = turns.record_usage(turn.pk, input_tokens=100, output_tokens=20, task_total=False)

    turn.refresh_from_db()
    assert charged == (100, 20)
    assert (turn.input_tokens, turn.output_tokens) == (100, 20)


def test_a_task_total_is_charged_less_what_the_tasks_earlier_turns_were():
    asked = TurnFactory(task_id="task-1", input_tokens=100, output_tokens=20)
    answer = TurnFactory(session=asked.session, task_id="task-1", message_ts="1700000099.000200")

    charged = turns.record_usage(answer.pk, input_tokens=250, output_tokens=30, task_total=True)

    answer.refresh_from_db()
    assert charged == (150, 10)
    assert (answer.input_tokens, answer.output_tokens) == (150, 10)


class TestDailyTokenBudget:
    NOW = timezone.now().replace(hour=15, minute=0)

    def turn_with_budget(self, budget):
        binding = BindingFactory(daily_token_budget=budget)
        return TurnFactory(
            session__binding=binding, session__connection=binding.connection, started_at=self.NOW
        )

    def test_a_channel_under_its_budget_goes_on(self):
        turn = self.turn_with_budget(100)
        TurnFactory(session=turn.session, input_tokens=60, output_tokens=39, started_at=self.NOW)

        assert turns.budget_spent(turn.pk, now=self.NOW) is None

    def test_a_channel_at_its_budget_is_spent_and_the_thread_not_yet_told(self):
        turn = self.turn_with_budget(100)
        TurnFactory(session=turn.session, input_tokens=60, output_tokens=40, started_at=self.NOW)

        assert turns.budget_spent(turn.pk, now=self.NOW) == turns.BudgetSpent(told=False)

    def test_a_thread_told_today_is_not_told_again(self):
        turn = self.turn_with_budget(100)
        TurnFactory(session=turn.session, input_tokens=100, output_tokens=0, started_at=self.NOW)
        TurnFactory(session=turn.session, outcome="budget-spent", started_at=self.NOW)

        assert turns.budget_spent(turn.pk, now=self.NOW) == turns.BudgetSpent(told=True)

    def test_yesterdays_tokens_do_not_count(self):
        turn = self.turn_with_budget(100)
        yesterday = self.NOW - timedelta(days=1)
        TurnFactory(session=turn.session, input_tokens=500, output_tokens=0, started_at=yesterday)

        assert turns.budget_spent(turn.pk, now=self.NOW) is None

    def test_without_a_budget_nothing_is_spent(self):
        turn = self.turn_with_budget(None)
        TurnFactory(session=turn.session, input_tokens=10**9, output_tokens=0, started_at=self.NOW)

        assert turns.budget_spent(turn.pk, now=self.NOW) is None
