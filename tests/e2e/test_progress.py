"""What a reply shows while the agent works, end to end: signed Slack events (or an alert) into the
real processes, a real A2A agent, and the Slack fake's view of the thread and record of calls.

Each world binds three channels, one per chat.progress mode, so one run shows every mode side by
side; alert threads are started as a trigger starts them (``tests.support.alerts.fire_alert``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest

from alerts.messages import FIRST_TURN_INTRO
from kourier.progress import (
    NO_OUTPUT,
    NO_RESULT,
    STOPPED,
    WORKED,
    WORKING,
    WROTE_AN_UPDATE,
    WROTE_THE_ANSWER,
    ThreadKind,
)
from kourier.redaction import format_call
from kourier.slack.status import ASSISTANT_STATUS_WORKING
from sessions import notices
from sessions.identity import SYSTEM_IDENTITY
from sessions.models import Session, Turn
from simulator import defaults
from tests.e2e.helpers import assert_acked, wait_for_turns_to_end
from tests.factories import BindingFactory
from tests.fakes.a2a_agent import steps
from tests.fakes.a2a_agent.gates import Gate
from tests.support.alerts import alert_name, fire_alert

pytestmark = [pytest.mark.slow, pytest.mark.shares_stacks]  # tests/support/stack.py: StackPool

WAIT = 30.0
ALERT_TURN = f"Slack: alert: {FIRST_TURN_INTRO}"
MODES = ("steps", "steps-and-activity", "activity")
CHANNELS = {"steps": defaults.CHANNEL_ID, "steps-and-activity": "C0002", "activity": "C0003"}
SECRET = "xoxb-1234-5678-abcdefghijkl"
SEARCH_ARGS = {"q": f"disk full, key {SECRET}"}  # one key: a data part's keys may come back in any order
SEARCH = format_call("search", SEARCH_ARGS, 200)  # search(q="disk full, key [redacted]")
FETCH = format_call("fetch", {"url": "https://status.example"}, 200)
REPLY_WRITES = ("chat.startStream", "chat.appendStream", "chat.stopStream", "chat.postMessage", "chat.update")

# Two tool calls (the second fails), the model's reasoning, a 3.5 s gap, then the answer.
MAIN = [
    steps.thought("secret reasoning about the disk"),
    steps.tool_call("c1", "search", SEARCH_ARGS),
    steps.tool_result("c1", "search", {"hits": 3}),
    steps.tool_call("c2", "fetch", {"url": "https://status.example"}),
    steps.tool_result("c2", "fetch", {"error": "timeout"}),
    steps.sleep(3.5),
    steps.text("The disk is full."),
]
SCRIPTS = {
    "main": MAIN,
    # Text after a gap, then a tool call: the text was not the answer.
    "update": [
        steps.sleep(3.5),
        steps.text("Let me look. "),
        steps.tool_call("c1", "search", SEARCH_ARGS),
        steps.tool_result("c1", "search", {"hits": 1}),
        steps.text("Found it."),
    ],
    "fail": [steps.text("Trying. "), steps.sleep(3.5), steps.fail("boom")],
    "silentfail": [steps.sleep(3.5), steps.fail("boom")],
    "many": [
        *[steps.tool_call(f"m{n}", "probe", {"n": f"#{n}"}) for n in range(22)],
        *[steps.tool_result(f"m{n}", "probe", {"ok": True}) for n in range(22)],
        steps.text("Checked all."),
    ],
    "noresult": [steps.tool_call("c1", "search", SEARCH_ARGS), steps.text("Answered without it.")],
    "quick": [
        steps.tool_call("c1", "search", SEARCH_ARGS),
        steps.tool_result("c1", "search", {"hits": 3}),
        steps.text("Quick answer."),
    ],
    # Outlives a short stream lifetime: the stream expires while c1 runs.
    "long": [
        steps.text("Part one. "),
        steps.tool_call("c1", "search", SEARCH_ARGS),
        steps.sleep(3.5),
        steps.tool_result("c1", "search", {"hits": 3}),
        steps.text("Part two. "),
        steps.tool_call("c2", "fetch", {"url": "https://status.example"}),
        steps.tool_result("c2", "fetch", {"ok": True}),
        steps.sleep(1.2),
        steps.text("Part three."),
    ],
}


def script_for(received):
    if received.text.startswith(ALERT_TURN):
        return SCRIPTS[alert_name(received.text)]
    return SCRIPTS[received.text.rsplit(": ", 1)[-1]]


@dataclass
class Thread:
    """One thread of the world: where it is, its mode, and how to read it."""

    world: Any
    channel: str
    root: str
    mode: str

    @property
    def slack(self):
        return self.world.slack

    def replies(self):
        return [m for m in self.slack.thread(self.channel, self.root)[1:] if m.is_bot]

    @property
    def reply(self):
        return self.replies()[0]

    def cards(self):
        return [(card.title, card.status) for card in self.reply.cards]

    def writes(self) -> list[Any]:
        """The reply's own Slack writes (a notice is not one), refused ones included."""
        reply_ts = self.reply.ts
        found = []
        for call in self.slack.calls():
            if call.method not in REPLY_WRITES or call.args.get("channel") != self.channel:
                continue
            made = (call.response or {}).get("ts")
            if call.args.get("ts") == reply_ts or (
                call.args.get("thread_ts") == self.root and made == reply_ts
            ):
                found.append(call)
        return found

    def statuses(self) -> list[str]:
        return [
            call.args["status"]
            for call in self.slack.calls("assistant.threads.setStatus")
            if (call.args["channel_id"], call.args["thread_ts"]) == (self.channel, self.root)
        ]


@pytest.fixture
def modes_world(make_world, a2a_agent, start_alerts_here):
    """A world with a Binding per progress mode, each on its own channel, and a way to start alerts."""
    a2a_agent.on_message(script_for)

    def make(**binding_fields):
        world = make_world(agent_url=a2a_agent.url, progress="steps", **binding_fields)
        world.bindings = {"steps": world.binding}
        for mode in MODES[1:]:
            world.slack.add_channel(CHANNELS[mode], mode, members=[defaults.ADA, defaults.GRACE])
            world.bindings[mode] = BindingFactory(
                connection=world.connection,
                channels=[CHANNELS[mode]],
                agent_url=a2a_agent.url,
                progress=mode,
                **binding_fields,
            )
        start_alerts_here(world)
        return world

    return make


def chat(world, mode: str, script: str) -> Thread:
    root = world.slack.user_says(defaults.ADA, CHANNELS[mode], f"{world.slack.bot_mention} {script}")
    assert_acked(world.slack, root)
    return Thread(world, CHANNELS[mode], root, mode)


def alert(world, mode: str, script: str) -> Thread:
    return Thread(world, CHANNELS[mode], fire_alert(world.bindings[mode], script), mode)


def wait_for_turns(world, count: int) -> None:
    wait_for_turns_to_end(world, count, timeout=WAIT)


def everything_written(world) -> str:
    return json.dumps([call.args for call in world.slack.calls()], ensure_ascii=False)


def assert_stream_ended_with_no_card_open(message) -> None:
    assert message.was_streamed
    assert not message.streaming
    assert not any(card.left_in_progress for card in message.cards)


def test_each_progress_mode_in_a_chat_thread(modes_world):
    world = modes_world()
    threads = {mode: chat(world, mode, "main") for mode in MODES}
    update = chat(world, "steps-and-activity", "update")
    failed = chat(world, "steps-and-activity", "fail")
    no_result = chat(world, "steps", "noresult")
    wait_for_turns(world, 6)

    for thread in threads.values():
        assert thread.reply.text == "The disk is full."
        assert_stream_ended_with_no_card_open(thread.reply)
        assert len(thread.replies()) == 1
    # steps: a card per tool call, in call order; the failed result shows as failed.
    assert threads["steps"].cards() == [(SEARCH, "complete"), (FETCH, "error")]
    # steps-and-activity: the same, and the Working… card of the 3.5 s gap, retitled by the text.
    assert threads["steps-and-activity"].cards() == [
        (SEARCH, "complete"),
        (FETCH, "error"),
        (WROTE_THE_ANSWER, "complete"),
    ]
    # activity: one card for the whole wait, ended as Worked with what it took.
    [activity] = threads["activity"].reply.cards
    assert (activity.title, activity.status) == (WORKED, "complete")
    assert re.fullmatch(r"Took \d+ s, 2 steps \(1 failed\)", activity.output or "")
    assert "search(" not in json.dumps([call.args for call in threads["activity"].writes()])

    # A tool call after text retitles that gap's card: the text was not the answer.
    assert update.reply.text == "Let me look. \n\nFound it."  # two model turns
    assert update.cards() == [(WROTE_AN_UPDATE, "complete"), (SEARCH, "complete")]

    # A call with no result by the end is complete, and says so.
    [card] = no_result.reply.cards
    assert (card.title, card.status, card.output) == (SEARCH, "complete", NO_RESULT)
    assert no_result.reply.text == "Answered without it."

    # A failed task: the stream is stopped, its Working… card ended as Stopped (an error), and the
    # failure notice is a message of its own.
    [reply, notice] = failed.replies()
    assert_stream_ended_with_no_card_open(reply)
    assert (reply.text, failed.cards()) == ("Trying. ", [(STOPPED, "error")])
    assert notice.text == notices.TASK_FAILED

    # The write budget: the gap costs at most three writes more than steps spends.
    steps_writes = len(threads["steps"].writes())
    assert len(threads["steps-and-activity"].writes()) <= steps_writes + 3
    # Never the reasoning, never a secret; never an assistant status in a chat thread.
    written = everything_written(world)
    assert "secret reasoning" not in written
    assert SECRET not in written
    assert world.slack.count("assistant.threads.setStatus") == 0


def test_each_progress_mode_in_an_alert_thread(modes_world, a2a_agent):
    world = modes_world()
    # The first call waits until each thread's reply is posted: a post may wait its turn in the
    # channel's budget (alert posts go first), and must still show the first call, not a later one.
    posted = Gate()
    held_after_the_first_call = [*MAIN[:2], steps.wait_for(posted), *MAIN[2:]]
    a2a_agent.on_message(
        lambda received: (
            held_after_the_first_call
            if received.text.startswith(ALERT_TURN) and alert_name(received.text) == "main"
            else script_for(received)
        )
    )
    threads = {mode: alert(world, mode, "main") for mode in MODES}
    many = alert(world, "steps", "many")
    silent = alert(world, "steps-and-activity", "silentfail")
    world.slack.wait_until(lambda: all(thread.replies() for thread in threads.values()), timeout=WAIT)
    posted.open()
    wait_for_turns(world, 5)

    assert {s.kind for s in Session.objects.all()} == {ThreadKind.ALERT}
    assert set(Turn.objects.values_list("user_id", flat=True)) == {SYSTEM_IDENTITY}
    # The first turn names no person.
    assert all(r.text.startswith(ALERT_TURN) for r in a2a_agent.received)
    assert sorted(alert_name(r.text) for r in a2a_agent.received) == [
        "main",
        "main",
        "main",
        "many",
        "silentfail",
    ]
    for thread in threads.values():
        assert len(thread.replies()) == 1
        assert thread.reply.text == "The disk is full."
        assert not thread.reply.was_streamed  # no one to show a stream to: posted, then updated
        assert {call.method for call in thread.writes()} == {"chat.postMessage", "chat.update"}

    # The first post has the small-print line of the latest call; updates show the cards above the
    # text, and the final message keeps them.
    first_posts = {mode: thread.writes()[0] for mode, thread in threads.items()}
    assert all(post.method == "chat.postMessage" for post in first_posts.values())
    assert first_posts["steps"].args["blocks"][0]["elements"][0]["text"] == f"Calling {SEARCH}"
    assert first_posts["steps-and-activity"].args["blocks"][0]["elements"][0]["text"] == f"Calling {SEARCH}"
    assert first_posts["activity"].args["blocks"][0]["elements"][0]["text"] == WORKING
    assert threads["steps"].cards() == [(SEARCH, "complete"), (FETCH, "error")]
    assert threads["steps-and-activity"].cards() == [
        (SEARCH, "complete"),
        (FETCH, "error"),
        (WROTE_THE_ANSWER, "complete"),
    ]
    # activity: one line until the text, never a tool's name.
    assert threads["activity"].reply.cards == []
    activity_writes = json.dumps([call.args for call in threads["activity"].writes()], ensure_ascii=False)
    assert "Working…" in activity_writes
    assert "search" not in activity_writes

    # Only the latest 20 cards, under a line that counts the rest.
    assert len(many.reply.cards) == 20
    assert many.reply.cards[-1].title == format_call("probe", {"n": "#21"}, 200)
    assert many.reply.blocks[0]["elements"][0]["text"] == "2 earlier steps not shown"
    assert many.reply.text == "Checked all."

    # A silent turn that fails: its Working… post is left saying (no output); the notice follows.
    [reply, notice] = silent.replies()
    assert silent.writes()[0].args["blocks"][0]["elements"][0]["text"] == WORKING
    assert (reply.text, reply.cards) == (NO_OUTPUT, [])
    assert notice.text == notices.TASK_FAILED

    # The write budget: the gap costs one more message update than steps.
    updates = {mode: sum(c.method == "chat.update" for c in t.writes()) for mode, t in threads.items()}
    assert updates["steps-and-activity"] <= updates["steps"] + 1

    # Slack's assistant status: only in steps-and-activity and activity; set before the thread has any
    # reply, again after each write but the last, cleared when the turn ends, whether it failed or not.
    assert threads["steps"].statuses() == []
    assert many.statuses() == []
    for thread in (threads["steps-and-activity"], threads["activity"], silent):
        statuses = thread.statuses()
        assert statuses[0] == ASSISTANT_STATUS_WORKING
        assert statuses[-1] == ""
        # Once at the start and once after each write but the last (which has one more write to
        # count when the last had nothing new to show and was not made).
        assert statuses.count(ASSISTANT_STATUS_WORKING) in (len(thread.writes()), len(thread.writes()) + 1)
        assert world.slack.assistant_status(thread.channel, thread.root) is None
        first_status = next(
            c.at
            for c in world.slack.calls("assistant.threads.setStatus")
            if c.args["thread_ts"] == thread.root
        )
        assert first_status <= thread.writes()[0].at


def test_cards_refused_leave_a_plain_text_stream_and_lines_in_an_alert_thread(modes_world):
    world = modes_world()
    world.slack.configure_workspace(task_cards_enabled=False)
    chat_thread = chat(world, "steps-and-activity", "main")
    alert_thread = alert(world, "steps", "main")
    wait_for_turns(world, 2)

    # The stream is plain text: no mode shows a card.
    message = chat_thread.reply
    assert message.text == "The disk is full."
    assert message.cards == []
    assert message.was_streamed
    assert not message.streaming
    starts = [c for c in world.slack.calls("chat.startStream") if c.args["channel"] == chat_thread.channel]
    assert starts[0].error == "invalid_chunks"
    assert starts[-1].ok

    # The alert thread's update with cards is refused once, sent again without them, and shows the
    # line from then on; the text replaces the line at the end.
    updates = [c for c in alert_thread.writes() if c.method == "chat.update"]
    assert [c.error for c in updates].count("invalid_blocks") == 1
    assert updates[0].error == "invalid_blocks"
    assert updates[1].ok
    assert updates[1].args["blocks"][0]["elements"][0]["text"] == f"{FETCH} failed"
    assert (alert_thread.reply.text, alert_thread.reply.cards) == ("The disk is full.", [])


def test_a_refused_stream_falls_back_to_post_and_update_with_the_cards(modes_world):
    world = modes_world()
    world.slack.configure_workspace(streams_enabled=False)
    thread = chat(world, "steps-and-activity", "main")
    wait_for_turns(world, 1)

    message = thread.reply
    assert not message.was_streamed
    assert message.text == "The disk is full."
    assert thread.cards() == [(SEARCH, "complete"), (FETCH, "error"), (WROTE_THE_ANSWER, "complete")]
    assert [c.error for c in world.slack.calls("chat.startStream")] == ["feature_not_enabled"]
    assert thread.writes()[0].method == "chat.postMessage"


def test_a_turn_longer_than_the_stream_lifetime_goes_on_without_losing_a_card_or_a_character(modes_world):
    world = modes_world()
    world.slack.configure_workspace(stream_lifetime=2.5)
    thread = chat(world, "steps", "long")
    wait_for_turns(world, 1)

    message = thread.reply
    assert len(thread.replies()) == 1
    assert message.text == "Part one. \n\nPart two. \n\nPart three."  # three model turns
    assert thread.cards() == [(SEARCH, "complete"), (FETCH, "complete")]
    assert not any(card.left_in_progress for card in message.cards)
    errors = [c.error for c in thread.writes()]
    assert "message_not_in_streaming_state" in errors  # Slack ended the stream; the reply went on
    after_expiry = thread.writes()[errors.index("message_not_in_streaming_state") + 1 :]
    assert after_expiry
    assert all(c.method == "chat.update" for c in after_expiry)
    assert [b["type"] for b in after_expiry[-1].args["blocks"]] == ["task_card", "task_card", "markdown"]


def test_a_connection_that_cannot_set_a_status_is_asked_once(modes_world):
    world = modes_world()
    world.slack.configure_workspace(assistant_status="missing_scope")
    first = alert(world, "steps-and-activity", "quick")
    wait_for_turns(world, 1)
    second = alert(world, "activity", "quick")
    wait_for_turns(world, 2)

    # The workspace cannot use the method: asked once, then never again on that Connection.
    assert [c.error for c in world.slack.calls("assistant.threads.setStatus")] == ["missing_scope"]
    assert world.stack.log_tail("worker", lines=400).count("slack.assistant_status_unavailable") == 1
    # The replies are unaffected.
    assert first.reply.text == second.reply.text == "Quick answer."
    assert first.cards() == [(SEARCH, "complete")]
