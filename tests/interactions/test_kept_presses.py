"""Kept presses: a press whose approver groups Slack could not read for now is a row, tried through the
retry machine (tests/interactions/test_retries.py): each try runs once however often its message is
sent, and the last one is the one that tells the person."""

import pytest
from django.utils import timezone

from interactions import approval_prompts, approvals, kept_presses, services, sweeps
from interactions.kinds import Taken
from interactions.models import Interaction, KeptPress
from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory
from tests.support.queue import enqueued

PROMPT_TS = "1700000000.000900"
NOW = timezone.now()


@pytest.fixture(autouse=True)
def bot_token(monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")


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
    )
    Interaction.objects.filter(pk=opened.pk).update(prompt_ts=PROMPT_TS)
    opened.refresh_from_db()
    return opened


def press_on(interaction: Interaction) -> dict:
    return {
        "value": str(interaction.pk),
        "team_id": defaults.TEAM_ID,
        "channel_id": interaction.channel_id,
        "message_ts": PROMPT_TS,
        "thread_ts": None,
        "user_id": defaults.GRACE,
        "values": {},
        "response_url": "https://hooks.slack.test/actions/1",
        "action_id": approval_prompts.APPROVE_ACTION,
    }


def kept(interaction: Interaction, *, now=NOW) -> int:
    return kept_presses.keep(
        press_on(interaction),
        connection_id=interaction.session.connection_id,
        interaction_id=interaction.pk,
        now=now,
    )


def test_a_kept_press_is_a_row_and_its_first_try_is_queued_once_it_is_stored(
    interaction, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        kept_id = kept(interaction)
    row = KeptPress.objects.get()
    assert (row.pk, row.press, row.attempt) == (kept_id, press_on(interaction), 0)
    assert enqueued(callbacks) == [("retry_approval_press", (kept_id, 0))]


def test_a_try_is_taken_once_however_often_its_message_comes(interaction):
    kept_id = kept(interaction)
    first = kept_presses.claim(kept_id, 0, now=NOW)
    assert first is not None
    assert (first.press, first.attempt, first.bot_token) == (press_on(interaction), 0, "xoxb-test")
    assert kept_presses.claim(kept_id, 0, now=NOW) is None
    assert kept_presses.claim(kept_id, 1, now=NOW) is not None


def test_a_try_of_a_forgotten_press_does_nothing(interaction):
    kept_id = kept(interaction)
    kept_presses.forget(kept_id)
    assert kept_presses.claim(kept_id, 0, now=NOW) is None


def test_the_last_try_is_the_one_that_tells_the_person(interaction):
    kept_id = kept(interaction)
    last_attempt = kept_presses.RETRIES.tries - 1
    KeptPress.objects.filter(pk=kept_id).update(attempt=last_attempt - 1)
    before_last = kept_presses.claim(kept_id, last_attempt - 1, now=NOW)
    last = kept_presses.claim(kept_id, last_attempt, now=NOW)
    assert before_last is not None
    assert last is not None
    assert (before_last.last, last.last) == (False, True)


def test_a_press_is_tried_eleven_times_over_about_four_minutes():
    waits = [kept_presses.RETRIES.backoff(attempt) for attempt in range(kept_presses.RETRIES.tries - 1)]
    assert waits == [1, 2, 4, 8, 16, 30, 30, 30, 30, 30]


def test_the_sweep_sends_again_a_try_whose_worker_died(interaction, django_capture_on_commit_callbacks):
    kept_id = kept(interaction)
    kept_presses.claim(kept_id, 0, now=NOW)  # then the worker is killed
    overdue = NOW + kept_presses.RETRIES.try_takes_at_most * 2
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert kept_presses.RETRIES.send_overdue(now=overdue) == 1
    assert enqueued(callbacks) == [("retry_approval_press", (kept_id, 1))]


def test_the_sweep_leaves_a_try_that_is_not_yet_due(interaction):
    kept(interaction, now=timezone.now())
    assert sweeps.retry_kept_presses().counts == {"kept presses tried again": 0}


def test_a_decision_forgets_its_kept_press_in_its_own_transaction(interaction):
    kept_id = kept(interaction)
    taken = services.take_allowed_press(
        approvals.APPROVAL,
        interaction.pk,
        channel_id=interaction.channel_id,
        prompt_ts=PROMPT_TS,
        user_id=defaults.GRACE,
        action_id=approval_prompts.APPROVE_ACTION,
        values={},
        kept_press_id=kept_id,
    )
    assert isinstance(taken, Taken)
    assert not KeptPress.objects.exists()
