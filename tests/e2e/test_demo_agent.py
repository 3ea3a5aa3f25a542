"""The demo agent shipped with the product (``manage.py demo_agent``, its own process) behind the
product's real processes: each feature it shows, through the Slack fake, as a visitor would try it."""

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from interactions.approval_prompts import DECIDE_ACTION
from interactions.prompts import SUBMIT_ACTION
from kourier.redaction import format_call
from sessions import notices
from sessions.models import Turn
from sessions.stops import STOP_ACTION, stopped_line
from simulator import defaults
from tests.e2e.helpers import (
    TRIGGER_TOKEN,
    TRIGGER_TOKEN_ENV,
    TRIGGERS,
    deliver,
    press,
    submit,
    wait_for_prompt,
    wait_for_thread,
    wait_for_turns_to_end,
)
from tests.e2e.helpers import wait_for_prompt as wait_for_controls
from tests.support.private_redis import free_port
from tests.support.stack import REPO_ROOT, START_TIMEOUT_SECONDS

pytestmark = pytest.mark.slow

WAIT = 20.0


@pytest.fixture
def demo_agent_url(tmp_path) -> Iterator[str]:
    """``manage.py demo_agent`` on a free port, unpaced; its URL once it serves its card."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = open(tmp_path / "demo_agent.log", "ab")  # noqa: SIM115  (closed with the process)
    process = subprocess.Popen(
        [sys.executable, "manage.py", "demo_agent", "--port", str(port), "--pace", "0"],
        cwd=REPO_ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "kourier.settings", "SECRET_KEY": "test-secret-key"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError((tmp_path / "demo_agent.log").read_text())
            try:
                if httpx.get(f"{url}.well-known/agent-card.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the demo agent did not start")
            time.sleep(0.1)  # polling for the server to listen, not timing a race
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()


@pytest.fixture
def world(make_world, demo_agent_url):
    return make_world(
        agent_url=demo_agent_url,
        dialect="kagent-v1",
        ask_user=True,
        tool_approvals=True,
        progress="steps",
        triggers=TRIGGERS,
        env={TRIGGER_TOKEN_ENV: TRIGGER_TOKEN},
    )


def bot_messages(world, thread_ts):
    return [m for m in world.slack.thread(world.channel, thread_ts)[1:] if m.is_bot]


def wait_for_reply(world, thread_ts, text):
    def found():
        return [m for m in bot_messages(world, thread_ts) if text in m.text and not m.streaming]

    world.slack.wait_until(lambda: bool(found()), timeout=WAIT)
    return found()[0]


def test_an_answer_streams_in_with_a_card_per_tool_call(world):
    ts = world.mention("what can you do?")
    reply = wait_for_reply(world, ts, "I am the demo agent")
    wait_for_turns_to_end(world, 1)

    assert reply.was_streamed
    assert [(card.title, card.status) for card in reply.cards] == [
        (format_call("search_docs", {"query": "what can you do?"}, 200), "complete"),
        (format_call("check_status", {"service": "api"}, 200), "complete"),
    ]
    assert reply.text.startswith("Let me look that up. \n\nI searched the docs (3 hits)")  # two model turns
    assert "plan a release" in reply.text


def test_planning_a_release_asks_questions_with_choices_and_plans_with_the_answers(world):
    ts = world.mention("plan a release")
    prompt = wait_for_prompt(world, ts)
    inputs = {
        block["block_id"]: block["element"]["type"] for block in prompt.blocks if block["type"] == "input"
    }
    assert inputs == {
        "question-0": "radio_buttons",
        "question-1": "checkboxes",
        "question-2": "plain_text_input",
    }

    submit(world, prompt.ts, choices={"answer-0": "1", "answer-1": ["0", "2"], "answer-2": "Thanks, team"})

    reply = wait_for_reply(world, ts, "Release plan")
    assert reply.text == (
        "Release plan for 3.0.0: Bug fixes, Docs. Freeze tomorrow, release on Thursday. "
        "The notes will say: Thanks, team"
    )

    def prompt_still_offers_submit() -> bool:
        return any(
            element.get("action_id") == SUBMIT_ACTION
            for block in world.slack.message(world.channel, prompt.ts).blocks
            if block.get("type") == "actions"
            for element in block.get("elements", [])
        )

    # The prompt is ended beside the resumed turn, not before it: its reply may come first.
    world.slack.wait_until(lambda: not prompt_still_offers_submit(), timeout=WAIT)


def test_restarting_the_api_runs_only_the_approved_tool(world):
    ts = world.mention("restart the api")
    prompt = wait_for_controls(world, ts)
    shown = str(prompt.blocks)
    assert "restart_deployment" in shown
    assert "flush_cache" in shown

    press(world, prompt.ts, DECIDE_ACTION, choices={"verdict-0": "approve", "verdict-1": "deny"})

    reply = wait_for_reply(world, ts, "Ran ")
    assert reply.text == "Ran restart_deployment; did not run flush_cache, since it was denied."
    wait_for_turns_to_end(world, 1)


def test_asking_it_to_fail_ends_the_turn_with_the_failure_notice(world):
    ts = world.mention("please fail")
    wait_for_reply(world, ts, notices.TASK_FAILED)
    wait_for_turns_to_end(world, 1)
    assert [m.text for m in bot_messages(world, ts)] == ["Trying, as you asked… ", notices.TASK_FAILED]


def test_an_alert_is_investigated_in_its_thread(world):
    body = {
        "id": "backup-nightly",
        "status": "firing",
        "title": "Backup failed",
        "text": "exit code 2",
        "labels": {"severity": "warning", "host": "b-1"},
    }
    answer = deliver(world, body, trigger="hooks")
    assert answer.status_code == 200
    wait_for_thread(world, 1)
    wait_for_turns_to_end(world, 1)
    [root] = world.slack.messages(world.channel)
    [reply] = bot_messages(world, root.ts)  # posted, then updated to the end: read it now

    assert reply.text.startswith("Investigating *Backup failed*.")
    assert "*Backup failed*: the metric has been rising" in reply.text
    # A data part's keys may come back in any order: the cards are told apart by their tool.
    assert [(card.title.split("(")[0], card.status) for card in reply.cards] == [
        ("query_metrics", "complete"),
        ("search_logs", "complete"),
    ]
    assert 'alert="Backup failed"' in reply.cards[0].title
    assert root.text.startswith(":rotating_light: *FIRING* · *Backup failed*")


def test_the_slow_report_is_stopped_with_the_stop_button_and_the_demo_agent_cancels_it(world):
    world.slack.configure_workspace(streams_enabled=False)  # a posted reply carries the Stop button
    ts = world.mention("run the slow report")

    def working():
        return [
            m
            for m in bot_messages(world, ts)
            if any(
                e.get("action_id") == STOP_ACTION
                for b in m.blocks
                if b["type"] == "actions"
                for e in b["elements"]
            )
        ]

    world.slack.wait_until(lambda: bool(working()), timeout=WAIT)
    press(world, working()[0].ts, STOP_ACTION)
    wait_for_turns_to_end(world, 1)
    turn = Turn.objects.get(message_ts=ts)
    assert turn.outcome == Turn.Outcome.STOPPED
    world.slack.wait_until(
        lambda: bot_messages(world, ts)[-1].text == stopped_line(defaults.GRACE), timeout=WAIT
    )
    assert "The slow report is ready" not in " ".join(m.text for m in bot_messages(world, ts))


def test_a_shared_log_is_read_and_a_chart_comes_back_as_an_image_in_the_thread(world):
    log = b"10:00 INFO boot\n10:01 ERROR disk full on /var\n10:02 INFO retry\n"
    ts = world.slack.user_shares_files(
        defaults.ADA,
        world.channel,
        f"{world.slack.bot_mention} what went wrong?",
        [("app.log", log, "text/plain")],
    )
    read = wait_for_reply(world, ts, "I read the file you shared")
    assert "*app.log* has 3 lines; 1 says ERROR: `10:01 ERROR disk full on /var`." in read.text

    chart = world.mention("draw a chart")
    world.slack.wait_until(lambda: bool(world.slack.files_in_thread(world.channel, chart)), timeout=WAIT)
    wait_for_turns_to_end(world, 2)
    [image] = world.slack.files_in_thread(world.channel, chart)
    assert (image.name, image.mimetype) == ("errors-this-week.png", "image/png")
    assert image.content.startswith(b"\x89PNG\r\n\x1a\n")
