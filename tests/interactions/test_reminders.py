"""A reminder before an approval's deadline (interactions.remindBefore): its fixed wording, and the
sweep that posts it once, whatever runs twice, and never after the decision or the deadline."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django import db
from django.utils import timezone

from interactions import approval_prompts, approvals, reminders, services, sweeps
from interactions.models import Interaction
from kourier.a2a.events import AnswerFormat, ApprovalRequest, ToolToApprove
from sessions.models import Turn
from simulator import defaults
from tests.factories import BindingFactory, TurnFactory

DEADLINE = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
REMIND_BEFORE = timedelta(minutes=10)


class TestTheWording:
    def test_it_mentions_the_approver_groups(self):
        assert reminders.reminder_text(("S0123456789", "S0987654321"), defaults.ADA, DEADLINE) == (
            "<!subteam^S0123456789> <!subteam^S0987654321> the agent's tool request in this thread still "
            "waits for a decision. If nobody decides by <!date^1796207400^{time}|10:30 UTC>, every tool is denied."
        )

    def test_without_groups_it_mentions_the_person_who_started_the_turn(self):
        assert reminders.reminder_text((), defaults.ADA, DEADLINE) == (
            f"<@{defaults.ADA}> the agent's tool request in this thread still waits for a decision. "
            "If nobody decides by <!date^1796207400^{time}|10:30 UTC>, every tool is denied."
        )

    def test_a_turn_no_person_started_names_nobody(self):
        assert reminders.reminder_text((), "kourier-system", DEADLINE) == (
            "The agent's tool request in this thread still waits for a decision. "
            "If nobody decides by <!date^1796207400^{time}|10:30 UTC>, every tool is denied."
        )


@pytest.fixture
def approval(slack_fake, slack_client, settings, monkeypatch, transactional_db):
    """An approval whose prompt is in a real thread of the Slack fake, due ``due_in`` from now."""
    settings.SLACK_API_URL = slack_fake.url
    monkeypatch.setenv("SLACK_BOT_TOKEN", slack_fake.bot_token)

    def approval(
        *, due_in: timedelta, remind_before: timedelta | None = REMIND_BEFORE, groups=()
    ) -> Interaction:
        binding = BindingFactory(
            channels=[defaults.CHANNEL_ID],
            dialect="kagent-v1",
            tool_approvals=True,
            approver_groups=list(groups),
            remind_before=remind_before,
        )
        root = slack_fake.user_says(defaults.ADA, defaults.CHANNEL_ID, "deploy it", deliver="none")
        turn = TurnFactory(
            session__binding=binding,
            session__thread_ts=root,
            message_ts=root,
            user_id=defaults.ADA,
            state=Turn.State.DONE,
            outcome=Turn.Outcome.ASKED,
        )
        tool = ToolToApprove(approval_id="adk-0", call_id="call-0", name="deploy", args={})
        request = ApprovalRequest(
            tools=(tool,),
            task_id="task-1",
            context_id="ctx-1",
            answer_format=AnswerFormat.HITL_V1,
            agent=None,
        )
        interaction = approvals.open_approval(turn.pk, request)
        prompt_ts = slack_client.chat_postMessage(channel=defaults.CHANNEL_ID, thread_ts=root, text="prompt")[
            "ts"
        ]
        Interaction.objects.filter(pk=interaction.pk).update(
            prompt_ts=prompt_ts, deadline=timezone.now() + due_in
        )
        interaction.refresh_from_db()
        return interaction

    return approval


def reminders_in(slack_fake, interaction) -> list[str]:
    return [
        message.text
        for message in slack_fake.thread(defaults.CHANNEL_ID, interaction.session.thread_ts)
        if message.bot_id and message.ts != interaction.prompt_ts
    ]


def expected(interaction, groups=()) -> str:
    return reminders.reminder_text(groups, defaults.ADA, interaction.deadline)


def test_within_remind_before_the_thread_is_reminded_once_however_often_the_sweep_runs(approval, slack_fake):
    interaction = approval(due_in=timedelta(minutes=9), groups=["S0123456789"])
    assert sweeps.remind_approvers().counts == {"approvers reminded": 1}
    assert sweeps.remind_approvers().counts == {"approvers reminded": 0}
    assert reminders_in(slack_fake, interaction) == [expected(interaction, ["S0123456789"])]
    assert Interaction.objects.get().reminded_at is not None


def test_before_its_time_a_binding_without_it_or_a_decided_one_is_not_reminded(approval, slack_fake):
    early = approval(due_in=timedelta(minutes=11))
    never = approval(due_in=timedelta(minutes=1), remind_before=None)
    decided = approval(due_in=timedelta(minutes=1))
    services.take_allowed_press(
        approvals.APPROVAL,
        decided.pk,
        channel_id=decided.channel_id,
        prompt_ts=decided.prompt_ts,
        user_id=defaults.GRACE,
        action_id=approval_prompts.APPROVE_ACTION,
        values={},
    )
    past = approval(due_in=timedelta(seconds=-1))
    assert sweeps.remind_approvers().counts == {"approvers reminded": 0}
    for interaction in (early, never, decided, past):
        assert reminders_in(slack_fake, interaction) == []


def test_a_decision_between_the_read_and_the_claim_is_never_reminded(approval, slack_fake):
    interaction = approval(due_in=timedelta(minutes=5))
    assert reminders.due() == [interaction.pk]
    Interaction.objects.filter(pk=interaction.pk).update(state=Interaction.State.ANSWERED)
    assert reminders.remind(interaction.pk) is False
    assert reminders_in(slack_fake, interaction) == []


def test_a_reminder_slack_refused_is_posted_by_the_next_sweep_once(approval, slack_fake):
    interaction = approval(due_in=timedelta(minutes=5))
    slack_fake.fail("chat.postMessage", "not_in_channel", times=None)
    assert sweeps.remind_approvers().counts == {"approvers reminded": 0}
    assert Interaction.objects.get().reminded_at is None
    slack_fake.clear_faults()
    assert sweeps.remind_approvers().counts == {"approvers reminded": 1}
    assert sweeps.remind_approvers().counts == {"approvers reminded": 0}
    assert reminders_in(slack_fake, interaction) == [expected(interaction)]


def test_a_reminder_is_never_left_to_the_owed_notices_sweep(approval, slack_fake):
    from sessions.models import PostIntent

    approval(due_in=timedelta(minutes=5))
    slack_fake.fail("chat.postMessage", "not_in_channel", times=None)
    sweeps.remind_approvers()
    assert list(PostIntent.objects.values_list("key", "text")) == [
        (f"{Turn.objects.get().message_id}:reminder", "")
    ]


@pytest.mark.requires_postgres("SQLite serializes every write")
def test_two_sweeps_at_once_remind_once(approval, slack_fake):
    interaction = approval(due_in=timedelta(minutes=5))
    start = threading.Barrier(2)
    counts = []

    def sweep():
        try:
            start.wait()
            counts.append(sweeps.remind_approvers().counts["approvers reminded"])
        finally:
            db.connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(counts) == [0, 1]
    assert reminders_in(slack_fake, interaction) == [expected(interaction)]


def test_the_reminder_is_written_in_the_docs_word_for_word():
    from pathlib import Path

    documented = reminders.REMINDER.format(
        who="<!subteam^S0123456789> ", deadline="<!date^EPOCH^{time}|HH:MM UTC>"
    )
    assert f"\n{documented}\n" in (Path(__file__).parents[2] / "docs" / "manifests.md").read_text()
