"""The thread's timeline in a real browser (headless Chromium, as tests/e2e/test_admin_browser.py drives
it): staff open a session's page and see its turns, Slack writes (a 429 retried, in red), question and
audit row drawn on one time axis, without message text; a superuser's drawing has the text.
KOURIER_SCREENSHOTS keeps the screenshot (the README's)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from audit.services import record
from sessions.models import Turn
from tests.e2e.helpers import BROWSER_TIMEOUT_MS
from tests.factories import InteractionFactory, TurnFactory
from tests.support.stack import Stack

pytestmark = pytest.mark.slow

PASSWORD = "a long operator passphrase"
MESSAGE = "why is checkout slow since the deploy"


def a_slow_thread() -> Turn:
    at = timezone.now() - timedelta(minutes=5)
    turn = TurnFactory(
        text=MESSAGE, state=Turn.State.DONE, outcome=Turn.Outcome.COMPLETED, created_at=at,
        started_at=at + timedelta(seconds=1), ended_at=at + timedelta(seconds=40),
        slack_calls=[
            {"method": "reactions.add", "outcome": "ok", "at": (at + timedelta(seconds=1.1)).timestamp(), "ms": 90, "retries": 0},
            {"method": "chat.startStream", "outcome": "ok", "at": (at + timedelta(seconds=2)).timestamp(), "ms": 31_000, "retries": 1},
            {"method": "chat.stopStream", "outcome": "ok", "at": (at + timedelta(seconds=38)).timestamp(), "ms": 150, "retries": 0},
        ],
    )  # fmt: skip
    Turn.objects.filter(pk=turn.pk).update(created_at=at)
    InteractionFactory(turn=turn, session=turn.session)
    record("turn.feedback", binding_name=turn.session.binding.name, subject=f"turn {turn.pk}")
    return Turn.objects.get(pk=turn.pk)


def log_in(page: Any, name: str) -> None:
    page.goto("/admin/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click('input[type="submit"]')
    page.wait_for_selector("#site-name")


def test_staff_see_where_a_slow_answers_time_went_and_only_a_superuser_its_text(
    start_stack: Callable[..., Stack], chromium: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    turn = a_slow_thread()
    staff = User.objects.create_user("staff", "", PASSWORD, is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__in=["view_session", "view_turn"]))
    User.objects.create_superuser("root", "", PASSWORD)
    folder = Path(os.environ.get("KOURIER_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    stack = start_stack(workers=0)
    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(base_url=stack.base_url, viewport={"width": 1280, "height": 900})
            page.set_default_timeout(BROWSER_TIMEOUT_MS)
            log_in(page, "staff")
            page.goto(f"/admin/threads/session/{turn.session_id}/change/")
            drawing = page.locator("svg.session-timeline")
            expect(drawing).to_be_visible()
            titles = drawing.locator("g.mark title").all_text_contents()
            assert any(t.startswith(f"turn {turn.pk} ran: completed") and "took 39.0 s" in t for t in titles)
            stream = next(t for t in titles if t.startswith("chat.startStream"))
            assert "1 retries" in stream
            assert "took 31.0 s" in stream
            assert any(t.startswith("turn.feedback") for t in titles)
            assert drawing.locator('g.mark[data-lane="Questions"]').count() == 1
            assert drawing.locator('rect[fill="#c62828"]').count() == 1  # the retried write, in red
            assert MESSAGE not in drawing.inner_html()
            box = drawing.bounding_box()
            assert box is not None
            assert box["width"] > 900
            drawing.screenshot(path=folder / "session-timeline.png")

            page.context.clear_cookies()
            log_in(page, "root")
            page.goto(f"/admin/threads/session/{turn.session_id}/change/")
            expect(page.locator("svg.session-timeline")).to_be_visible()
            assert MESSAGE in page.locator("svg.session-timeline").inner_html()
        finally:
            browser.close()
