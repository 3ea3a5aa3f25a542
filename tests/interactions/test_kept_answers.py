"""A person's answer or decision the agent could not be reached to take: kept, its turn queued again
and held (with the replies behind it) until due or until a reply comes, then sent; past the deadline
given up as a timeout is, with its own audit row."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from interactions import approval_prompts, approvals, kept_answers, questions, registry, services, sweeps
from interactions.models import Interaction, KeptAnswer, PromptClosing
from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove
from kourier.a2a.follow import Cancelled
from sessions import sweeps as session_sweeps
from sessions import turns
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory
from tests.support.queue import enqueued

from .questions import text_question

PROMPT_TS = "1700000000.000900"
NOW = timezone.now()


@pytest.fixture
def interaction(db) -> Interaction:
    binding = BindingFactory(channels=[defaults.CHANNEL_ID], dialect="kagent-v1", tool_approvals=True)
    turn = TurnFactory(session__binding=binding, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED)
    tool = ToolToApprove(approval_id="adk-0", call_id="call-0", name="add_numbers", args={"a": 1})
    opened = approvals.open_approval(
        turn.pk,
        ApprovalRequest(
            tools=(tool,),
            task_id="task-1",
            context_id="ctx-1",
            answer_format=AnswerFormat.HITL_V1,
            agent=None,
        ),
        now=NOW,
    )
    Interaction.objects.filter(pk=opened.pk).update(prompt_ts=PROMPT_TS)
    opened.refresh_from_db()
    return opened


@pytest.fixture
def decision_turn(interaction) -> Turn:
    """The decision's turn, started by a runner (its try then fails to reach the agent)."""
    taken = services.take_allowed_press(
        approvals.APPROVAL,
        interaction.pk,
        channel_id=interaction.channel_id,
        prompt_ts=PROMPT_TS,
        user_id=defaults.GRACE,
        action_id=approval_prompts.APPROVE_ACTION,
        values={},
        now=NOW,
    )
    PromptClosing.objects.all().delete()  # the decision's own rewrite, done
    Turn.objects.filter(pk=taken.turn_id).update(state=Turn.State.RUNNING)
    return Turn.objects.get(pk=taken.turn_id)


def test_an_answer_that_did_not_reach_the_agent_is_kept_and_its_turn_queued_again(decision_turn):
    assert kept_answers.keep(decision_turn.pk, now=NOW) is kept_answers.UndeliveredAnswer.KEPT
    kept = KeptAnswer.objects.get()
    assert (kept.tries, kept.due_at) == (1, NOW + kept_answers.backoff(1))
    assert Turn.objects.get(pk=decision_turn.pk).state == Turn.State.QUEUED
    assert PromptClosing.objects.exists()  # the prompt is owed "waiting to be delivered"


def test_each_try_that_fails_waits_longer(decision_turn):
    kept_answers.keep(decision_turn.pk, now=NOW)
    Turn.objects.filter(pk=decision_turn.pk).update(state=Turn.State.RUNNING)
    later = NOW + timedelta(seconds=5)
    kept_answers.keep(decision_turn.pk, now=later)
    kept = KeptAnswer.objects.get()
    assert (kept.tries, kept.due_at) == (2, later + kept_answers.backoff(2))
    assert [kept_answers.backoff(n).seconds for n in (1, 2, 5, 6, 9)] == [2, 4, 32, 60, 60]


def test_a_message_turn_is_not_kept(interaction):
    message = TurnFactory(session=interaction.session, state=Turn.State.RUNNING)
    assert kept_answers.keep(message.pk, now=NOW) is kept_answers.UndeliveredAnswer.NOT_AN_ANSWER
    assert not KeptAnswer.objects.exists()


def test_the_kept_answer_holds_the_replies_until_it_is_due_then_goes_first(decision_turn):
    reply = TurnFactory(
        session=decision_turn.session, message_ts="1800000000.000100"
    )  # before the try failed
    kept_answers.keep(decision_turn.pk, now=timezone.now())
    session = decision_turn.session_id
    assert turns.next_queued_turn(session) is None  # not due yet
    KeptAnswer.objects.update(due_at=timezone.now() - timedelta(seconds=1))
    assert turns.next_queued_turn(session) == decision_turn
    assert reply.state == Turn.State.QUEUED


def test_a_reply_in_the_thread_sends_the_kept_answer_again_at_once(decision_turn):
    kept_answers.keep(decision_turn.pk, now=timezone.now())
    reply = TurnFactory(session=decision_turn.session, message_ts="1800000000.000100")
    assert turns.next_queued_turn(decision_turn.session_id) == decision_turn
    Turn.objects.filter(pk=decision_turn.pk).update(state=Turn.State.RUNNING)
    kept_answers.keep(decision_turn.pk, now=timezone.now())  # failed again: the reply waits once more
    assert turns.next_queued_turn(decision_turn.session_id) is None
    assert Turn.objects.get(pk=reply.pk).state == Turn.State.QUEUED


def test_once_the_agent_took_it_it_is_settled_and_the_prompt_shows_it_as_usual(decision_turn):
    kept_answers.keep(decision_turn.pk, now=NOW)
    PromptClosing.objects.all().delete()
    kept_answers.settle(decision_turn.pk)
    assert not KeptAnswer.objects.exists()
    assert PromptClosing.objects.exists()
    kept_answers.settle(decision_turn.pk)  # a turn that was never kept changes nothing


class TestPastTheDeadline:
    def test_a_try_that_fails_after_it_gives_the_answer_up_as_a_timeout(self, decision_turn, interaction):
        past = interaction.deadline + timedelta(seconds=1)
        assert kept_answers.keep(decision_turn.pk, now=past) is kept_answers.UndeliveredAnswer.EXPIRED
        interaction.refresh_from_db()
        assert (interaction.state, interaction.closed_at) == (Interaction.State.TIMED_OUT, None)
        assert not KeptAnswer.objects.exists()
        [undelivered] = AuditEvent.objects.filter(action=kept_answers.UNDELIVERED)
        assert undelivered.details == {"kind": "approval", "answered_by": defaults.GRACE}
        assert not approvals.audit_timeout(interaction.pk)  # no timed_out row: a person did decide

    def test_the_sweep_gives_up_a_kept_answer_whose_deadline_passed_and_the_timeout_sweep_cancels_it(
        self, decision_turn, interaction, monkeypatch, django_capture_on_commit_callbacks
    ):
        kept_answers.keep(decision_turn.pk, now=NOW)
        Interaction.objects.update(deadline=timezone.now() - timedelta(seconds=1))
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert sweeps.deliver_kept_answers().counts == {
                "kept answers sent again": 0,
                "kept answers given up": 1,
            }
        assert ("drive_session", (interaction.session_id,)) in enqueued(callbacks)
        turn = Turn.objects.get(pk=decision_turn.pk)
        assert (turn.state, turn.outcome) == (Turn.State.DONE, Turn.Outcome.UNREACHABLE)
        told, cancelled = [], []
        monkeypatch.setattr(sweeps, "_tell_thread", lambda interaction, text: told.append(text))
        monkeypatch.setattr(sweeps.services, "rewrite_prompt", lambda interaction, kind: None)

        def cancel(interaction):
            cancelled.append(interaction.pk)
            return Cancelled(settled=True)

        monkeypatch.setattr(sweeps, "_cancel", cancel)
        sweeps.time_out_interactions()
        sweeps.time_out_interactions()
        assert told == [sweeps.notices.DECISION_UNDELIVERED]
        assert cancelled == [interaction.pk]
        assert Turn.objects.filter(kind=Turn.Kind.ANSWER).count() == 1  # no denial sent after it

    def test_a_try_that_runs_at_the_deadline_is_left_to_its_runner(self, decision_turn, interaction):
        kept_answers.keep(decision_turn.pk, now=NOW)
        Turn.objects.filter(pk=decision_turn.pk).update(state=Turn.State.RUNNING)
        Interaction.objects.update(deadline=timezone.now() - timedelta(seconds=1))
        KeptAnswer.objects.update(due_at=timezone.now() - timedelta(seconds=1))
        assert sweeps.deliver_kept_answers().counts == {
            "kept answers sent again": 0,
            "kept answers given up": 0,
        }
        assert KeptAnswer.objects.exists()


def test_the_sweep_drives_a_session_whose_kept_answer_is_due_and_leaves_it_due(
    decision_turn, django_capture_on_commit_callbacks
):
    kept_answers.keep(decision_turn.pk, now=NOW)
    later = NOW + kept_answers.backoff(1) + timedelta(seconds=1)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert kept_answers.send_due(now=NOW) == (0, 0)
        assert kept_answers.send_due(now=later) == (1, 0)
    assert enqueued(callbacks) == [("drive_session", (decision_turn.session_id,))]
    # Still due for the runner the drive wakes (a drive that was lost is sent again by the next run).
    Turn.objects.filter(pk=decision_turn.pk).update(state=Turn.State.QUEUED)
    KeptAnswer.objects.update(due_at=timezone.now() - timedelta(seconds=1))
    kept_answers.send_due()
    assert turns.next_queued_turn(decision_turn.session_id) == decision_turn


def test_the_waiting_line_says_until_when_in_each_readers_time_zone():
    deadline = datetime(2026, 12, 2, 7, 30, tzinfo=UTC)
    assert kept_answers.waiting_line(deadline) == (
        "Waiting to be delivered: the agent cannot be reached right now, so I keep sending it until "
        f"<!date^{int(deadline.timestamp())}^{{date_short_pretty}} at {{time}}|2026-12-02 07:30 UTC>."
    )


def test_while_kept_the_prompt_says_it_waits_to_be_delivered_then_shows_the_decision_alone(
    decision_turn, interaction, slack_fake, slack_client, settings, monkeypatch
):
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)
    root = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "hi", deliver="none")
    prompt_ts = slack_client.chat_postMessage(channel=defaults.CHANNEL_ID, thread_ts=root, text="prompt")[
        "ts"
    ]
    Interaction.objects.update(prompt_ts=prompt_ts, channel_id=defaults.CHANNEL_ID)

    kept_answers.keep(decision_turn.pk, now=NOW)
    registry.close_prompt(interaction.pk)
    shown = json.dumps(slack_fake.message(defaults.CHANNEL_ID, prompt_ts).blocks)
    assert "Approved: add_numbers" in shown
    assert json.dumps(kept_answers.waiting_line(interaction.deadline))[1:-1] in shown

    kept_answers.settle(decision_turn.pk)
    registry.close_prompt(interaction.pk)
    shown = json.dumps(slack_fake.message(defaults.CHANNEL_ID, prompt_ts).blocks)
    assert "Approved: add_numbers" in shown
    assert "Waiting to be delivered" not in shown


def test_an_answer_to_a_question_is_kept_the_same_way(db):
    asking = TurnFactory(state=Turn.State.DONE, outcome=Turn.Outcome.ASKED, session__binding=BindingFactory())
    questions.open_question(asking.pk, text_question(), now=NOW)
    taken = questions.take_typed_answer(
        asking.session, message_ts="1700000300.000100", user_id=defaults.GRACE, text="Orion"
    )
    assert taken is not None
    Turn.objects.filter(pk=taken.turn_id).update(state=Turn.State.RUNNING)
    assert kept_answers.keep(taken.turn_id, now=NOW) is kept_answers.UndeliveredAnswer.KEPT
    assert Turn.objects.get(pk=taken.turn_id).state == Turn.State.QUEUED
    assert KeptAnswer.objects.get().interaction_id == taken.interaction_id


def test_recovery_leaves_a_session_whose_kept_answer_is_not_due_to_the_kept_answers_sweep(decision_turn):
    kept_answers.keep(decision_turn.pk, now=timezone.now())
    assert session_sweeps.recover_sessions().counts == {"sessions driven again": 0}
    KeptAnswer.objects.update(due_at=timezone.now() - timedelta(seconds=1))
    assert session_sweeps.recover_sessions().counts == {"sessions driven again": 1}
