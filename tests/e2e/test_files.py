"""Files, end to end through the real processes (issue 30, points 2 to 5): a person shares files with a
mention or a reply and the agent (the a2a-sdk test agent) receives them as file parts, within the
Binding's bounds and the agent card's input modes; what does not go is named in one fixed line and the
turn goes on; a text file is redacted; an app without files:read says so; files the agent returns are
uploaded into the thread once, even when the completion's answer is lost."""

import base64
import signal

import pytest

from kourier.slack.outbox import PostKind
from sessions import file_rules
from sessions.models import PostIntent, Turn
from simulator import defaults
from tests.e2e.helpers import (
    TRIGGER_TOKEN,
    TRIGGER_TOKEN_ENV,
    TRIGGERS,
    am_alert,
    bot_messages,
    deliver,
    group,
    roots,
    wait_for,
    wait_for_reply_count,
    wait_for_turns_to_end,
)
from tests.fakes.a2a_agent import steps

pytestmark = [pytest.mark.slow, pytest.mark.shares_stacks]  # tests/support/stack.py: StackPool

TAKES_FILES = ("text/plain", "image/*", "application/pdf")
LOG = b"2026-12-05 boot ok\npassword=hunter2hunter2\n"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


@pytest.fixture
def agent(make_a2a_agent):
    made = make_a2a_agent(protocol="1.0", input_modes=TAKES_FILES)
    made.script([steps.text("Got it.")])
    return made


def file_parts(received) -> list[dict]:
    return [part for part in received.parts if "raw" in part or "url" in part]


def sent(world, agent, thread_ts: str):
    wait_for_reply_count(world, thread_ts, 1)
    wait_for_turns_to_end(world, 1)
    [received] = agent.received
    return received


def thread_texts(world, thread_ts: str) -> list[str]:
    return [message.text for message in bot_messages(world, thread_ts)]


def test_files_shared_with_a_mention_reach_the_agent_as_file_parts(make_world, agent):
    world = make_world(agent_url=agent.url)
    root = world.slack.user_shares_files(
        defaults.ADA,
        world.channel,
        f"{world.slack.bot_mention} what failed?",
        [("boot.log", LOG, "text/plain"), ("chart.png", PNG, "image/png")],
    )

    received = sent(world, agent, root)

    log, chart = file_parts(received)
    assert (log["filename"], log["mediaType"]) == ("boot.log", "text/plain")
    assert b"hunter2hunter2" not in base64.b64decode(log["raw"])  # redacted as message text is
    assert b"boot ok" in base64.b64decode(log["raw"])
    assert (chart["filename"], chart["mediaType"], base64.b64decode(chart["raw"])) == (
        "chart.png",
        "image/png",
        PNG,
    )
    assert "what failed?" in received.text
    assert not any(text.startswith("Not sent to the agent") for text in thread_texts(world, root))


def test_files_that_cannot_go_are_named_in_one_line_and_the_turn_goes_on(make_world, agent):
    world = make_world(agent_url=agent.url, files_max_file_bytes=1024)
    root = world.slack.user_shares_files(
        defaults.ADA,
        world.channel,
        f"{world.slack.bot_mention} look",
        [
            ("big.zip", b"PK" * 10, "application/zip"),
            ("huge.txt", b"x" * 2048, "text/plain"),
            ("gone.txt", b"vanished", "text/plain"),
            ("ok.txt", b"fine", "text/plain"),
        ],
        unreachable=("gone.txt",),
    )

    received = sent(world, agent, root)

    assert [part["filename"] for part in file_parts(received)] == ["ok.txt"]
    notices = [text for text in thread_texts(world, root) if text.startswith("Not sent")]
    assert notices == [
        "Not sent to the agent: big.zip (type not allowed), huge.txt (too big), gone.txt (could not be downloaded)"
    ]
    assert Turn.objects.get().outcome == Turn.Outcome.COMPLETED


def test_a_reply_with_a_type_the_agent_does_not_take_sends_the_rest(make_world, make_a2a_agent):
    text_only = make_a2a_agent(protocol="0.3")  # its card takes "text" only
    text_only.script([steps.text("Read.")])
    world = make_world(agent_url=text_only.url)
    ts = world.slack.user_says(defaults.ADA, world.channel, f"{world.slack.bot_mention} start")
    wait_for_reply_count(world, ts, 1)
    wait_for_turns_to_end(world, 1)

    world.slack.user_shares_files(
        defaults.ADA,
        world.channel,
        "and these",
        [("chart.png", PNG, "image/png"), ("notes.txt", b"notes", "text/plain")],
        thread_ts=ts,
    )
    wait_for_turns_to_end(world, 2)

    second = text_only.received[-1]
    assert [part["filename"] for part in file_parts(second)] == ["notes.txt"]
    assert "Not sent to the agent: chart.png (type the agent does not take)" in thread_texts(world, ts)


def test_an_app_without_files_read_says_so_and_the_turn_goes_on(make_world, agent):
    world = make_world(agent_url=agent.url)
    world.slack.configure_workspace(scopes={"files:write"})
    try:
        root = world.slack.user_shares_files(
            defaults.ADA, world.channel, f"{world.slack.bot_mention} see", [("boot.log", LOG, "text/plain")]
        )
        received = sent(world, agent, root)
    finally:
        world.slack.configure_workspace(scopes={"files:read", "files:write"})

    assert file_parts(received) == []
    assert f"Not sent to the agent: boot.log ({file_rules.NO_SCOPE})" in thread_texts(world, root)
    assert Turn.objects.get().outcome == Turn.Outcome.COMPLETED


def test_a_file_the_agent_returns_is_uploaded_into_the_thread_once(make_world, agent):
    agent.script([steps.text("Here is the chart."), steps.file_out("chart.png", "image/png", PNG)])
    world = make_world(agent_url=agent.url)
    # The completion is applied and its answer lost: the runner finds the file in the thread.
    world.slack.fail("files.completeUploadExternal", "disconnect_after_apply")

    root = world.mention("draw it")
    wait_for(lambda: world.slack.files_in_thread(world.channel, root), "the chart in the thread")
    wait_for_turns_to_end(world, 1)

    [shared] = world.slack.files_in_thread(world.channel, root)
    assert (shared.name, shared.title, shared.content) == ("chart.png", "chart.png", PNG)
    assert world.slack.count("files.completeUploadExternal") == 1
    assert any(message.files == ["chart.png"] for message in world.slack.thread(world.channel, root))


def test_a_file_that_cannot_be_uploaded_is_named_instead(make_world, agent):
    agent.script(
        [
            steps.text("Two files."),
            steps.file_out("a.png", "image/png", PNG),
            steps.file_out("remote.pdf", "application/pdf", url="https://example.invalid/r.pdf"),
        ]
    )
    world = make_world(agent_url=agent.url)
    world.slack.configure_workspace(scopes={"files:read"})
    try:
        root = world.mention("files please")
        wait_for_turns_to_end(world, 1)
        wait_for(
            lambda: any(t.startswith("Not uploaded") for t in thread_texts(world, root)),
            "the not-uploaded line",
        )
    finally:
        world.slack.configure_workspace(scopes={"files:read", "files:write"})

    assert world.slack.files_in_thread(world.channel, root) == []
    assert (
        "Not uploaded to the thread: a.png (could not be uploaded), remote.pdf (its address is not allowed)"
        in thread_texts(world, root)
    )


def test_in_direct_messages_a_shared_file_reaches_the_agent_and_its_file_comes_back(make_world, agent):
    agent.script([steps.text("Annotated."), steps.file_out("annotated.png", "image/png", PNG)])
    world = make_world(
        agent_url=agent.url,
        channels=[],
        direct_messages={"allowed_users": [defaults.ADA], "allowed_groups": [], "suggested_prompts": []},
    )
    im = world.slack.user_opens_app(defaults.ADA)
    root = world.slack.user_shares_files(defaults.ADA, im, "annotate this", [("chart.png", PNG, "image/png")])

    wait_for(
        lambda: world.slack.files_in_thread(im, root)[1:], "the agent's file in the direct message thread"
    )
    wait_for_turns_to_end(world, 1)

    [received] = agent.received
    assert [part["filename"] for part in file_parts(received)] == ["chart.png"]
    assert [f.name for f in world.slack.files_in_thread(im, root)] == ["chart.png", "annotated.png"]


def test_in_an_alert_thread_a_reply_with_a_file_reaches_the_agent_and_its_file_comes_back(make_world, agent):
    world = make_world(agent_url=agent.url, triggers=TRIGGERS, env={TRIGGER_TOKEN_ENV: TRIGGER_TOKEN})
    assert deliver(world, group(am_alert())).status_code == 200
    wait_for(lambda: roots(world), "the alert's root message")
    [root] = [message.ts for message in roots(world)]
    wait_for_turns_to_end(world, 1)

    agent.script([steps.text("Here is the graph."), steps.file_out("latency.png", "image/png", PNG)])
    world.slack.user_shares_files(
        defaults.ADA,
        world.channel,
        "this is the trace",
        [("trace.txt", b"GET /api 2s", "text/plain")],
        thread_ts=root,
    )
    wait_for(
        lambda: world.slack.files_in_thread(world.channel, root)[1:], "the agent's file in the alert thread"
    )
    wait_for_turns_to_end(world, 2)

    assert [part["filename"] for part in file_parts(agent.received[-1])] == ["trace.txt"]
    assert [f.name for f in world.slack.files_in_thread(world.channel, root)] == ["trace.txt", "latency.png"]


def test_a_worker_killed_mid_upload_leaves_the_file_in_the_thread_once(make_world, agent):
    agent.script([steps.text("The chart."), steps.file_out("chart.png", "image/png", PNG)])
    world = make_world(
        agent_url=agent.url, beat=True, env={"SESSION_LEASE_SECONDS": "3", "RECOVERY_INTERVAL_SECONDS": "1"}
    )
    # Slack shares the file and its answer never comes back: the runner is killed while it waits.
    world.slack.fail("files.completeUploadExternal", "timeout_after_apply")
    root = world.mention("draw it")
    world.slack.wait_until(lambda: world.slack.count("files.completeUploadExternal") == 1, timeout=30)
    assert PostIntent.objects.get(kind=PostKind.FILE).state == PostIntent.State.INTENDED
    world.stack.kill("worker", signal.SIGKILL)
    world.stack.start_worker(name="worker2")
    wait_for_turns_to_end(world, 1)
    wait_for(
        lambda: PostIntent.objects.get(kind=PostKind.FILE).state == PostIntent.State.CONFIRMED,
        "the upload confirmed",
    )

    assert [f.name for f in world.slack.files_in_thread(world.channel, root)] == ["chart.png"]
    assert world.slack.count("files.completeUploadExternal") == 1  # found in the thread, not shared again
    assert world.slack.count("files.getUploadURLExternal") == 1
