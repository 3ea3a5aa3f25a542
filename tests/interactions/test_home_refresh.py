"""Home tabs kept current: an approval put to a thread or ended queues one refresh of the Connection's
tabs after commit, and a change while one is due queues no other; the tabs refreshed are those opened
in the last hour, the latest first."""

import asyncio

import pytest

from interactions import home_refresh
from interactions.models import Interaction
from kourier import shared_cache
from tests.factories import InteractionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def nothing_due():
    shared_cache.backend().clear()


def test_an_approval_that_changed_queues_one_refresh_of_its_connections_tabs(
    django_capture_on_commit_callbacks, settings, monkeypatch
):
    settings.HOME_TAB_REFRESH_SECONDS = 7
    queued: list[tuple] = []
    monkeypatch.setattr(home_refresh, "enqueue_after_commit_in", lambda *args: queued.append(args))
    approval = InteractionFactory(kind=Interaction.Kind.APPROVAL)
    connection_id = approval.session.connection_id
    for _ in range(2):  # the second change finds the first's refresh due: it covers both
        with django_capture_on_commit_callbacks(execute=True):
            home_refresh.approvals_changed(approval.pk)
    assert queued == [(7, "interactions.tasks.refresh_home_tabs", connection_id)]
    asyncio.run(home_refresh.refresh_taken(connection_id))  # the refresh runs: the next change queues again
    with django_capture_on_commit_callbacks(execute=True):
        home_refresh.approvals_changed(approval.pk)
    assert len(queued) == 2


def test_a_question_changes_no_home_tab(django_capture_on_commit_callbacks):
    question = InteractionFactory(kind=Interaction.Kind.QUESTION)
    with django_capture_on_commit_callbacks() as callbacks:
        home_refresh.approvals_changed(question.pk)
    assert callbacks == []


def test_the_tabs_refreshed_are_the_latest_opened_at_most_twenty():
    async def open_tabs() -> list[str]:
        for number in range(25):
            await home_refresh.remember_viewer(1, f"U{number:02d}")
        await home_refresh.remember_viewer(1, "U03")  # opened again: the latest now
        return await home_refresh.recent_viewers(1)

    viewers = asyncio.run(open_tabs())
    assert viewers[:2] == ["U03", "U24"]
    assert len(viewers) == home_refresh.MOST_REFRESHED
    assert "U00" not in viewers
