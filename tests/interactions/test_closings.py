"""The rewrite a decided or answered prompt is owed: a row written with the decision, tried through the
retry machine (tests/interactions/test_retries.py): each try taken once however often its message
comes, put off while Slack fails, given up after the last, sent again by the sweep when its message was
lost or its worker died."""

from datetime import timedelta

import pytest
from django.utils import timezone

from interactions import approval_prompts, approvals, closings, registry, services, sweeps
from interactions.models import Interaction, PromptClosing
from interactions.retries import LOST_AFTER, TryOutcome
from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove
from kourier.slack.clients import SlackError
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory
from tests.support.queue import enqueued

PROMPT_TS = "1700000000.000900"
LAST = closings.RETRIES.tries - 1  # the last try's number
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


def decide(interaction: Interaction):
    return services.take_allowed_press(
        approvals.APPROVAL,
        interaction.pk,
        channel_id=interaction.channel_id,
        prompt_ts=PROMPT_TS,
        user_id=defaults.GRACE,
        action_id=approval_prompts.APPROVE_ACTION,
        values={},
        now=NOW,
    )


@pytest.fixture
def rewrites(monkeypatch):
    """The prompts rewritten, by Interaction id, instead of Slack's chat.update."""
    made: list[int] = []

    def rewrite(interaction_id: int) -> bool:
        made.append(interaction_id)
        return True

    monkeypatch.setattr(registry, "close_prompt", rewrite)
    return made


def test_a_decision_owes_its_prompt_a_rewrite_in_its_own_transaction(
    interaction, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        decide(interaction)
    row = PromptClosing.objects.get()
    assert (row.interaction_id, row.attempt, row.due_at) == (interaction.pk, 0, NOW + LOST_AFTER)
    assert ("close_prompt", (interaction.pk, 0)) in enqueued(callbacks)


def test_a_try_rewrites_once_however_often_its_message_comes(interaction, rewrites):
    decide(interaction)
    assert registry.close_owed_prompt(interaction.pk, 0) is TryOutcome.DONE
    assert registry.close_owed_prompt(interaction.pk, 0) is TryOutcome.STALE
    assert rewrites == [interaction.pk]
    assert not PromptClosing.objects.exists()


def test_a_rewrite_asked_for_while_one_runs_keeps_the_row_for_its_own_try(interaction, monkeypatch):
    decide(interaction)

    def asked_again_meanwhile(interaction_id):
        closings.intend(interaction_id)
        return True

    monkeypatch.setattr(registry, "close_prompt", asked_again_meanwhile)
    assert registry.close_owed_prompt(interaction.pk, 0) is TryOutcome.DONE
    assert PromptClosing.objects.get().attempt == 2  # the new try's message is for try 2


def test_a_slack_failure_puts_the_try_off_and_the_last_gives_up(interaction, monkeypatch):
    decide(interaction)

    def slack_fails(interaction_id):
        raise SlackError("chat.update failed", {"ok": False, "error": "internal_error"})

    monkeypatch.setattr(registry, "close_prompt", slack_fails)
    assert registry.close_owed_prompt(interaction.pk, 0) is TryOutcome.AGAIN
    assert PromptClosing.objects.get().attempt == 1
    PromptClosing.objects.update(attempt=LAST)
    assert registry.close_owed_prompt(interaction.pk, LAST) is TryOutcome.GAVE_UP
    assert not PromptClosing.objects.exists()


def test_a_bug_is_not_taken_for_a_slack_failure_and_the_rewrite_stays_owed(interaction, monkeypatch):
    decide(interaction)
    monkeypatch.setattr(registry, "close_prompt", lambda interaction_id: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        registry.close_owed_prompt(interaction.pk, 0)
    assert PromptClosing.objects.get().attempt == 1
    PromptClosing.objects.update(attempt=LAST)
    with pytest.raises(ZeroDivisionError):
        registry.close_owed_prompt(interaction.pk, LAST)
    assert not PromptClosing.objects.exists()  # not sent again for ever


class TestTheSweep:
    def test_sends_again_a_rewrite_whose_message_was_lost(
        self, interaction, django_capture_on_commit_callbacks
    ):
        decide(interaction)  # its message went to a Redis that then lost it
        later = NOW + LOST_AFTER + timedelta(seconds=1)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert closings.RETRIES.send_overdue(now=NOW) == 0
            assert closings.RETRIES.send_overdue(now=later) == 1
            assert closings.RETRIES.send_overdue(now=later) == 0  # sent once, not at every run
        assert enqueued(callbacks) == [("close_prompt", (interaction.pk, 0))]

    def test_sends_again_a_try_whose_worker_died_while_it_ran(
        self, interaction, django_capture_on_commit_callbacks
    ):
        decide(interaction)
        assert closings.RETRIES.claim(interaction.pk, 0, now=NOW)  # then the worker is killed
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert closings.RETRIES.send_overdue(now=NOW + closings.RETRIES.try_takes_at_most / 2) == 0
            assert closings.RETRIES.send_overdue(now=NOW + closings.RETRIES.try_takes_at_most * 2) == 1
        assert enqueued(callbacks) == [("close_prompt", (interaction.pk, 1))]

    def test_has_nothing_to_do_once_every_prompt_is_rewritten(self, interaction, rewrites):
        decide(interaction)
        registry.close_owed_prompt(interaction.pk, 0)
        assert sweeps.close_owed_prompts().counts == {"prompt rewrites sent again": 0}
