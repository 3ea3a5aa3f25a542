"""The interactions app's services: a question opened once per turn, the first complete answer taken as
a turn of its own (a conditional update decides), the replies that wait behind it, and time-outs."""

import json
import threading
from datetime import timedelta

import pytest
from django import db
from django.utils import timezone

from audit.models import AuditEvent
from interactions import prompts, questions, registry, services
from interactions.audit import answer_shape
from interactions.kinds import Refusal, Refused, Taken
from interactions.models import Interaction
from kourier.a2a.events import Question
from sessions import turns
from sessions.models import Turn
from simulator import defaults
from simulator.blocks import interactive_elements
from tests.factories import BindingFactory, TurnFactory
from tests.support.queue import enqueued

from .questions import FREE_TEXT, ONE_OF_THREE, question, text_question

pytestmark = pytest.mark.django_db

CHANNEL = "C0000000001"
PROMPT_TS = "1700000200.000100"
TIMEOUT = timedelta(minutes=10)
ASKED = question(ONE_OF_THREE, FREE_TEXT)
COMPLETE = {
    "question-0": {"answer-0": {"type": "radio_buttons", "selected_option": {"value": "1"}}},
    "question-1": {"answer-1": {"type": "plain_text_input", "value": "Before Friday, quietly."}},
}
ANSWERS = [["North America"], ["Before Friday, quietly."]]


@pytest.fixture
def binding():
    return BindingFactory(channels=[CHANNEL], ask_user=True, interaction_timeout=TIMEOUT)


@pytest.fixture
def asking_turn(binding):
    """A person's message whose turn ended with the agent's task paused to ask."""
    return TurnFactory(
        session__binding=binding, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED, task_id="task-1"
    )


def opened(turn, asked_question=ASKED, *, prompt_ts=PROMPT_TS, now=None) -> Interaction:
    """The turn's question opened and its prompt posted, as asking.put_question leaves them."""
    interaction = questions.open_question(turn.pk, asked_question, now=now)
    services.record_prompt(interaction.pk, prompt_ts)
    interaction.refresh_from_db()
    return interaction


@pytest.fixture
def interaction(asking_turn):
    return opened(asking_turn)


def press(interaction, values=COMPLETE, *, user=defaults.ADA, channel=None, prompt_ts=None, now=None):
    return services.take_allowed_press(
        questions.QUESTION,
        interaction.pk,
        action_id=prompts.SUBMIT_ACTION,
        channel_id=channel or interaction.channel_id,
        prompt_ts=prompt_ts or interaction.prompt_ts,
        user_id=user,
        values=values,
        now=now,
    )


def reply(session, ts, text="and another thing"):
    """A person's reply in the thread, queued as a turn of its own."""
    return TurnFactory(session=session, message_ts=ts, text=text)


def everything_written():
    return (
        list(Interaction.objects.order_by("pk").values()),
        list(Turn.objects.order_by("pk").values()),
        list(AuditEvent.objects.order_by("pk").values()),
    )


class TestOpeningAQuestion:
    def test_opens_it_on_the_turn_with_its_deadline_the_bindings_timeout_away(self, asking_turn):
        now = timezone.now()
        interaction = questions.open_question(asking_turn.pk, ASKED, now=now)
        assert (interaction.state, interaction.kind) == (Interaction.State.OPEN, Interaction.Kind.QUESTION)
        assert interaction.deadline == now + TIMEOUT
        assert (interaction.turn, interaction.session) == (asking_turn, asking_turn.session)
        assert interaction.channel_id == CHANNEL
        assert Question.from_dict(interaction.pause) == ASKED

    def test_follows_the_bindings_timeout_as_it_is_when_the_question_is_asked(self, binding, asking_turn):
        binding.interaction_timeout = timedelta(hours=2)
        binding.save()
        now = timezone.now()
        assert questions.open_question(asking_turn.pk, ASKED, now=now).deadline == now + timedelta(hours=2)

    def test_again_for_the_same_turn_is_the_same_interaction_unchanged(self, asking_turn):
        first = questions.open_question(asking_turn.pk, ASKED)
        again = questions.open_question(
            asking_turn.pk, text_question(), now=timezone.now() + timedelta(hours=1)
        )
        assert again.pk == first.pk
        assert Interaction.objects.count() == 1
        assert Interaction.objects.get().deadline == first.deadline
        assert Question.from_dict(Interaction.objects.get().pause) == ASKED

    def test_takes_typed_replies_only_for_a_text_pause(self, asking_turn):
        assert questions.open_question(asking_turn.pk, text_question()).typed_replies
        other = TurnFactory(session=asking_turn.session, state=Turn.State.DONE)
        Interaction.objects.update(state=Interaction.State.CANCELLED)
        assert not questions.open_question(other.pk, ASKED).typed_replies

    def test_keeps_the_first_prompt_recorded(self, asking_turn):
        interaction = questions.open_question(asking_turn.pk, ASKED)
        services.record_prompt(interaction.pk, PROMPT_TS)
        services.record_prompt(interaction.pk, "1700000999.000000")
        assert Interaction.objects.get().prompt_ts == PROMPT_TS

    def test_whose_prompt_cannot_be_posted_is_refused_audited_and_takes_no_answer(self, asking_turn):
        interaction = questions.open_question(asking_turn.pk, ASKED)
        assert services.refuse(interaction.pk, "prompt-refused")
        assert not services.refuse(interaction.pk, "prompt-refused")  # refused once
        interaction.refresh_from_db()
        assert interaction.state == Interaction.State.CANCELLED
        assert interaction.closed_at is not None
        assert interaction.task_cancelled_at is None  # its task is still to be cancelled
        [refused] = AuditEvent.objects.filter(action="interaction.refused")
        assert refused.details == {"reason": "prompt-refused", "questions": len(ASKED.questions)}
        assert press(interaction, prompt_ts="").refusal is Refusal.CLOSED


class TestAPressThatIsRefused:
    """Each is turned away with a reason, and writes and enqueues nothing."""

    @pytest.fixture
    def refused(self, django_capture_on_commit_callbacks):
        def refused(interaction, values=COMPLETE, **where) -> Refused:
            before = everything_written()
            with django_capture_on_commit_callbacks() as callbacks:
                result = press(interaction, values, **where)
            assert isinstance(result, Refused)
            assert everything_written() == before
            assert callbacks == []
            return result

        return refused

    def test_names_no_interaction_that_exists(self, interaction, django_capture_on_commit_callbacks):
        before = everything_written()
        for unknown in (interaction.pk + 1000, 0, 10**30):
            with django_capture_on_commit_callbacks() as callbacks:
                result = services.take_allowed_press(
                    questions.QUESTION,
                    unknown,
                    channel_id=CHANNEL,
                    prompt_ts=PROMPT_TS,
                    user_id=defaults.ADA,
                    action_id=prompts.SUBMIT_ACTION,
                    values=COMPLETE,
                )
            assert result == Refused(Refusal.UNKNOWN, questions.QUESTION.refusals[Refusal.UNKNOWN])
            assert callbacks == []
        assert everything_written() == before

    def test_comes_from_another_channel(self, interaction, refused):
        assert refused(interaction, channel="C0000000002").refusal is Refusal.UNKNOWN

    def test_comes_from_another_message_than_the_prompt(self, interaction, refused):
        assert refused(interaction, prompt_ts="1700000200.000200").refusal is Refusal.UNKNOWN

    def test_is_on_an_approval(self, interaction, refused):
        Interaction.objects.update(kind=Interaction.Kind.APPROVAL)
        assert refused(interaction).refusal is Refusal.UNKNOWN

    @pytest.mark.parametrize("state", [Interaction.State.TIMED_OUT, Interaction.State.CANCELLED])
    def test_is_on_a_closed_question(self, interaction, refused, state):
        Interaction.objects.update(state=state)
        assert refused(interaction) == Refused(Refusal.CLOSED, questions.QUESTION.refusals[Refusal.CLOSED])

    def test_comes_after_the_question_was_answered(self, interaction, refused):
        Interaction.objects.update(state=Interaction.State.ANSWERED, answered_by=defaults.GRACE)
        assert refused(interaction) == Refused(Refusal.TAKEN, questions.QUESTION.refusals[Refusal.TAKEN])

    def test_carries_values_that_do_not_fit_the_questions(self, interaction, refused):
        forged = {**COMPLETE, "question-0": {"answer-0": {"selected_option": {"value": "7"}}}}
        assert refused(interaction, forged) == Refused(
            Refusal.MISMATCH, questions.QUESTION.refusals[Refusal.MISMATCH]
        )

    def test_is_incomplete_and_says_what_to_fix(self, interaction, refused):
        assert refused(interaction, {"question-0": COMPLETE["question-0"]}) == Refused(
            Refusal.INCOMPLETE, "Your answer was not sent: Question 2 (Anything else?) needs an answer."
        )


class TestTheFirstCompleteAnswer:
    def test_becomes_a_queued_answer_turn_of_the_session_carrying_the_answers(self, interaction):
        now = timezone.now()
        taken = press(interaction, now=now)
        turn = Turn.objects.get(kind=Turn.Kind.ANSWER)
        assert taken == Taken(interaction.pk, turn.pk)
        assert (turn.session, turn.state, turn.answers) == (interaction.session, Turn.State.QUEUED, ANSWERS)
        assert (turn.user_id, turn.text, turn.channel_id) == (defaults.ADA, "", CHANNEL)
        assert turn.message_ts == f"answer-{interaction.pk}"
        assert turn.message_id == turns.message_id_for(turn.connection_id, CHANNEL, turn.message_ts)

    def test_marks_the_question_answered_by_whom_and_when(self, interaction):
        now = timezone.now()
        press(interaction, now=now)
        interaction.refresh_from_db()
        assert interaction.state == Interaction.State.ANSWERED
        assert (interaction.answered_by, interaction.answered_at) == (defaults.ADA, now)
        assert interaction.answer_turn == Turn.objects.get(kind=Turn.Kind.ANSWER)

    def test_is_audited_once_by_its_shape_and_never_its_text(self, binding, interaction):
        press(interaction)
        event = AuditEvent.objects.get()
        assert event.action == "interaction.answered"
        assert (event.actor_kind, event.actor_id) == ("user", defaults.ADA)
        assert (event.binding_name, event.subject) == (binding.name, f"interaction {interaction.pk}")
        assert event.details == answer_shape(ASKED, ANSWERS)
        written = json.dumps(list(AuditEvent.objects.values()), default=str)
        assert "North America" not in written
        assert "Before Friday" not in written

    def test_drives_the_session_and_closes_the_prompt_once_committed(
        self, interaction, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks() as callbacks:
            press(interaction)
        assert enqueued(callbacks) == [
            ("drive_session", (interaction.session_id,)),
            ("close_prompt", (interaction.pk, 0)),
        ]

    def test_is_the_only_one_taken(self, interaction, django_capture_on_commit_callbacks):
        press(interaction)
        with django_capture_on_commit_callbacks() as callbacks:
            second = press(interaction, user=defaults.GRACE)
        assert second.refusal is Refusal.TAKEN
        assert Turn.objects.filter(kind=Turn.Kind.ANSWER).count() == 1
        assert AuditEvent.objects.count() == 1
        assert Interaction.objects.get().answered_by == defaults.ADA
        assert callbacks == []

    def test_after_an_incomplete_one_is_taken(self, interaction):
        press(interaction, {})
        assert isinstance(press(interaction), Taken)

    def test_is_what_the_answer_turn_carries_to_the_agent(self, interaction):
        taken = press(interaction)
        assert questions.answer_of(taken.turn_id) == questions.AnswerWork(ASKED, ANSWERS)

    def test_of_a_message_turn_there_is_none(self, asking_turn):
        assert questions.answer_of(asking_turn.pk) is None


class TestATypedReply:
    def test_answers_an_open_text_question_as_a_turn_of_its_own(
        self, asking_turn, django_capture_on_commit_callbacks
    ):
        interaction = opened(asking_turn, text_question())
        with django_capture_on_commit_callbacks() as callbacks:
            taken = questions.take_typed_answer(
                asking_turn.session, message_ts="1700000300.000100", user_id=defaults.GRACE, text=" Orion \n"
            )
        turn = Turn.objects.get(kind=Turn.Kind.TYPED_ANSWER)
        assert taken == Taken(interaction.pk, turn.pk)
        assert (turn.message_ts, turn.user_id, turn.state) == ("1700000300.000100", defaults.GRACE, "queued")
        assert turn.answers == [["Orion"]]
        assert Interaction.objects.get().answered_by == defaults.GRACE
        assert AuditEvent.objects.get().details == answer_shape(text_question(), [["Orion"]])
        assert enqueued(callbacks) == [
            ("drive_session", (asking_turn.session_id,)),
            ("close_prompt", (interaction.pk, 0)),
        ]

    def test_is_no_answer_to_a_question_that_takes_only_submit(self, interaction):
        taken = questions.take_typed_answer(
            interaction.session, message_ts="1700000300.000100", user_id=defaults.ADA, text="Europe"
        )
        assert taken is None
        assert Interaction.objects.get().state == Interaction.State.OPEN
        assert not Turn.objects.exclude(kind=Turn.Kind.MESSAGE).exists()

    def test_only_the_first_answers(self, asking_turn):
        opened(asking_turn, text_question())
        first = questions.take_typed_answer(
            asking_turn.session, message_ts="1700000300.000100", user_id=defaults.ADA, text="Orion"
        )
        second = questions.take_typed_answer(
            asking_turn.session, message_ts="1700000300.000200", user_id=defaults.GRACE, text="Lyra"
        )
        assert isinstance(first, Taken)
        assert second is None
        assert list(Turn.objects.filter(kind=Turn.Kind.TYPED_ANSWER).values_list("answers", flat=True)) == [
            [["Orion"]]
        ]

    def test_after_a_submit_answered_it_is_none(self, asking_turn):
        interaction = opened(asking_turn, text_question())
        press(interaction, {"question-0": {"answer-0": {"type": "plain_text_input", "value": "Orion"}}})
        taken = questions.take_typed_answer(
            asking_turn.session, message_ts="1700000300.000100", user_id=defaults.GRACE, text="Lyra"
        )
        assert taken is None
        assert Turn.objects.exclude(kind=Turn.Kind.MESSAGE).count() == 1

    def test_that_is_blank_answers_nothing(self, asking_turn):
        opened(asking_turn, text_question())
        taken = questions.take_typed_answer(
            asking_turn.session, message_ts="1700000300.000100", user_id=defaults.ADA, text="  "
        )
        assert taken is None
        assert Interaction.objects.get().state == Interaction.State.OPEN


class TestTheRepliesThatWait:
    """A reply that is not an answer waits while the question is open, then runs after the answer."""

    def test_no_turn_runs_while_the_question_is_open(self, interaction):
        reply(interaction.session, "1700000300.000100")
        assert turns.next_queued_turn(interaction.session_id) is None
        assert not turns.has_runnable_turns(interaction.session_id)

    def test_the_answer_runs_before_the_replies_that_waited_then_they_run_in_order(self, interaction):
        later = reply(interaction.session, "1700000300.000200", "later")
        earlier = reply(interaction.session, "1700000300.000100", "earlier")
        taken = press(interaction)
        assert turns.next_queued_turn(interaction.session_id).pk == taken.turn_id
        Turn.objects.filter(pk=taken.turn_id).update(state=Turn.State.DONE)
        assert turns.next_queued_turn(interaction.session_id) == earlier
        Turn.objects.filter(pk=earlier.pk).update(state=Turn.State.DONE)
        assert turns.next_queued_turn(interaction.session_id) == later

    def test_a_typed_answer_runs_before_the_replies_that_came_before_it(self, asking_turn):
        opened(asking_turn, text_question())
        earlier = reply(asking_turn.session, "1700000300.000100")
        taken = questions.take_typed_answer(
            asking_turn.session, message_ts="1700000300.000200", user_id=defaults.ADA, text="Orion"
        )
        assert turns.next_queued_turn(asking_turn.session_id).pk == taken.turn_id
        Turn.objects.filter(pk=taken.turn_id).update(state=Turn.State.DONE)
        assert turns.next_queued_turn(asking_turn.session_id) == earlier

    @pytest.mark.parametrize("state", [Interaction.State.TIMED_OUT, Interaction.State.CANCELLED])
    def test_once_the_question_is_closed_the_replies_run(self, interaction, state):
        waiting = reply(interaction.session, "1700000300.000100")
        Interaction.objects.update(state=state)
        assert turns.next_queued_turn(interaction.session_id) == waiting
        assert turns.has_runnable_turns(interaction.session_id)

    def test_the_asking_turn_a_runner_left_half_way_is_still_run_to_its_end(self, interaction):
        Turn.objects.filter(pk=interaction.turn_id).update(state=Turn.State.RUNNING, outcome="")
        reply(interaction.session, "1700000300.000100")
        assert turns.next_queued_turn(interaction.session_id).pk == interaction.turn_id

    def test_a_question_in_another_thread_holds_nothing_here(self, binding, interaction):
        elsewhere = TurnFactory(session__binding=binding)
        assert turns.next_queued_turn(elsewhere.session_id) == elsewhere


class TestTimingOut:
    def test_claims_only_the_open_questions_past_their_deadline(self, binding):
        past = timezone.now() - TIMEOUT - timedelta(seconds=1)
        due = opened(TurnFactory(session__binding=binding, state=Turn.State.DONE), now=past)
        not_yet = opened(TurnFactory(session__binding=binding, state=Turn.State.DONE))
        answered = opened(TurnFactory(session__binding=binding, state=Turn.State.DONE), now=past)
        press(answered)
        assert questions.claim_timeouts() == 1
        states = dict(Interaction.objects.values_list("pk", "state"))
        assert states == {
            due.pk: Interaction.State.TIMED_OUT,
            not_yet.pk: Interaction.State.OPEN,
            answered.pk: Interaction.State.ANSWERED,
        }
        assert questions.claim_timeouts() == 0

    def test_a_question_is_due_at_its_deadline_exactly(self, interaction):
        assert questions.claim_timeouts(now=interaction.deadline - timedelta(microseconds=1)) == 0
        assert questions.claim_timeouts(now=interaction.deadline) == 1

    def test_what_is_left_to_close_is_the_timed_out_questions_not_yet_closed_oldest_first(self, binding):
        past = timezone.now() - TIMEOUT
        older = opened(TurnFactory(session__binding=binding, state=Turn.State.DONE), now=past - TIMEOUT)
        newer = opened(TurnFactory(session__binding=binding, state=Turn.State.DONE), now=past)
        questions.claim_timeouts()
        assert [interaction.pk for interaction in questions.timed_out_to_close()] == [older.pk, newer.pk]
        services.mark_closed(older.pk)
        assert [interaction.pk for interaction in questions.timed_out_to_close()] == [newer.pk]


class TestClosingThePrompt:
    @pytest.fixture
    def posted(self, slack_fake, slack_client, settings, monkeypatch, asking_turn):
        """The question's prompt, posted in a thread of the Slack fake."""
        settings.SLACK_API_URL = slack_fake.url
        monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
        root = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hi", deliver="none")
        session = asking_turn.session
        session.channel_id, session.thread_ts = defaults.CHANNEL_ID, root
        session.save()
        Turn.objects.filter(pk=asking_turn.pk).update(channel_id=defaults.CHANNEL_ID)
        interaction = questions.open_question(asking_turn.pk, ASKED)
        ts = slack_client.chat_postMessage(
            channel=defaults.CHANNEL_ID,
            thread_ts=root,
            blocks=prompts.open_prompt(ASKED, interaction.pk, typed_replies=False),
            text=prompts.fallback_text(ASKED),
        )["ts"]
        services.record_prompt(interaction.pk, ts)
        interaction.refresh_from_db()
        return interaction

    def test_once_answered_it_shows_who_answered_and_when_without_controls(self, posted, slack_fake):
        press(posted)
        assert registry.close_prompt(posted.pk)
        posted.refresh_from_db()
        shown = slack_fake.message(defaults.CHANNEL_ID, posted.prompt_ts)
        assert list(interactive_elements(shown.blocks)) == []
        assert prompts.answered_line(defaults.ADA, posted.answered_at) in str(shown.blocks)
        assert posted.closed_at is not None

    def test_an_open_question_is_not_closed(self, posted, slack_fake):
        assert not registry.close_prompt(posted.pk)
        assert slack_fake.count("chat.update") == 0
        assert Interaction.objects.get().closed_at is None

    def test_closing_it_again_shows_the_same(self, posted, slack_fake):
        press(posted)
        registry.close_prompt(posted.pk)
        first = slack_fake.message(defaults.CHANNEL_ID, posted.prompt_ts).blocks
        registry.close_prompt(posted.pk)
        assert slack_fake.message(defaults.CHANNEL_ID, posted.prompt_ts).blocks == first

    def test_a_prompt_never_posted_is_closed_without_slack(self, asking_turn, slack_fake):
        interaction = questions.open_question(asking_turn.pk, ASKED)
        services.refuse(interaction.pk, "prompt-refused")
        assert registry.close_prompt(interaction.pk)
        assert slack_fake.count("chat.update") == 0


@pytest.mark.requires_postgres("SQLite serializes every write, so concurrent presses cannot race there")
@pytest.mark.django_db(transaction=True)
def test_of_twenty_presses_at_once_exactly_one_answer_is_taken(interaction):
    presses = 20
    start = threading.Barrier(presses)
    results: list[Taken | Refused] = []

    def press_submit(user: str) -> None:
        try:
            start.wait()
            results.append(press(interaction, user=user))
        finally:
            db.connection.close()

    threads = [threading.Thread(target=press_submit, args=(f"U{n:08d}",)) for n in range(presses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    taken = [result for result in results if isinstance(result, Taken)]
    refused = [result for result in results if isinstance(result, Refused)]
    assert len(taken) == 1
    assert len(refused) == presses - 1
    assert {result.refusal for result in refused} == {Refusal.TAKEN}
    answer_turn = Turn.objects.get(kind=Turn.Kind.ANSWER)
    assert answer_turn.pk == taken[0].turn_id
    assert AuditEvent.objects.filter(action="interaction.answered").count() == 1
    assert Interaction.objects.get().answered_by == answer_turn.user_id


class TestAnAnswerIsActivity:
    """An answer keeps the thread's session for threadTTL after it, as a message does."""

    LATER = timedelta(days=3)

    def expiry_after(self, session, answered_at):
        session.refresh_from_db()
        assert session.last_activity_at == answered_at
        return session.expires_at

    def test_a_submit_moves_the_threads_expiry_forward(self, binding, interaction):
        answered_at = timezone.now() + self.LATER
        assert isinstance(press(interaction, now=answered_at), Taken)
        assert self.expiry_after(interaction.session, answered_at) == answered_at + binding.thread_ttl

    def test_an_answer_typed_in_the_thread_moves_the_threads_expiry_forward(self, binding, asking_turn):
        opened(asking_turn, text_question())
        answered_at = timezone.now() + self.LATER
        taken = questions.take_typed_answer(
            asking_turn.session,
            message_ts="1700000300.000100",
            user_id=defaults.ADA,
            text="Orion",
            now=answered_at,
        )
        assert isinstance(taken, Taken)
        assert self.expiry_after(asking_turn.session, answered_at) == answered_at + binding.thread_ttl

    def test_a_refused_press_does_not(self, interaction):
        before = interaction.session.expires_at
        assert isinstance(press(interaction, {}, now=timezone.now() + self.LATER), Refused)
        interaction.session.refresh_from_db()
        assert interaction.session.expires_at == before
