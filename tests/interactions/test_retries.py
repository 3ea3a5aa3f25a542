"""The one retry machine of kept work (kept presses, owed prompt rewrites): a try taken once by its
number, put off with a growing wait while it fails for now, given up after the last, and sent again by
the sweep when its message was lost or its worker died."""

from datetime import timedelta

import pytest
from django.utils import timezone

from interactions import closings, kept_presses
from interactions.models import PromptClosing
from interactions.retries import LOST_AFTER, Retries, TryOutcome
from tests.factories import InteractionFactory
from tests.support.queue import enqueued, enqueued_with_countdowns

pytestmark = pytest.mark.django_db

NOW = timezone.now()
TRY_TAKES_AT_MOST = timedelta(seconds=60)
# Kept work of three tries at most 4 s apart, on the rows of owed prompt rewrites.
THREE_TRIES = Retries(
    rows=PromptClosing,
    key="interaction_id",
    task_name="tests.tasks.try_it",
    tries=3,
    longest_wait=4,
    try_takes_at_most=TRY_TAKES_AT_MOST,
)


@pytest.fixture
def kept() -> int:
    """A row of kept work, its first try sent: its key."""
    interaction = InteractionFactory()
    PromptClosing.objects.create(interaction=interaction, due_at=THREE_TRIES.first_due(NOW))
    return interaction.pk


def row(key: int) -> PromptClosing:
    return PromptClosing.objects.get(interaction_id=key)


def test_a_try_is_taken_once_however_often_its_message_comes(kept):
    assert THREE_TRIES.claim(kept, 0, now=NOW)
    assert not THREE_TRIES.claim(kept, 0, now=NOW)
    assert (row(kept).attempt, row(kept).due_at) == (1, NOW + TRY_TAKES_AT_MOST)
    assert THREE_TRIES.claim(kept, 1, now=NOW)


def test_a_try_of_work_that_is_gone_is_taken_by_nobody(kept):
    PromptClosing.objects.all().delete()
    assert not THREE_TRIES.claim(kept, 0, now=NOW)


def test_a_try_that_fails_for_now_sends_the_next_after_its_wait(kept, django_capture_on_commit_callbacks):
    THREE_TRIES.claim(kept, 0, now=NOW)
    with django_capture_on_commit_callbacks() as callbacks:
        assert THREE_TRIES.put_off(kept, 0, now=NOW) is TryOutcome.AGAIN
    assert enqueued_with_countdowns(callbacks) == [("try_it", (kept, 1), 1)]
    assert row(kept).due_at == NOW + timedelta(seconds=1) + LOST_AFTER


def test_the_wait_doubles_up_to_the_longest():
    assert [THREE_TRIES.backoff(attempt) for attempt in range(5)] == [1, 2, 4, 4, 4]


def test_after_the_last_try_the_work_is_given_up(kept, django_capture_on_commit_callbacks):
    PromptClosing.objects.update(attempt=2)
    assert THREE_TRIES.is_last(2)
    THREE_TRIES.claim(kept, 2, now=NOW)
    with django_capture_on_commit_callbacks() as callbacks:
        assert THREE_TRIES.put_off(kept, 2, now=NOW) is TryOutcome.GAVE_UP
    assert callbacks == []
    assert not PromptClosing.objects.exists()


def test_work_asked_for_again_while_a_try_ran_is_left_to_the_newer_try(
    kept, django_capture_on_commit_callbacks
):
    THREE_TRIES.claim(kept, 0, now=NOW)
    PromptClosing.objects.update(attempt=2)  # asked for again: try 2's message is on its way
    with django_capture_on_commit_callbacks() as callbacks:
        assert THREE_TRIES.put_off(kept, 0, now=NOW) is TryOutcome.AGAIN
        THREE_TRIES.finished(kept, 0)
    assert callbacks == []
    assert row(kept).attempt == 2


def test_a_try_that_raised_leaves_the_work_owed_unless_it_was_the_last(kept):
    THREE_TRIES.claim(kept, 0, now=NOW)
    THREE_TRIES.given_up_if_last(kept, 0)
    assert row(kept).attempt == 1
    PromptClosing.objects.update(attempt=3)
    THREE_TRIES.given_up_if_last(kept, 2)
    assert not PromptClosing.objects.exists()  # a bug is not tried for ever


class TestTheSweep:
    def test_sends_again_a_first_try_whose_message_was_lost(self, kept, django_capture_on_commit_callbacks):
        later = NOW + LOST_AFTER + timedelta(seconds=1)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert THREE_TRIES.send_overdue(now=NOW) == 0
            assert THREE_TRIES.send_overdue(now=later) == 1
            assert THREE_TRIES.send_overdue(now=later) == 0  # sent once, not at every run
        assert enqueued(callbacks) == [("try_it", (kept, 0))]

    def test_sends_again_a_try_whose_worker_died_while_it_waited(
        self, kept, django_capture_on_commit_callbacks
    ):
        THREE_TRIES.claim(kept, 0, now=NOW)
        THREE_TRIES.put_off(kept, 0, now=NOW)  # try 1 due in a second; then the worker is killed
        later = NOW + timedelta(seconds=1) + LOST_AFTER + timedelta(seconds=1)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert THREE_TRIES.send_overdue(now=later) == 1
        assert enqueued(callbacks) == [("try_it", (kept, 1))]

    def test_sends_again_a_try_whose_worker_died_while_it_ran(self, kept, django_capture_on_commit_callbacks):
        THREE_TRIES.claim(kept, 0, now=NOW)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            assert THREE_TRIES.send_overdue(now=NOW + TRY_TAKES_AT_MOST / 2) == 0
            assert THREE_TRIES.send_overdue(now=NOW + TRY_TAKES_AT_MOST * 2) == 1
        assert enqueued(callbacks) == [("try_it", (kept, 1))]


def test_kept_presses_and_owed_rewrites_are_tried_by_the_same_machine():
    assert isinstance(kept_presses.RETRIES, Retries)
    assert isinstance(closings.RETRIES, Retries)
    assert (kept_presses.RETRIES.tries, kept_presses.RETRIES.longest_wait) == (11, 30)
    assert (closings.RETRIES.tries, closings.RETRIES.longest_wait) == (25, 60)
