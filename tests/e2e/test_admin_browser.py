"""An operator in a real browser: headless Chromium (Debian's package) driven by Playwright, against the
product's web process (Daphne) over HTTP.

They log in, add a Binding with a mistake and see the error next to its field, fix it and see the
warnings about toolApprovals without approverGroups and an agent card that cannot be fetched, open the
Binding's live page (its chart of the hour, reloading itself until paused), browse, filter and export
the audit, and find no way to edit or delete an audit row.

Playwright's own browser download cannot be fetched here, so it drives the Chromium at
KOURIER_CHROMIUM (default: ``chromium`` on PATH). Without Playwright or Chromium the test is skipped,
except under CI (``CI`` set), where that is a failure: CI must run it. Set KOURIER_SCREENSHOTS to a
folder to keep the screenshots of the index and the live page.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from audit.services import record
from bindings.models import Binding
from sessions.models import Turn
from tests.e2e.helpers import BROWSER_TIMEOUT_MS, synchronous_orm_calls
from tests.factories import ConnectionFactory, InteractionFactory, SessionFactory, TurnFactory
from tests.support.stack import Stack

pytestmark = pytest.mark.slow

OPERATOR, PASSWORD = "operator", "a long operator passphrase"


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("KOURIER_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def row_value(page: Any, table: str, label: str) -> str:
    return page.locator(f'{table} tr:has(th:text-is("{label}")) td').inner_text().strip()


def captions(page: Any) -> list[str]:
    return [text.strip() for text in page.locator("#content-main .module caption").all_text_contents()]


def result_subjects(page: Any) -> list[str]:
    return [text.strip() for text in page.locator("#result_list tbody td.field-subject").all_text_contents()]


def test_an_operator_configures_a_binding_watches_it_and_reads_the_audit(
    start_stack: Callable[..., Stack], chromium: str, screenshots: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    ConnectionFactory(name="acme")
    User.objects.create_superuser(OPERATOR, "", PASSWORD)
    record("interaction.decided", binding_name="ops", actor_id="U0ADA", subject="interaction 12")
    record("interaction.timed_out", binding_name="ops", subject="interaction 13")
    record("interaction.decided", binding_name="dev", actor_id="U0BOB", subject="interaction 14")
    stack = start_stack(workers=0)
    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(base_url=stack.base_url, viewport={"width": 1280, "height": 900})
            page.set_default_timeout(BROWSER_TIMEOUT_MS)
            log_in(page, stack, screenshots)
            add_a_binding_with_a_mistake_then_fix_it(page)
            watch_its_live_state(page, screenshots)
            browse_filter_and_export_the_audit(page)
            find_no_way_to_edit_or_delete_an_audit_row(page)
        finally:
            browser.close()


def log_in(page: Any, stack: Stack, screenshots: Path) -> None:
    from playwright.sync_api import expect

    page.goto("/admin/")
    expect(page).to_have_url(f"{stack.base_url}/admin/login/?next=/admin/")
    page.fill("#id_username", OPERATOR)
    page.fill("#id_password", PASSWORD)
    page.click('input[type="submit"]')
    expect(page.locator("#site-name")).to_have_text("Agent Kourier")
    assert captions(page)[:3] == ["Bindings", "Activity", "Audit"]
    page.screenshot(path=screenshots / "admin-index.png", full_page=True)


def add_a_binding_with_a_mistake_then_fix_it(page: Any) -> None:
    from playwright.sync_api import expect

    page.click("tr.model-binding a.addlink")
    page.fill("#id_name", "ops")
    page.select_option("#id_connection", "acme")
    page.fill("#id_channels", "C0123456789")
    page.fill("#id_agent_url", "http://127.0.0.1:8083/")
    page.select_option("#id_dialect", "kagent-v1")
    page.check("#id_tool_approvals")
    page.fill("#id_interaction_timeout", "30 minutes")
    page.click('input[name="_continue"]')
    # The loader's words, next to the field, and on no other.
    expect(page.locator(".form-row.field-interaction_timeout .errorlist")).to_contain_text(
        'Binding "ops": spec.interactions.timeout'
    )
    expect(page.locator(".form-row .errorlist")).to_have_count(1)

    page.fill("#id_interaction_timeout", "30m")
    page.click('input[name="_continue"]')
    # Saved, with what deserves a look: approvals open to anyone, and an agent not up (yet).
    expect(page.locator(".messagelist .warning")).to_contain_text(
        ["toolApprovals is true but approverGroups is empty", "the agent card cannot be fetched"]
    )
    with synchronous_orm_calls():
        saved = Binding.objects.get(name="ops")
    assert (saved.tool_approvals, saved.interaction_timeout) == (True, timedelta(minutes=30))


def watch_its_live_state(page: Any, screenshots: Path) -> None:
    from playwright.sync_api import expect

    with synchronous_orm_calls():  # a turn running, one queued, one failed earlier, an approval pending
        session = SessionFactory(binding=Binding.objects.get(name="ops"))
        TurnFactory(session=session, state=Turn.State.RUNNING, task_id="task-1")
        TurnFactory(session=session, state=Turn.State.QUEUED)
        TurnFactory(
            session=session,
            state=Turn.State.FAILED,
            outcome=Turn.Outcome.UNREACHABLE,
            ended_at=timezone.now() - timedelta(minutes=5),
        )
        InteractionFactory(turn__session__binding=session.binding, channel_id="C0123456789")

    page.click("a.live-state")
    expect(page.locator("h1")).to_have_text("ops: live state")
    assert row_value(page, "#live-now", "Sessions open") == "2"
    assert row_value(page, "#live-now", "Turns queued") == "1"
    assert row_value(page, "#live-now", "Turns running") == "1"
    assert row_value(page, "#live-now", "Interactions pending") == "1"
    assert row_value(page, "#live-now", "Last agent failure").startswith("unreachable at ")
    expect(page.locator("#pending-interactions tbody tr")).to_have_count(1)
    expect(page.locator("#pending-interactions tbody tr")).to_contain_text("C0123456789")
    # The hour's chart, drawn by the server: the failed turn is a red bar with its minute and outcome.
    expect(page.locator("#turns-chart svg rect")).to_have_count(1)
    assert page.locator("#turns-chart svg rect title").text_content().endswith(" unreachable: 1")
    # It reloads itself until the operator pauses it to read.
    expect(page.locator('meta[http-equiv="refresh"]')).to_have_count(1)
    page.screenshot(path=screenshots / "binding-live.png", full_page=True)
    page.click("#live-refresh a:text-is('Pause')")
    expect(page.locator('meta[http-equiv="refresh"]')).to_have_count(0)
    expect(page.locator("#live-refresh")).to_contain_text("paused")


def browse_filter_and_export_the_audit(page: Any) -> None:
    from playwright.sync_api import expect

    page.click("#site-name a")
    page.click("tr.model-auditevent th a")
    # The three rows recorded, and the operator's own: the Binding's agent address they set, and its
    # three approval rules (toolApprovals, approverGroups, timeout), each from none.
    expect(page.locator("#result_list tbody tr")).to_have_count(7)
    expect(page.locator("#result_list tbody tr")).to_contain_text(["binding.agent_changed"])
    expect(page.locator("#result_list tbody tr", has_text="binding.approval_rule_changed")).to_have_count(3)
    page.click("#changelist-filter a:text-is('ops')")
    expect(page.locator("#result_list tbody tr")).to_have_count(6)
    page.click("#changelist-filter a:text-is('interaction.timed_out')")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    assert result_subjects(page) == ["interaction 13"]

    # The export has the rows the filtered list shows, streamed by the web process.
    export = page.request.get(page.locator("a.export-csv").get_attribute("href"))
    assert export.status == 200
    assert export.headers["content-type"] == "text/csv"
    exported = list(csv.DictReader(io.StringIO(export.text())))
    assert [(row["binding_name"], row["action"], row["subject"]) for row in exported] == [
        ("ops", "interaction.timed_out", "interaction 13")
    ]


def find_no_way_to_edit_or_delete_an_audit_row(page: Any) -> None:
    from playwright.sync_api import expect

    expect(page.locator('select[name="action"]')).to_have_count(0)  # no bulk actions, delete included
    expect(page.locator(".object-tools .addlink")).to_have_count(0)
    page.click("#result_list tbody tr th a")
    expect(page.locator("h1")).to_have_text("View audit event")
    fields = page.locator(
        '#auditevent_form input:not([type="hidden"]), #auditevent_form textarea, #auditevent_form select'
    )
    expect(fields).to_have_count(0)
    expect(page.locator('input[name="_save"], input[name="_continue"], a.deletelink')).to_have_count(0)
    refused = page.goto(page.url.replace("/change/", "/delete/"))
    assert refused is not None
    assert refused.status == 403
