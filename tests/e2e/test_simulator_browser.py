"""The README's first command as a visitor meets it: `manage.py serve` with no Slack app configured runs
the workspace simulator, and a visitor in a real browser (Debian's Chromium driven by Playwright, as
the admin's test) uses #demo at /simulator/ on the web port.

They mention the bot and watch its answer stream in with its task cards, answer the release plan's
questions, try to approve the restart's tools as Ada and are told privately that only the approver
group decides, approve one and deny the other as Linus of @oncall, react to the answer, and fire the
README's trigger example to see the alert thread, then post an alert as another app (Alertmanager),
reply under it and ask the agent to summarise that thread. Everything between the page and the agent is real:
the product's processes as `serve` starts them, the fake's signed events and block_actions at its
/slack/events door, the demo agent over A2A.

Without Playwright or Chromium it is skipped, except under CI, where that is a failure.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from interactions.approval_prompts import DECIDE_ACTION
from interactions.prompts import SUBMIT_ACTION
from simulator import demo
from tests.e2e.helpers import BROWSER_TIMEOUT_MS, wait_for_ready
from tests.support.private_redis import free_port
from tests.support.stack import REPO_ROOT, database_url_of_test_database

pytestmark = pytest.mark.slow

TRIGGER_TOKEN = "simulator-browser-trigger-token"


def readme_trigger_curl() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    [curl] = [
        block
        for block in re.findall(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
        if block.startswith("curl ")
    ]
    return curl


@pytest.fixture
def served(transactional_db: None, tmp_path: Path) -> Iterator[str]:
    """`manage.py serve` with a private Redis and no Slack app: its base URL once ready. It runs on the
    test database, already migrated (a fresh one's migrations are test_serve.py's part)."""
    web_port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"REDIS_URL", "SLACK_API_URL", "SLACK_BOT_TOKEN", "SIMULATOR"}
    }
    env |= {
        "DATABASE_URL": database_url_of_test_database(),
        "KOURIER_VAR_DIR": str(tmp_path),
        "EMBEDDED_REDIS_PORT": str(free_port()),
        "SECRET_KEY": "simulator-test-secret-key",
        "CELERY_QUEUE": f"simulator-test-{web_port}",
        demo.TRIGGER_TOKEN_ENV: TRIGGER_TOKEN,
    }
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115  (closed below)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(web_port), "--web-processes", "1"],
        cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{web_port}"
    try:
        wait_for_ready(f"{base}/readyz", process)
        wait_for_ready(f"{base}/simulator/api/world", process)
        yield base
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()


def test_a_visitor_tries_every_feature_in_demo(served: str, chromium: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=BROWSER_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(base_url=served, viewport={"width": 1400, "height": 900})
            page.set_default_timeout(BROWSER_TIMEOUT_MS)
            page.goto("/simulator/")
            expect(page.locator("#channel-name")).to_have_text("#demo")
            expect(page.get_by_label("Message", exact=True)).to_be_enabled()
            mention_the_bot_and_watch_the_answer_stream_in(page)
            answer_the_release_plans_questions(page)
            approve_one_tool_and_deny_the_other_as_the_approver_group(page)
            fire_the_readme_trigger_and_see_the_alert_thread(page, served)
            use_the_command_the_shortcut_and_the_home_tab(page)
            call_the_agent_into_the_thread_of_another_apps_alert(page)
            share_a_log_with_a_mention_and_get_a_chart_back(page, tmp_path)
        finally:
            browser.close()


def say(page: Any, text: str) -> None:
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_label("Message", exact=True).press("Enter")


def act_as(page: Any, name: str) -> None:
    [person] = [person for person in demo.PEOPLE if person.real_name == name]
    page.get_by_label("Acting as").select_option(value=person.id)


def mention_the_bot_and_watch_the_answer_stream_in(page: Any) -> None:
    from playwright.sync_api import expect

    act_as(page, "Ada Lovelace")
    say(page, "@Agent Kourier what can you do?")
    root = page.locator("#messages .message").last
    # Typed, the name became the bot's mention, shown as Slack shows one.
    expect(root.locator(".mention")).to_have_text("@Agent Kourier")
    thread = page.locator("#thread-messages")
    reply = thread.locator(".message.bot").first
    # While it streams, the page says so; once done, the answer stands with a card per tool call.
    expect(reply.locator(".text")).to_contain_text("Let me look that up.")
    expect(reply.locator(".text")).to_contain_text("I am the demo agent", timeout=BROWSER_TIMEOUT_MS)
    expect(reply.locator(".streaming")).to_have_count(0)
    cards = reply.locator(".card")
    expect(cards).to_have_count(2)
    expect(cards.nth(0)).to_contain_text('search_docs(query="what can you do?")')
    expect(cards.nth(1)).to_contain_text('check_status(service="api")')
    expect(reply.locator('.card[data-status="complete"]')).to_have_count(2)
    # Reactions: Grace agrees with the answer.
    act_as(page, "Grace Hopper")
    reply.hover()
    reply.locator('[data-react="+1"]').click()
    expect(reply.locator('.reaction[data-reaction="+1"]')).to_contain_text("1")


def answer_the_release_plans_questions(page: Any) -> None:
    from playwright.sync_api import expect

    act_as(page, "Ada Lovelace")
    say(page, "@Agent Kourier plan a release")
    thread = page.locator("#thread-messages")
    prompt = thread.locator(".message.bot", has=page.locator(f'[data-action-id="{SUBMIT_ACTION}"]')).last
    expect(prompt.locator("fieldset")).to_have_count(3)
    prompt.get_by_label("3.0.0").check()
    prompt.get_by_label("Bug fixes").check()
    prompt.get_by_label("Docs").check()
    prompt.locator('input[type="text"], textarea').fill("Thanks, team")
    prompt.locator(f'[data-action-id="{SUBMIT_ACTION}"]').click()
    expect(thread).to_contain_text(
        "Release plan for 3.0.0: Bug fixes, Docs. Freeze tomorrow, release on Thursday. "
        "The notes will say: Thanks, team"
    )


def approve_one_tool_and_deny_the_other_as_the_approver_group(page: Any) -> None:
    from playwright.sync_api import expect

    say(page, "@Agent Kourier restart the api")
    thread = page.locator("#thread-messages")
    prompt = thread.locator(".message.bot", has=page.locator("fieldset")).last
    expect(prompt).to_contain_text("restart_deployment")
    expect(prompt).to_contain_text("flush_cache")

    # Ada is not in @oncall: she is told so, and only she sees it.
    prompt.locator("fieldset").nth(0).get_by_label("Approve").check()
    prompt.locator("fieldset").nth(1).get_by_label("Deny").check()
    prompt.locator(f'[data-action-id="{DECIDE_ACTION}"]').click()
    private = thread.locator(".message.ephemeral")
    expect(private).to_contain_text("Only visible to you")
    expect(private).to_contain_text("Only members of this channel's approver groups can decide")
    act_as(page, "Grace Hopper")
    expect(thread.locator(".message.ephemeral")).to_have_count(0)

    act_as(page, "Linus Torvalds")
    prompt = thread.locator(".message.bot", has=page.locator("fieldset")).last
    prompt.locator("fieldset").nth(0).get_by_label("Approve").check()
    prompt.locator("fieldset").nth(1).get_by_label("Deny").check()
    prompt.locator(f'[data-action-id="{DECIDE_ACTION}"]').click()
    expect(thread).to_contain_text("Ran restart_deployment; did not run flush_cache, since it was denied.")


def fire_the_readme_trigger_and_see_the_alert_thread(page: Any, served: str) -> None:
    from playwright.sync_api import expect

    # As the README says: at the demo's Binding, in place of its own ops.
    curl = readme_trigger_curl().replace(
        "http://127.0.0.1:8000/triggers/ops/", f"{served}/triggers/simulator-demo/"
    )
    fired = subprocess.run(
        ["bash", "-c", curl], env={**os.environ, "HOOKS_TRIGGER_TOKEN": TRIGGER_TOKEN},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert fired.returncode == 0, fired.stderr
    alert = page.locator("#messages .message.bot", has_text="Backup failed")
    expect(alert).to_have_count(1)
    alert.locator(".replies-link").click()
    thread = page.locator("#thread-messages")
    expect(thread.locator("b", has_text="Backup failed").first).to_be_visible()
    expect(thread).to_contain_text("Likely cause: the last deployment.")
    assert httpx.get(f"{served}/simulator/api/world").json()["ok"] is True


def call_the_agent_into_the_thread_of_another_apps_alert(page: Any) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name="Post an alert as Alertmanager").click()
    alert = page.locator("#messages .message.bot", has_text="[FIRING:1] HighLatency")
    expect(alert.locator(".author")).to_have_text("Alertmanager")
    thread = page.locator("#thread-messages")
    expect(thread.locator(".attachment")).to_contain_text("p99 latency of the api above 2s")
    act_as(page, "Grace Hopper")
    page.get_by_label("Reply", exact=True).fill("looking at it")
    page.get_by_label("Reply", exact=True).press("Enter")
    expect(thread).to_contain_text("looking at it")
    act_as(page, "Ada Lovelace")
    page.get_by_label("Reply", exact=True).fill("@Agent Kourier summarise this thread")
    page.get_by_label("Reply", exact=True).press("Enter")
    expect(thread).to_contain_text(
        "I got 2 earlier messages of this thread. They were written by Alertmanager (app), Grace Hopper."
    )


def share_a_log_with_a_mention_and_get_a_chart_back(page: Any, tmp_path: Path) -> None:
    """Issue 30: a file attached to a mention reaches the agent, which reads it; a chart it draws shows
    in the thread as an image. The README's screenshot is this thread (KOURIER_SCREENSHOTS: where)."""
    from playwright.sync_api import expect

    for opened in ("#close-home", "#close-thread"):
        if page.locator(opened).is_visible():
            page.locator(opened).click()
    act_as(page, "Ada Lovelace")
    log = tmp_path / "api.log"
    log.write_text("10:00 INFO api up\n10:02 ERROR upstream timeout on /orders\n10:03 INFO retry ok\n")
    page.get_by_label("Attach files to the message").set_input_files(str(log))
    say(page, "@Agent Kourier what went wrong here?")
    thread = page.locator("#thread-messages")
    expect(thread.locator(".file-name").first).to_contain_text("api.log")
    expect(thread).to_contain_text("1 says ERROR")
    page.get_by_label("Reply", exact=True).fill("@Agent Kourier draw a chart")
    page.get_by_label("Reply", exact=True).press("Enter")
    image = thread.locator("img.file-image")
    expect(image).to_have_count(1)
    expect(image).to_have_attribute("alt", "errors-this-week.png")
    folder = Path(os.environ.get("KOURIER_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.locator("#thread").screenshot(path=folder / "files-in-a-thread.png")


def use_the_command_the_shortcut_and_the_home_tab(page: Any) -> None:
    from playwright.sync_api import expect

    act_as(page, "Ada Lovelace")
    # Typed in the message box, a /command is the app's slash command; its answer only Ada sees.
    say(page, "/kourier status")
    private = page.locator("#messages .message.ephemeral").last
    expect(private).to_contain_text("Only visible to you")
    expect(private).to_contain_text("Your open conversations")
    # The shortcut in the alert's menu starts a turn in its thread.
    alert = page.locator("#messages .message.bot", has_text="Backup failed")
    alert.hover()
    alert.get_by_label("Ask Agent Kourier about this message").click()
    expect(page.locator("#thread-messages")).to_contain_text("asked me about this message")
    # The Home tab: Ada's threads, published for her.
    page.locator("#open-home").click()
    expect(page.locator("#home-view")).to_contain_text("Your threads")
    expect(page.locator("#home-view")).to_contain_text("A thread")
