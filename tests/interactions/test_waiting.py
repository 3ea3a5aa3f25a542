"""What waits for a person: their sessions (theirs only, the latest first), the alert threads open in
given channels, and the slash command's private answers built from them."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from interactions.waiting import (
    STATUS_NOTHING,
    ThreadLine,
    WaitingApproval,
    help_text,
    open_alert_threads,
    sessions_of,
    status_text,
)
from kourier.progress import ThreadKind
from tests.factories import BindingFactory, SessionFactory, TurnFactory

pytestmark = pytest.mark.django_db

WHEN = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)


def test_a_persons_sessions_are_those_with_a_turn_of_theirs_the_latest_first():
    older = TurnFactory(
        user_id="U0ADA", session__last_activity_at=timezone.now() - timedelta(hours=1)
    ).session
    newer = TurnFactory(user_id="U0ADA", session__binding=older.binding).session
    TurnFactory(user_id="U0GRACE", session__binding=older.binding)
    TurnFactory(user_id="U0ADA", session=newer)  # two turns: one line
    lines = sessions_of(older.connection_id, "U0ADA")
    assert [line.thread_ts for line in lines] == [newer.thread_ts, older.thread_ts]
    assert all(line.open for line in lines)


def test_open_alert_threads_are_the_unexpired_alert_sessions_of_the_given_channels():
    binding = BindingFactory(channels=["C0001", "C0002"])
    alert = SessionFactory(binding=binding, kind=ThreadKind.ALERT)
    SessionFactory(binding=binding, kind=ThreadKind.ALERT, expires_at=timezone.now() - timedelta(minutes=1))
    SessionFactory(binding=binding, kind=ThreadKind.CHAT)
    SessionFactory(binding=binding, kind=ThreadKind.ALERT, channel_id="C0002")
    found = open_alert_threads(binding.connection_id, {"C0001"})
    assert [line.thread_ts for line in found] == [alert.thread_ts]


def test_status_lists_open_threads_and_approvals_or_says_nothing_waits():
    assert status_text([ThreadLine("C1", "1.1", "", False, WHEN)], []) == STATUS_NOTHING
    text = status_text(
        [ThreadLine("C1", "1.1", "https://x/thread", True, WHEN)],
        [WaitingApproval(7, "C1", "1.1", "1.2", "https://x/thread", ("add_numbers",), WHEN)],
    )
    lines = text.split("\n")
    assert lines[0] == "*Your open conversations*"
    assert lines[1] == "• <https://x/thread|a thread> in <#C1>"
    assert lines[2] == "*Approvals waiting for your decision*"
    assert lines[3].startswith("• add_numbers: <https://x/thread|the prompt> in <#C1> (until <!date^")


def test_help_says_what_the_binding_allows():
    quiet = BindingFactory.build(name="ops", thread_replies="mention", ask_user=False, tool_approvals=False)
    text = help_text(quiet, "/ask")
    assert "agent of *ops*" in text
    assert "`/ask <question>` starts a thread" in text
    assert "when they mention me" in text
    assert "approve" not in text.lower()
    assert "may ask questions" not in text
    strict = BindingFactory.build(tool_approvals=True, approver_groups=["S1"], separate_approver=True)
    assert "members of <!subteam^S1> may decide, not the person who asked" in help_text(strict, "/kourier")
