import threading
import time
from datetime import timedelta

import pytest
from django import db
from django.utils import timezone

from bindings import directory
from interactions.models import Interaction
from kourier.slack.incoming import ChatMessage
from sessions import services, turns
from sessions.models import Session, ThreadNote, Turn
from sessions.thread_context import Bounds
from tests.factories import BindingFactory, InteractionFactory, TurnFactory
from tests.sessions.messages import CHANNEL, said
from tests.support.orm import count_compilations

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

    def test_a_runners_look_takes_the_lease_with_the_next_turn_and_lets_it_go_when_none_is_left(
        self, binding
    ):
        services.route_message(binding.connection, said())
        session, queued = Session.objects.get(), Turn.objects.get()
        assert turns.lease_next_turn(session.id, "runner-a", seconds=60) == queued
        assert turns.lease_next_turn(session.id, "runner-b", seconds=60) is None  # runner-a holds it
        assert Session.objects.get().lease_owner == "runner-a"
        Turn.objects.update(state=Turn.State.DONE)
        assert turns.lease_next_turn(session.id, "runner-a", seconds=60) is None
        assert Session.objects.get().lease_owner == ""
        assert turns.claim_lease(session.id, "runner-b", seconds=60)


@pytest.mark.requires_postgres("SQLite serializes every write, so a look and a claim cannot race there")
@pytest.mark.django_db(transaction=True)
def test_a_turn_stored_after_a_runners_last_look_finds_the_lease_free(binding, monkeypatch):
    services.route_message(binding.connection, said())
    session = Session.objects.get()
    Turn.objects.update(state=Turn.State.DONE)
    assert turns.claim_lease(session.id, "runner-a", seconds=60)  # runner-a ran the session's turn
    looked, stored = threading.Event(), threading.Event()
    look = turns.next_queued_turn

    def look_then_wait(session_id: int):
        found = look(session_id)  # nothing: the reply below is not stored yet
        looked.set()
        stored.wait(timeout=30)
        return found

    monkeypatch.setattr(turns, "next_queued_turn", look_then_wait)
    leased: dict[str, object] = {}

    def on_a_thread(name: str, work) -> threading.Thread:
        def run() -> None:
            try:
                leased[name] = work()
            finally:
                db.connection.close()

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    runner_a = on_a_thread("a", lambda: turns.lease_next_turn(session.id, "runner-a", seconds=60))
    assert looked.wait(timeout=30)
    replier = on_a_thread(
        "reply",
        lambda: services.route_message(
            binding.connection, said("and now?", ts="1700000001.000200", thread_ts="1700000001.000100")
        ),
    )
    # The reply's transaction touches the session's row, which runner-a holds until it commits: the
    # reply is stored after runner-a's look, and once runner-a lets the lease go.
    assert waits_for_a_row_lock_or_ends(replier)
    stored.set()
    runner_a.join(timeout=30)
    replier.join(timeout=30)
    reply = leased.pop("reply")
    assert reply.created  # stored and committed; its runner tries to take the session
    runner_b = on_a_thread("b", lambda: turns.claim_lease(session.id, "runner-b", seconds=60))
    runner_b.join(timeout=30)
    assert leased == {"a": None, "b": True}  # runner-a let it go, runner-b has it


def waits_for_a_row_lock_or_ends(thread: threading.Thread, timeout: float = 30.0) -> bool:
    """Whether another backend of this database came to wait for a lock (or ``thread`` ended)."""
    deadline = time.monotonic() + timeout
    with db.connection.cursor() as cursor:
        while time.monotonic() < deadline and thread.is_alive():
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.02)  # polling the server for the waiting backend, not timing a race
    return not thread.is_alive()


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


class TestNotesHeldWhileAPauseIsOpen:
    """threadReplies: mention: replies that are not turns wait for the next mentioned turn, even when
    an answer or a decision is sent to the agent before it."""

    ROOT = "1700000001.000100"

    @pytest.fixture
    def paused(self, monkeypatch):
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")  # start_turn reads the Connection's token
        binding = BindingFactory(channels=[CHANNEL], thread_replies="mention")
        services.route_message(binding.connection, said("deploy"))
        asked = Turn.objects.get()
        turns.start_turn(asked.id)
        turns.finish_turn(asked.id, outcome=Turn.Outcome.ASKED, failed=False)
        InteractionFactory(turn=asked, state=Interaction.State.ANSWERED)
        for ts, text in (("1700000002.000000", "the build is red"), ("1700000003.000000", "again")):
            services.route_message(
                binding.connection, said(text, ts=ts, thread_ts=self.ROOT, mentions_bot=False)
            )
        return binding, asked.session

    @pytest.mark.parametrize("key", ["answer-1", "decision-1", "1700000004.000000"])
    def test_an_answer_or_a_decision_carries_none_of_them(self, paused, key):
        _, session = paused
        kind = Turn.Kind.TYPED_ANSWER if key[0].isdigit() else Turn.Kind.ANSWER
        answer = TurnFactory(session=session, message_ts=key, kind=kind)
        work = turns.start_turn(answer.id)
        assert work is not None
        assert work.notes == ()
        assert ThreadNote.objects.filter(carried_by=None).count() == 2

    def test_the_next_mentioned_turn_carries_them(self, paused):
        binding, session = paused
        answer = TurnFactory(session=session, message_ts="answer-1", kind=Turn.Kind.ANSWER)
        turns.start_turn(answer.id)
        turns.finish_turn(answer.id, outcome=Turn.Outcome.COMPLETED, failed=False)
        services.route_message(
            binding.connection, said("status?", ts="1700000005.000000", thread_ts=self.ROOT)
        )
        mentioned = turns.next_queued_turn(session.id)
        assert mentioned is not None
        assert mentioned.text == "status?"
        work = turns.start_turn(mentioned.id)
        assert work is not None
        assert work.notes == (("U0ADA", "the build is red"), ("U0ADA", "again"))


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


def test_the_runners_look_for_its_next_turn_is_built_once(binding, monkeypatch):
    """The ORM built the look (a Case, two EXISTS) at every call: 11 % of the worker's Python CPU."""
    services.route_message(binding.connection, said())
    session = Session.objects.get()
    first = turns.next_queued_turn(session.id)
    compiled = count_compilations(monkeypatch)
    assert turns.next_queued_turn(session.id) == first
    assert compiled == []


class TestThreadSoFar:
    """Which turn carries the thread so far (spec.chat.threadContext): the one that starts its session
    inside a thread, and no other (sessions/thread_context.py renders it)."""

    ROOT = "1700000001.000100"

    @pytest.fixture(autouse=True)
    def bot_token(self, monkeypatch):
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")

    def started(self, binding, message) -> turns.TurnWork:
        directory.forget()
        result = services.route_message(binding.connection, message)
        work = turns.start_turn(result.turn_id)
        assert work is not None
        return work

    def test_a_mention_that_starts_a_session_inside_a_thread_carries_it_within_the_bindings_bounds(self):
        binding = BindingFactory(
            channels=[CHANNEL], thread_context_max_messages=7, thread_context_max_characters=900
        )
        work = self.started(binding, said(ts="1700000002.000100", thread_ts=self.ROOT))
        assert work.thread_context == Bounds(max_messages=7, max_characters=900)

    def test_a_mention_at_the_top_level_carries_nothing(self, binding):
        assert self.started(binding, said(ts=self.ROOT)).thread_context is None

    def test_the_sessions_later_turns_carry_nothing(self, binding):
        first = self.started(binding, said(ts="1700000002.000100", thread_ts=self.ROOT))
        Turn.objects.filter(pk=first.turn_id).update(state=Turn.State.DONE)
        later = self.started(binding, said("more", ts="1700000003.000100", thread_ts=self.ROOT))
        assert later.thread_context is None

    def test_a_binding_that_switched_it_off_carries_nothing(self):
        binding = BindingFactory(channels=[CHANNEL], thread_context_enabled=False)
        assert self.started(binding, said(ts="1700000002.000100", thread_ts=self.ROOT)).thread_context is None

    def test_a_turn_that_reached_the_agent_before_a_restart_reads_nothing_again(self, binding):
        first = self.started(binding, said(ts="1700000002.000100", thread_ts=self.ROOT))
        Turn.objects.filter(pk=first.turn_id).update(task_id="task-1")
        assert turns.start_turn(first.turn_id).thread_context is None

    def test_a_direct_message_that_starts_a_session_in_a_thread_carries_it_the_same_way(self):
        binding = BindingFactory(channels=[], direct_messages={})
        reply = ChatMessage(
            "T1", "D0000000001", "1700000002.000100", self.ROOT, "U0ADA", "and?", False, direct=True
        )
        assert self.started(binding, reply).thread_context == Bounds(max_messages=50, max_characters=12_000)
