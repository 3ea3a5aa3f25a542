"""kourier.progress against the spec, sentence by sentence.

Every test is named ``test_sNN_...`` after one rule-stating sentence of the "Output" section of
spec/002 (Threads and sessions), after its first paragraph and down to "Restarts"; the docstring
quotes the sentence. Time is a fake clock; a ``Turn`` plays a script the way the Slack side drives a
``Progress``: it feeds each event at its time and calls ``tick()`` at every ``deadline`` on the way,
as a runner waiting on "the next event or the next deadline" does.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kourier.a2a.events import (
    AnswerFormat,
    ApprovalRequest,
    AskedQuestion,
    Question,
    TaskEnded,
    TaskStarted,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolToApprove,
)
from kourier.a2a.wire import TaskState
from kourier.progress import (
    CALL_DISPLAY_LIMIT,
    DEFAULT_PROGRESS_MODE,
    FINISHED,
    NO_OUTPUT,
    NO_RESULT,
    STOPPED,
    TITLE_LIMIT,
    WAITING_FOR_YOUR_ANSWER,
    WORKED,
    WORKING,
    WROTE_AN_UPDATE,
    WROTE_THE_ANSWER,
    Card,
    CardStatus,
    Ending,
    Progress,
    ProgressMode,
    ThreadKind,
    View,
    Write,
    WriteKind,
    ended_card,
    format_duration,
    format_minutes,
)

STEPS, SAA, ACTIVITY = ProgressMode.STEPS, ProgressMode.STEPS_AND_ACTIVITY, ProgressMode.ACTIVITY
CHAT, ALERT = ThreadKind.CHAT, ThreadKind.ALERT
IN_PROGRESS, COMPLETE, ERROR = CardStatus.IN_PROGRESS, CardStatus.COMPLETE, CardStatus.ERROR
START, UPDATE, STOP = WriteKind.START, WriteKind.UPDATE, WriteKind.STOP
COMPLETED, WAITING, FAILED = Ending.COMPLETED, Ending.WAITING, Ending.FAILED

TICK = "tick"  # an explicit tick() at that time (the Turn also ticks at every deadline)
REFUSE = "refuse"  # Slack refused the cards of the last write


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Turn:
    """One reply: a Progress, its fake clock, and every write it asked for."""

    mode: ProgressMode | None
    thread: ThreadKind
    cards: bool = True
    throttle: float = 1.0
    auto_tick: bool = True
    clock: FakeClock = field(default_factory=FakeClock)
    writes: list[Write] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # when each write was asked for

    def __post_init__(self) -> None:
        self.progress = Progress(
            self.mode, self.thread, cards_supported=self.cards, throttle=self.throttle, clock=self.clock
        )

    def at(self, t: float) -> Turn:
        """Moves the clock to ``t``, ticking at every deadline on the way."""
        while self.auto_tick:
            due = self.progress.deadline
            if due is None or due > t:
                break
            self.clock.now = max(self.clock.now, due)
            self._add(self.progress.tick())
        self.clock.now = max(self.clock.now, t)
        return self

    def _add(self, writes: list[Write]) -> None:
        self.writes += writes
        self.times += [self.clock.now] * len(writes)

    def play(self, script: Iterable[tuple[float, Any]]) -> Turn:
        for t, step in script:
            self.at(t)
            if step == TICK:
                self._add(self.progress.tick())
            elif step == REFUSE:
                self._add(self.progress.cards_refused(self.writes[-1]))
            elif isinstance(step, Ending):
                self._add(self.progress.finish(step))
            else:
                self._add(self.progress.feed(step))
        return self

    @property
    def last(self) -> View:
        return self.writes[-1].view

    @property
    def timed(self) -> list[Write]:
        return [w for w in self.writes if w.timed]

    def kinds(self) -> list[WriteKind]:
        return [w.kind for w in self.writes]


def turn(mode, thread, script, **kw) -> Turn:
    return Turn(mode, thread, **kw).play(script)


def call(cid: str, name: str = "search", **args: Any) -> ToolCall:
    return ToolCall(cid, name, args)


def ok(cid: str) -> ToolResult:
    return ToolResult(cid, True)


def bad(cid: str) -> ToolResult:
    return ToolResult(cid, False)


def text(s: str) -> TextDelta:
    return TextDelta(s)


def titles(view: View) -> list[str]:
    return [c.title for c in view.cards]


def statuses(view: View) -> list[CardStatus]:
    return [c.status for c in view.cards]


def everything_shown(writes: Iterable[Write]) -> str:
    """All a person could read in these writes, as one string."""
    parts: list[str] = []
    for w in writes:
        v = w.view
        parts += [v.line or "", v.text, v.fallback]
        for c in v.cards:
            parts += [c.title, c.output or ""]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------------
# "What a live reply shows of the agent's work depends on where the thread is and on chat.progress."


def test_s01_what_a_reply_shows_depends_on_the_thread_and_chat_progress():
    """What a live reply shows of the agent's work depends on where the thread is and on chat.progress."""
    script = [(0, call("a", q="x")), (1, ok("a")), (6, text("Done.")), (7, COMPLETED)]
    shown = {
        (mode, thread): tuple((w.kind, w.view) for w in turn(mode, thread, script).writes)
        for mode in ProgressMode
        for thread in ThreadKind
    }
    assert len(set(shown.values())) == 6


# ---------------------------------------------------------------------------------------------------
# A chat thread


def test_s02_a_chat_thread_shows_a_step_card_for_each_tool_call_in_call_order():
    """A chat thread ... shows a step card for each tool call, in the order the calls were made."""
    t = turn(
        STEPS,
        CHAT,
        [
            (0, call("a", "one")),
            (0.1, call("b", "two")),
            (0.2, call("c", "three")),
            (0.3, ok("c")),
            (0.4, ok("a")),
        ],
    )
    assert [c.id for c in t.last.cards] == ["call-a", "call-b", "call-c"]
    assert titles(t.last) == ["one()", "two()", "three()"]
    assert statuses(t.last) == [COMPLETE, IN_PROGRESS, COMPLETE]


@pytest.mark.parametrize(("result", "status"), [(ok("a"), COMPLETE), (bad("a"), ERROR)])
def test_s03_the_card_begins_when_the_call_arrives_and_finishes_when_its_result_does(result, status):
    """The card begins when the call arrives and finishes when its result does (a result that reports
    a failure shows as failed)."""
    t = turn(STEPS, CHAT, [(0, call("a", q="x")), (2, result)])
    begin, end = t.writes
    assert (begin.kind, begin.view.cards) == (START, (Card("call-a", 'search(q="x")', IN_PROGRESS),))
    assert begin.changed == begin.view.cards
    assert (end.kind, end.changed) == (UPDATE, (Card("call-a", 'search(q="x")', status),))


def test_s04_every_dialect_reports_tool_calls_alike_so_a_sub_agents_call_renders_like_any_other():
    """Every dialect reports the tool calls of an agent that marks them as Google ADK or kagent does
    (the dialects' tests pin the reading; here: a call is rendered from the normalized event alone)."""
    own = turn(STEPS, CHAT, [(0, ToolCall("a", "search", {"q": "x"}))])
    sub = turn(STEPS, CHAT, [(0, ToolCall("a", "search", {"q": "x"}, agent="k8s-agent"))])
    assert own.writes == sub.writes


# ---------------------------------------------------------------------------------------------------
# An alert thread


def test_s05_an_alert_thread_posts_one_message_and_then_updates_it():
    """An alert thread has no one to show a stream to, so one message is posted and then updated instead."""
    t = turn(
        SAA,
        ALERT,
        [(0, call("a")), (1.5, ok("a")), (2, text("Hi")), (9, call("b")), (10, ok("b")), (11, COMPLETED)],
    )
    kinds = t.kinds()
    assert kinds[0] is START
    assert kinds[-1] is STOP
    assert set(kinds[1:-1]) == {UPDATE}
    assert [w.first for w in t.writes].count(True) == 1


@pytest.mark.parametrize(
    ("events", "line"),
    [
        ([call("a", q="pods")], 'Calling search(q="pods")'),
        ([call("a", q="pods"), ok("a")], 'Ran search(q="pods")'),
        ([call("a", q="pods"), bad("a")], 'search(q="pods") failed'),
        ([call("a", q="pods"), ok("a"), call("b", "fetch", url="u")], 'Calling fetch(url="u")'),  # the latest
    ],
)
def test_s06_the_first_post_has_a_line_that_names_the_latest_tool_call(events, line):
    """Its first post has a line of small print that names the latest tool call: Calling name(arguments)
    while it is under way, Ran name(arguments) once its result has arrived, and name(arguments) failed
    if the result reports a failure."""
    first = turn(STEPS, ALERT, [(0, events[0])])
    assert [(w.kind, w.view.line, w.view.cards) for w in first.writes] == [
        (START, 'Calling search(q="pods")', ())
    ]
    # The line's later states, where every write shows the line (a platform without cards):
    lined = turn(STEPS, ALERT, [(i * 0.1, e) for i, e in enumerate(events)], cards=False)
    assert lined.last.line == line


def test_s07_every_update_after_the_first_post_shows_the_cards_above_the_text_and_the_final_keeps_them():
    """Every update after it shows a step card for each tool call above the text, in place of the line,
    as a chat thread does, and the final message keeps them."""
    script = [(0, call("a", q="x")), (2, ok("a")), (3, text("Found it.")), (4, COMPLETED)]
    alert = turn(STEPS, ALERT, script)
    chat = turn(STEPS, CHAT, script)
    first, *updates = alert.writes
    assert first.view.line == 'Calling search(q="x")'
    assert first.view.cards == ()
    assert [w.timed for w in updates] == [True, False, False, False]  # the first shows the cards (s26)
    assert [(w.view.line, statuses(w.view)) for w in updates] == [
        (None, [IN_PROGRESS]),
        (None, [COMPLETE]),
        (None, [COMPLETE]),
        (None, [COMPLETE]),
    ]
    assert [w.view for w in updates[1:]] == [w.view for w in chat.writes[1:]]  # as a chat thread does
    assert alert.last == View(None, (Card("call-a", 'search(q="x")', COMPLETE),), "Found it.", "Found it.")


@pytest.mark.parametrize(
    ("calls", "thread", "shown", "line"),
    [
        (20, ALERT, 20, None),
        (21, ALERT, 20, "1 earlier step not shown"),
        (25, ALERT, 20, "5 earlier steps not shown"),
        (25, CHAT, 25, None),  # the limit is the alert thread's
    ],
)
def test_s08_an_alert_thread_shows_the_latest_20_cards_and_says_how_many_are_not_shown(
    calls, thread, shown, line
):
    """It shows the latest 20 cards; when there are more, a line above them says how many earlier steps
    are not shown."""
    script: list[tuple[float, Any]] = []
    for i in range(calls):
        script += [(i, call(f"c{i}", f"t{i}")), (i + 0.5, ok(f"c{i}"))]
    t = turn(STEPS, thread, [*script, (calls, COMPLETED)])
    assert len(t.last.cards) == shown
    assert t.last.cards[-1].id == f"call-c{calls - 1}"
    assert t.last.line == line


@pytest.mark.parametrize("thread", list(ThreadKind))
def test_s09_without_step_cards_every_write_shows_the_line_and_text_replaces_a_returned_calls_line(thread):
    """On a platform without step cards every write shows the line instead, and a call that has its
    result is shown only while the message has no text yet: the text replaces the line."""
    t = turn(
        STEPS,
        thread,
        [(0, call("a", "one")), (1, ok("a")), (2, text("Partial")), (3, call("b", "two")), (4, ok("b"))],
        cards=False,
    )
    assert all(w.view.cards == () for w in t.writes)
    assert [(w.view.line, w.view.text) for w in t.writes] == [
        ("Calling one()", ""),
        ("Ran one()", ""),
        (None, "Partial"),  # the text replaces the line of the call that returned
        ("Calling two()", "Partial"),  # a call under way is shown with the text
        (None, "Partial"),
    ]


# ---------------------------------------------------------------------------------------------------
# chat.progress: the three values


def test_s10_chat_progress_is_one_of_three_values_the_same_as_the_bindings():
    """chat.progress adds a sign of life for the seconds when the agent says nothing ... It is one of
    three values."""
    from bindings import manifest

    assert [m.value for m in ProgressMode] == ["steps", "steps-and-activity", "activity"]
    assert manifest.ProgressMode is ProgressMode  # one enum: the manifest validates with progress's own


def test_s11_steps_in_a_chat_thread_is_a_card_for_each_tool_call_and_nothing_else():
    """steps | Chat thread: A card for each tool call."""
    t = turn(STEPS, CHAT, [(0, call("a")), (1, ok("a")), (60, text("x")), (120, call("b")), (121, ok("b"))])
    assert [c.id for c in t.last.cards] == ["call-a", "call-b"]
    assert t.timed == []
    assert t.progress.deadline is None


def test_s12_steps_in_an_alert_thread_is_the_line_first_then_a_card_for_each_call_in_every_update():
    """steps | Alert thread: The line for the latest tool call in the first post, and a card for each
    tool call in every update after it."""
    t = turn(STEPS, ALERT, [(0, call("a")), (0.2, call("b")), (5, ok("a")), (6, ok("b")), (7, COMPLETED)])
    assert (t.writes[0].view.line, t.writes[0].view.cards) == ("Calling search()", ())
    assert t.writes[1:]
    for w in t.writes[1:]:
        assert [c.id for c in w.view.cards] == ["call-a", "call-b"]
        assert w.view.line is None


@pytest.mark.parametrize(
    ("script", "begins_at"),
    [
        ([], 3.0),  # silent from the start
        ([(1, text("Hm"))], 4.0),  # 3 s after the last text
        ([(1, text("a")), (2.5, text("b")), (5, text("c"))], 8.0),  # text keeps it away
        ([(0, call("a")), (10, ok("a"))], 13.0),  # not while a call is under way
        ([(0, call("a")), (0.1, call("b")), (1, ok("a")), (9, ok("b"))], 12.0),  # nor while any is
    ],
)
def test_s13_after_3_seconds_with_no_new_text_and_no_call_under_way_a_working_card_begins(script, begins_at):
    """steps-and-activity: when 3 seconds pass with no new text and no tool call under way, a card
    titled Working… begins."""
    t = turn(SAA, CHAT, [*script, (30, TICK)])
    working = [
        (at, w) for at, w in zip(t.times, t.writes, strict=True) if any(c.title == WORKING for c in w.changed)
    ]
    assert len(working) == 1
    assert working[0][0] == begins_at
    assert working[0][1].timed
    # It began exactly at the deadline, not a moment earlier:
    early = Turn(SAA, CHAT, auto_tick=False).play(script)
    early.clock.now = begins_at - 0.001
    assert not any(WORKING in [c.title for c in w.view.cards] for w in early.progress.tick())
    early.clock.now = begins_at
    (begin,) = early.progress.tick()
    assert begin.changed[-1].title == WORKING
    assert begin.changed[-1].status is IN_PROGRESS


def test_s14_the_next_tool_call_takes_the_working_card_over():
    """The next tool call takes that card over, so it carries the tool's name and arguments from then on."""
    t = turn(SAA, CHAT, [(5, call("a", q="x")), (6, bad("a"))])
    begin, takeover, result = t.writes
    assert begin.view.cards == (Card("working-1", WORKING, IN_PROGRESS),)
    assert takeover.view.cards == (Card("working-1", 'search(q="x")', IN_PROGRESS),)
    assert result.view.cards == (Card("working-1", 'search(q="x")', ERROR),)


def test_s15_text_retitles_the_working_card_and_a_tool_call_after_that_text_retitles_it_again():
    """text instead retitles it Wrote the answer, and a tool call after that text retitles it Wrote an
    update."""
    t = turn(SAA, CHAT, [(5, text("Let me look.")), (6, call("a"))])
    begin, wrote, then_call = t.writes
    assert begin.view.cards == (Card("working-1", WORKING, IN_PROGRESS),)
    assert wrote.view.cards == (Card("working-1", WROTE_THE_ANSWER, COMPLETE),)
    assert then_call.view.cards == (
        Card("working-1", WROTE_AN_UPDATE, COMPLETE),
        Card("call-a", "search()", IN_PROGRESS),
    )
    assert then_call.changed == then_call.view.cards  # the retitle rides on the call's write


def test_s16_in_an_alert_thread_working_is_a_line_in_the_first_post_and_a_card_after_it():
    """steps-and-activity | Alert thread: Working… once 3 seconds pass with nothing new: a line of small
    print ... when it is the first post, and otherwise a card, which the next tool call takes over and
    text retitles, as in a chat thread."""
    first = turn(SAA, ALERT, [(3, TICK)])
    assert [(w.kind, w.view.line, w.view.cards) for w in first.writes] == [(START, WORKING, ())]

    later = turn(SAA, ALERT, [(0, text("Looking.")), (5, call("a")), (6, ok("a")), (12, text(" More."))])
    cards = [w.view.cards for w in later.writes]
    assert cards[1] == (Card("working-1", WORKING, IN_PROGRESS),)
    assert cards[2] == (Card("working-1", "search()", IN_PROGRESS),)  # taken over
    assert [c.title for c in cards[-1]] == ["search()", WROTE_THE_ANSWER]  # working-2, retitled by text

    # In line mode (a platform without cards), Working… replaces the line of a call that returned:
    lined = turn(SAA, ALERT, [(0, call("a")), (1, ok("a")), (4, TICK)], cards=False)
    assert [w.view.line for w in lined.writes] == ["Calling search()", "Ran search()", WORKING]


@pytest.mark.parametrize(
    ("script", "begun_at"),
    [
        ([(1, call("a"))], 1),  # at the first tool call
        ([(1.5, ToolResult("z", True, name="deploy"))], 1.5),  # or result
        ([], 3.0),  # or after 3 seconds
    ],
)
def test_s17_activity_is_one_card_begun_at_the_first_call_or_result_or_after_3_seconds(script, begun_at):
    """activity | Chat thread: One card for the whole wait, begun at the first tool call or result, or
    after 3 seconds, and only before any text."""
    t = turn(ACTIVITY, CHAT, [*script, (10, call("b")), (11, ok("b")), (20, call("c")), (25, text("x"))])
    assert t.writes[0].kind is START
    assert t.times[0] == begun_at
    assert t.writes[0].view.cards[0].id == "activity"
    assert all([c.id for c in w.view.cards] == ["activity"] for w in t.writes)


def test_s17_activity_begins_only_before_any_text():
    """... and only before any text."""
    t = turn(
        ACTIVITY, CHAT, [(0.5, text("Sure.")), (1, call("a")), (2, ok("a")), (10, TICK), (11, COMPLETED)]
    )
    assert all(w.view.cards == () for w in t.writes)
    assert t.last.text == "Sure."


@pytest.mark.parametrize(
    ("results", "title"),
    [
        ([], WORKING),
        ([True], "Working… 1 step"),
        ([True, True], "Working… 2 steps"),
        ([False], "Working… 1 step, 1 failed"),
        ([True] * 9 + [False] * 3, "Working… 12 steps, 3 failed"),
    ],
)
def test_s18_the_activity_title_counts_the_calls_that_have_a_result(results, title):
    """Its title counts the tool calls that have a result, such as Working… 12 steps, 3 failed."""
    script: list[tuple[float, Any]] = [(0, call("open"))]  # a call without a result does not count
    for i, good in enumerate(results):
        script += [(1 + 2 * i, call(f"c{i}")), (2 + 2 * i, ToolResult(f"c{i}", good))]
    t = turn(ACTIVITY, CHAT, script)
    assert titles(t.last) == [title]
    assert t.progress.view().cards[0].title == title


def test_s19_at_the_first_text_the_activity_card_becomes_worked_with_how_long_and_how_many():
    """At the first text it becomes Worked, with Took 3 min 26 s, 16 steps (7 failed)."""
    script: list[tuple[float, Any]] = []
    for i in range(16):
        script += [(10 * i, call(f"c{i}")), (10 * i + 5, ToolResult(f"c{i}", i >= 7))]
    t = turn(ACTIVITY, CHAT, [*script, (206, text("Done.")), (207, call("late")), (208, bad("late"))])
    worked = next(w for w in t.writes if w.view.text == "Done.")
    assert worked.view.cards == (Card("activity", WORKED, COMPLETE, "Took 3 min 26 s, 16 steps (7 failed)"),)
    assert t.last.cards == worked.view.cards  # calls after the text change nothing


def test_s20_activity_in_an_alert_thread_is_one_line_until_the_first_text():
    """activity | Alert thread: One line, Working… (2 min, 12 steps, 3 failed), until the first text."""
    script: list[tuple[float, Any]] = []
    for i in range(12):
        script += [(10 * i, call(f"c{i}")), (10 * i + 1, ToolResult(f"c{i}", i >= 3))]
    t = turn(ACTIVITY, ALERT, [*script, (125, call("x")), (130, ok("x")), (140, text("Done."))])
    assert all(w.view.cards == () for w in t.writes)
    assert t.writes[0].view.line == WORKING
    assert t.writes[-2].view.line == "Working… (2 min, 13 steps, 3 failed)"
    assert (t.last.line, t.last.text) == (None, "Done.")


# ---------------------------------------------------------------------------------------------------
# What no mode shows; the delay; what follows the clock; the budgets


@pytest.mark.parametrize("thread", list(ThreadKind))
@pytest.mark.parametrize("cards", [True, False])
def test_s21_the_activity_mode_never_shows_a_tools_name_or_arguments(thread, cards):
    """The activity mode never shows a tool's name or arguments in the reply's cards and lines."""
    approval = ApprovalRequest(
        (ToolToApprove("ap1", "c2", "delete_cluster", {"name": "prod-zeta"}),),
        "t",
        None,
        AnswerFormat.HITL_V1,
    )
    t = turn(
        ACTIVITY,
        thread,
        [
            (0, ToolCall("c1", "search_pods", {"namespace": "kube-omega"})),
            (1, bad("c1")),
            (2, ToolCall("c2", "delete_cluster", {"name": "prod-zeta"})),
            (3, ToolResult("c3", True, name="restart_node")),  # a call from the turn before
            (4, approval),
            (5, WAITING),
        ],
        cards=cards,
    )
    shown = everything_shown(t.writes)
    for secret in ("search_pods", "kube-omega", "delete_cluster", "prod-zeta", "restart_node"):
        assert secret not in shown


@pytest.mark.parametrize("mode", list(ProgressMode))
def test_s22_no_mode_shows_the_agents_reasoning_and_working_says_nothing_about_what_it_does(mode):
    """No mode shows the agent's reasoning: Agent Kourier does not read it, and the Working… title says
    nothing about what the agent is doing."""
    t = turn(
        mode, CHAT, [(0, call("a")), (1, ok("a")), (9, TICK), (10, text("Thinking done.")), (11, COMPLETED)]
    )
    for w in t.writes:
        for card in w.view.cards:
            assert "Thinking" not in card.title
            if card.id.startswith("working"):
                assert card.title in (WORKING, WROTE_THE_ANSWER, WROTE_AN_UPDATE, FINISHED, "search()")
            if card.id == "activity":
                assert card.title.startswith((WORKING, WORKED))


@pytest.mark.parametrize("throttle", [0.2, 1.0, 5.0])
def test_s23_the_3_second_delay_is_not_configurable(throttle):
    """The 3 second delay is not configurable."""
    params = set(inspect.signature(Progress).parameters)
    assert params == {"mode", "thread", "cards_supported", "throttle", "clock"}
    assert Turn(SAA, CHAT, throttle=throttle).progress.deadline == 3.0
    assert Turn(ACTIVITY, ALERT, throttle=throttle).progress.deadline == 3.0


@pytest.mark.parametrize(
    ("mode", "thread", "script", "timed_titles"),
    [
        (SAA, CHAT, [], [WORKING]),
        (SAA, CHAT, [(0, text("a"))], [WORKING]),
        (SAA, ALERT, [(0, text("a"))], [WORKING]),
        (SAA, ALERT, [], [WORKING]),  # the first post's line
        (ACTIVITY, CHAT, [], [WORKING]),
        (ACTIVITY, ALERT, [], [WORKING]),
        (STEPS, CHAT, [(0, text("a"))], []),
        (STEPS, ALERT, [(0, call("a"))], ["search()"]),  # the update that shows the cards after the post
        (SAA, ALERT, [(0, call("a"))], ["search()"]),  # the same; a running call is no gap
    ],
)
def test_s24_working_is_written_once_for_a_gap_and_no_other_write_follows_the_clock(
    mode, thread, script, timed_titles
):
    """The Working… card or line is written once for a gap, and no other write follows the clock, save
    the update that shows an alert thread's cards after its first post."""
    t = turn(mode, thread, script)
    for second in range(1, 601):  # ten silent minutes, a tick every second
        t.play([(second, TICK)])
    assert [w.view.line if not w.view.cards else w.view.cards[-1].title for w in t.timed] == timed_titles
    assert len(t.writes) == len(script) + len(timed_titles)


# Scripts with gaps longer than the delay (the second element counts them) for the budget.
BUDGET_SCRIPTS = [
    ("silent, then text", 1, [(10, text("Answer.")), (11, COMPLETED)]),
    ("silent to the end", 1, [(10, COMPLETED)]),
    ("silent, then a call", 1, [(10, call("a")), (11, ok("a")), (11.5, text("Answer.")), (12, COMPLETED)]),
    ("text, gap, text", 1, [(0, text("A")), (10, text("B")), (11, COMPLETED)]),
    (
        "text, gap, text, call",
        1,
        [(0, text("A")), (10, text("B")), (11, call("a")), (11.5, ok("a")), (12, COMPLETED)],
    ),
    ("call, gap, call", 1, [(0, call("a")), (1, ok("a")), (10, call("b")), (10.5, ok("b")), (11, COMPLETED)]),
    ("call, gap, end", 1, [(0, call("a")), (1, ok("a")), (10, COMPLETED)]),
    ("call, gap, fail", 1, [(0, call("a")), (1, ok("a")), (10, FAILED)]),
    ("gap, ask", 1, [(0, text("Q?")), (10, WAITING)]),
    (
        "three gaps",
        3,
        [
            (0, call("a")),
            (1, ok("a")),
            (9, text("x")),
            (20, call("b")),
            (21, bad("b")),
            (30, text("y")),
            (31, COMPLETED),
        ],
    ),
    ("no gap", 0, [(0, call("a")), (1, ok("a")), (2, text("x")), (3, COMPLETED)]),
]


def message_updates(writes: list[Write]) -> int:
    """chat.update calls of an alert thread's reply: every write but the post."""
    return sum(1 for w in writes if not w.first)


@pytest.mark.parametrize(("name", "gaps", "script"), BUDGET_SCRIPTS, ids=[s[0] for s in BUDGET_SCRIPTS])
def test_s25_a_gap_costs_at_most_three_writes_in_a_chat_thread_and_one_update_in_an_alert_thread(
    name, gaps, script
):
    """A gap longer than the delay costs at most three writes more than steps spends in a chat thread
    (the card's begin; its end, when no tool call takes it over; and its retitle, when text ended it and
    a tool call follows that text), and one more message update in an alert thread."""
    steps, active = turn(STEPS, CHAT, script).writes, turn(SAA, CHAT, script).writes
    assert len(active) - len(steps) <= 3 * gaps
    steps, active = turn(STEPS, ALERT, script).writes, turn(SAA, ALERT, script).writes
    assert message_updates(active) - message_updates(steps) <= gaps
    assert sum(w.first for w in active) == 1  # one message (s28: a silent turn now posts Working…)


def test_s25_this_implementation_spends_one_write_per_gap_in_a_chat_thread():
    """The begin is the only write a gap adds: its end and its retitle ride on writes steps makes anyway."""
    for _, gaps, script in BUDGET_SCRIPTS:
        steps, active = turn(STEPS, CHAT, script).writes, turn(SAA, CHAT, script).writes
        assert len(active) - len(steps) == gaps


@pytest.mark.parametrize("throttle", [1.0, 2.5])
def test_s26_an_alert_reply_with_cards_at_its_first_post_makes_one_more_update_once_the_throttle_allows(
    throttle,
):
    """An alert thread's reply that has cards when its first post is made makes one more update to show
    them, once the throttle allows: the post cannot carry them."""
    t = Turn(STEPS, ALERT, throttle=throttle, auto_tick=False).play([(10, call("a", q="x"))])
    assert t.progress.deadline == 10 + throttle
    t.clock.now = 10 + throttle - 0.01
    assert t.progress.tick() == []
    t.clock.now = 10 + throttle
    (update,) = t.progress.tick()
    assert (update.kind, update.timed, update.view.line) == (UPDATE, True, None)
    assert update.view.cards == (Card("call-a", 'search(q="x")', IN_PROGRESS),)
    assert t.progress.tick() == []
    assert t.progress.deadline is None

    # An event's update shows them first: then the clock adds nothing.
    t = turn(STEPS, ALERT, [(10, call("a")), (10.2, ok("a")), (60, TICK)], throttle=throttle)
    assert t.kinds() == [START, UPDATE]
    assert t.timed == []


def test_s27_the_activity_card_is_written_when_a_result_changes_a_count_at_most_once_in_a_throttle_window():
    """The activity card is written when a result changes a count, at most once in a throttle window."""
    script: list[tuple[float, Any]] = [(0, call("a"))]
    script += [(0.1 * i, ok("a") if i == 1 else call(f"x{i}")) for i in range(1, 9)]  # calls: no write
    script += [(0.95, bad("x2")), (1.0, ok("x3")), (1.5, ok("x4")), (2.5, ok("x5")), (2.6, TICK), (4.0, TICK)]
    t = turn(ACTIVITY, CHAT, script, throttle=1.0)
    assert [(at, w.view.cards[0].title) for at, w in zip(t.times, t.writes, strict=True)] == [
        (0, WORKING),
        (1.0, "Working… 3 steps, 1 failed"),  # 0.1 and 0.95 fell in the window of the begin at 0
        (2.5, "Working… 5 steps, 1 failed"),  # 1.5 fell in the window of 1.0; the clock never flushes
    ]


def test_s27_the_activity_lines_elapsed_minutes_are_refreshed_only_when_an_event_makes_a_write():
    """... and its line's elapsed minutes are refreshed only when an event makes a write."""
    t = turn(ACTIVITY, ALERT, [(0, call("a"))])
    for second in range(1, 300):
        t.play([(second, TICK)])
    assert [w.view.line for w in t.writes] == [WORKING]
    t.play([(301, call("b"))])  # a call changes no count: no write
    t.play([(302, ok("a"))])
    assert [w.view.line for w in t.writes] == [WORKING, "Working… (5 min, 1 step)"]


# ---------------------------------------------------------------------------------------------------
# Turns with nothing to show


def test_s28_in_an_alert_thread_a_turn_silent_for_3_seconds_posts_working_as_its_message():
    """In an alert thread, a turn that is silent for 3 seconds now posts Working… as its message."""
    t = turn(SAA, ALERT, [(2.9, TICK)])
    assert t.writes == []
    t.play([(3, TICK)])
    assert t.writes == [Write(START, View(WORKING, (), "", WORKING), (), False, True, True)]


@pytest.mark.parametrize(
    ("mode", "script", "final"),
    [
        # that message is left saying (no output) ...
        (SAA, [(10, COMPLETED)], View(None, (), NO_OUTPUT, NO_OUTPUT)),
        (SAA, [(10, FAILED)], View(None, (), NO_OUTPUT, NO_OUTPUT)),
        (ACTIVITY, [(10, COMPLETED)], View(None, (), NO_OUTPUT, NO_OUTPUT)),
        # ... or, once an update has shown its Working… card, the card ended as a chat thread's is
        (
            SAA,
            [(0.5, text("Let me see")), (8, TextDelta("", replace=True)), (10, COMPLETED)],
            View(None, (Card("working-1", FINISHED, COMPLETE),), "", FINISHED),
        ),
        (
            SAA,
            [(0.5, text("Let me see")), (8, TextDelta("", replace=True)), (10, FAILED)],
            View(None, (Card("working-1", STOPPED, ERROR),), "", STOPPED),
        ),
        # under steps such a turn posted nothing
        (STEPS, [(10, COMPLETED)], None),
        (STEPS, [(10, FAILED)], None),
    ],
)
def test_s29_an_alert_turn_that_ends_with_nothing_to_show_is_left_saying_no_output(mode, script, final):
    """If the turn then ends with nothing to show, or fails, that message is left saying (no output), or,
    once an update has shown its Working… card, the card ended as a chat thread's is; under steps such
    a turn posted nothing."""
    t = turn(mode, ALERT, script)
    if final is None:
        assert t.writes == []
        return
    assert t.writes[-1].kind is STOP
    assert t.last == final  # with cards: the text was withdrawn after an update showed the Working… card


@pytest.mark.parametrize("thread", list(ThreadKind))
@pytest.mark.parametrize("outcome", list(Ending))
def test_s30_a_turn_whose_updates_show_cards_and_that_ends_with_no_text_ends_with_the_cards(thread, outcome):
    """A turn whose updates show cards and that ends with no text ends with the cards and nothing under
    them, its fallback text the last card's title."""
    t = turn(
        STEPS,
        thread,
        [(0, call("a", "one")), (1, ok("a")), (2, call("b", "two")), (3, bad("b")), (5, outcome)],
    )
    assert t.last == View(
        None, (Card("call-a", "one()", COMPLETE), Card("call-b", "two()", ERROR)), "", "two()"
    )


@pytest.mark.parametrize(
    ("mode", "script"),
    [
        (SAA, [(3, TICK)]),  # started for the Working… card
        (STEPS, [(0, call("a"))]),  # started for a call's card
    ],
)
def test_s31_a_chat_stream_started_for_a_card_whose_cards_are_refused_is_stopped_with_no_output(mode, script):
    """A chat thread whose stream was started for a card, and whose platform then refuses cards, is
    stopped with the same (no output) when the turn ends empty, and is not left open."""
    t = turn(mode, CHAT, [*script, (3.1, REFUSE), (5, COMPLETED)])
    assert t.kinds() == [START, START, STOP]  # the start is made again without cards
    assert t.writes[1].view.cards == ()
    assert t.writes[1].first
    assert t.last.cards == ()
    assert t.last.text == NO_OUTPUT


# ---------------------------------------------------------------------------------------------------
# How a Working… card ends


@pytest.mark.parametrize("outcome", list(Ending))
@pytest.mark.parametrize("thread", list(ThreadKind))
def test_s32_a_working_card_no_call_took_over_ends_under_a_title_that_says_how_never_a_tick(outcome, thread):
    """A Working… card that no tool call took over ends under a title that says how, never as a tick on
    Working…."""
    t = turn(SAA, thread, [(0, text("A")), (5, outcome)])
    assert t.last.cards[0].title in (FINISHED, WAITING_FOR_YOUR_ANSWER, STOPPED)
    assert not any(c.title == WORKING and c.status is COMPLETE for w in t.writes for c in w.view.cards)


def test_s33_text_while_it_was_open_is_wrote_the_answer_until_a_tool_call_follows_that_text():
    """If text came while it was open it is Wrote the answer, until a tool call follows that text: the
    text was then not the answer, and the card is retitled Wrote an update."""
    answer = turn(SAA, CHAT, [(5, text("The answer.")), (6, COMPLETED)])
    assert answer.last.cards == (Card("working-1", WROTE_THE_ANSWER, COMPLETE),)
    update = turn(
        SAA, CHAT, [(5, text("Checking.")), (6, call("a")), (7, ok("a")), (8, text(" Done")), (9, COMPLETED)]
    )
    assert titles(update.last) == [WROTE_AN_UPDATE, "search()"]


@pytest.mark.parametrize(
    ("outcome", "title", "status"),
    [(COMPLETED, FINISHED, COMPLETE), (WAITING, WAITING_FOR_YOUR_ANSWER, COMPLETE), (FAILED, STOPPED, ERROR)],
)
def test_s34_if_the_turn_ends_first_it_is_finished_waiting_for_your_answer_or_stopped(outcome, title, status):
    """If the turn ends first, it is Finished for a completed task, Waiting for your answer when the
    agent asks a question, and Stopped, shown as an error, when the task failed, was cancelled or was
    rejected, or when the request failed before the task ended."""
    t = turn(SAA, CHAT, [(0, call("a")), (1, ok("a")), (5, outcome)])
    assert t.last.cards[-1] == Card("working-1", title, status)


@pytest.mark.parametrize(
    ("state", "outcome"),
    [
        (TaskState.COMPLETED, COMPLETED),
        (TaskState.INPUT_REQUIRED, WAITING),
        (TaskState.AUTH_REQUIRED, WAITING),
        (TaskState.FAILED, FAILED),
        (TaskState.CANCELED, FAILED),
        (TaskState.REJECTED, FAILED),
        ("unknown", FAILED),
    ],
)
def test_s34_the_outcome_of_each_task_state(state, outcome):
    """... the task failed, was cancelled or was rejected ... (a task's end state names the outcome)."""
    assert Ending.for_state(state) is outcome


def test_s35_on_a_failure_the_replys_stream_is_stopped_and_the_notice_is_not_part_of_it():
    """The failure notice is then a message of its own, and the reply's stream is stopped, not left
    running."""
    t = turn(SAA, CHAT, [(0, text("Partial")), (1, call("a")), (5, FAILED)])
    stop = t.writes[-1]
    assert stop.kind is STOP
    assert stop.view.text == "Partial"
    assert [(c.id, c.status) for c in stop.view.cards] == [("call-a", COMPLETE)]  # none left in progress
    assert t.progress.feed(text(" more")) == []
    assert t.progress.finish(FAILED) == []


def test_s36_a_lost_connection_is_not_a_failure_the_reply_is_taken_over_and_updated():
    """A lost connection to the agent ... is not such a failure: the task is followed again, and the
    reply it had is taken over and updated, to (no output) if the task has nothing to show."""
    t = turn(SAA, ALERT, [(3, TICK)])  # posted Working…; then the stream drops and is followed again
    t.play([(40, TaskStarted("t1", "c1")), (41, COMPLETED)])  # the followed task had nothing more
    assert t.kinds() == [START, STOP]
    assert not t.writes[-1].first
    assert t.last.text == NO_OUTPUT


def test_s37_while_a_request_of_unknown_fate_is_looked_up_the_reply_stays_as_it_is():
    """Nor is a request that may have reached the agent but got no answer ...: the reply stays as it is
    while the request is looked up and followed, or sent again, and that attempt takes the reply over."""
    t = turn(STEPS, ALERT, [(0, text("Working on it")), (1, call("a")), (2, ok("a"))])
    before = len(t.writes)
    for second in range(3, 120):
        t.play([(second, TICK)])
    assert len(t.writes) == before
    t.play([(120, call("b"))])  # the attempt that followed takes the same reply over
    assert t.writes[-1].kind is UPDATE


def test_s38_a_reply_whose_task_cannot_be_followed_ends_as_a_failed_requests_and_keeps_its_text():
    """If following the task again is refused, or finds it gone or wedged, or the request is given up on
    before the agent is known to have it, the reply is ended as a failed request's is, and keeps the
    text it had."""
    t = turn(SAA, CHAT, [(0, text("Half an answer")), (9, FAILED)])
    assert t.last == View(None, (Card("working-1", STOPPED, ERROR),), "Half an answer", "Half an answer")


def test_s39_a_reply_that_still_streams_is_stopped_keeping_its_text_and_ending_the_card_under_way():
    """For those failures it stops a reply that still streams, which keeps its text and shows the card
    that was under way as ended."""
    t = turn(STEPS, CHAT, [(0, text("So far")), (1, call("a")), (9, FAILED)])
    assert t.writes[-1].kind is STOP
    assert t.last == View(None, (Card("call-a", "search()", COMPLETE, NO_RESULT),), "So far", "So far")


@pytest.mark.parametrize(
    ("script", "title", "status"),
    [
        ([(5, text("Done."))], WORKED, COMPLETE),
        ([(5, COMPLETED)], WORKED, COMPLETE),
        ([(5, WAITING)], WAITING_FOR_YOUR_ANSWER, COMPLETE),
        ([(5, FAILED)], STOPPED, ERROR),
    ],
)
def test_s40_the_activity_card_ends_the_same_way(script, title, status):
    """The activity card ends the same way, as Worked for text or a completed task, with the same
    Waiting for your answer and Stopped."""
    t = turn(ACTIVITY, CHAT, [(0, call("a")), (2, ok("a")), *script])
    assert t.last.cards == (Card("activity", title, status, "Took 5 s, 1 step"),)


@pytest.mark.parametrize(
    ("mode", "thread", "script"),
    [
        (SAA, CHAT, [(2.9, COMPLETED)]),  # the Working… card was not due yet
        (ACTIVITY, CHAT, [(2.9, COMPLETED)]),
        (SAA, ALERT, [(3, TICK), (9, COMPLETED)]),  # posted as a line, never sent as a card
    ],
)
def test_s41_a_card_that_was_never_sent_when_a_turn_ends_with_no_text_is_not_sent_at_all(
    mode, thread, script
):
    """A card that was never sent when a turn ends with no text is not sent at all."""
    t = turn(mode, thread, script)
    assert all(w.view.cards == () for w in t.writes)
    assert t.last.text == NO_OUTPUT


# ---------------------------------------------------------------------------------------------------
# Calls at the end of a turn; approvals


@pytest.mark.parametrize("outcome", list(Ending))
def test_s42_a_calls_card_with_no_result_when_the_turn_ends_is_complete_with_no_result_was_reported(outcome):
    """A tool call's card that has no result when the turn ends is complete, with No result was
    reported. under it."""
    t = turn(STEPS, CHAT, [(0, call("a")), (0.5, call("b")), (1, ok("b")), (2, outcome)])
    assert t.last.cards == (
        Card("call-a", "search()", COMPLETE, NO_RESULT),
        Card("call-b", "search()", COMPLETE),
    )
    assert t.writes[-1].changed == (Card("call-a", "search()", COMPLETE, NO_RESULT),)  # its closing chunk


@pytest.mark.parametrize("thread", list(ThreadKind))
def test_s43_an_approval_pause_ends_the_cards_of_its_calls_as_approval_requested(thread):
    """When the agent pauses for a tool approval, the card of each call the approval is about ends as
    Approval requested: name, complete, whatever the call reported before the pause."""
    approval = ApprovalRequest(
        (
            ToolToApprove("ap1", "a", "delete_pod", {"name": "web-1"}),
            ToolToApprove("ap2", "b", "scale", {"replicas": 0}),
        ),
        "task-1",
        "ctx-1",
        AnswerFormat.HITL_V1,
    )
    t = turn(
        STEPS,
        thread,
        [
            (0, call("s", "search")),
            (0.5, ok("s")),
            (1, ToolCall("a", "delete_pod", {"name": "web-1"})),
            (1.1, bad("a")),  # kagent reports such a call with an error that asks for the confirmation
            (1.2, ToolCall("b", "scale", {"replicas": 0})),
            (1.3, approval),
            (1.4, TaskEnded(TaskState.INPUT_REQUIRED)),
            (1.5, WAITING),
        ],
    )
    assert t.last.cards == (
        Card("call-s", "search()", COMPLETE),
        Card("call-a", "Approval requested: delete_pod", COMPLETE),
        Card("call-b", "Approval requested: scale", COMPLETE),
    )


def test_s44_the_reply_after_the_decision_shows_the_call_again_with_how_it_ended():
    """The prompt is a message of its own, and the reply after the decision shows the call again with
    how it ended."""
    t = turn(
        STEPS,
        CHAT,
        [
            (0, ToolResult("a", True, name="delete_pod")),
            (0.1, ToolResult("b", False, name="scale")),
            (1, text("Done")),
        ],
    )
    assert t.last.cards == (Card("call-a", "delete_pod", COMPLETE), Card("call-b", "scale", ERROR))


def test_s45_a_binding_that_sets_no_progress_gets_steps_and_activity():
    """A Binding that sets no progress gets steps-and-activity, so a Binding written before the field
    existed now shows Working… in a gap."""
    from bindings.manifest import DEFAULT_PROGRESS

    assert Progress(None, CHAT).mode is SAA is DEFAULT_PROGRESS_MODE
    assert DEFAULT_PROGRESS_MODE.value == DEFAULT_PROGRESS.value
    assert turn(None, CHAT, [(3, TICK)]).last.cards == (Card("working-1", WORKING, IN_PROGRESS),)


@pytest.mark.parametrize(
    ("mode", "thread", "uses"),
    [
        (STEPS, ALERT, False),
        (SAA, ALERT, True),
        (ACTIVITY, ALERT, True),
        (STEPS, CHAT, False),
        (SAA, CHAT, False),
        (ACTIVITY, CHAT, False),
    ],
)
def test_s46_an_alert_thread_in_the_activity_modes_gets_slacks_assistant_status_a_chat_thread_never(
    mode, thread, uses
):
    """On Slack, an alert thread in steps-and-activity or activity also gets Slack's assistant status ...
    A chat thread never sets it. (The Slack side sets it; a STOP is the last write.)"""
    assert Progress(mode, thread).uses_assistant_status is uses


# ---------------------------------------------------------------------------------------------------
# Agents without tool events; platforms without cards


def test_s48_an_agent_that_marks_no_tool_events_gets_the_sign_of_life_alone():
    """An agent that marks none has no tool events: steps shows nothing until text, steps-and-activity
    shows a Working… card in each gap, and activity shows its card with no step count."""
    script = [(10, text("One.")), (20, text(" Two.")), (21, COMPLETED)]
    steps = turn(STEPS, CHAT, script)
    assert steps.writes[0].view == View(None, (), "One.", "One.")
    saa = turn(SAA, CHAT, script)
    assert [c.title for c in saa.last.cards] == [WROTE_THE_ANSWER, WROTE_THE_ANSWER]
    activity = turn(ACTIVITY, CHAT, script)
    assert activity.writes[0].view.cards == (Card("activity", WORKING, IN_PROGRESS),)
    assert activity.last.cards == (Card("activity", WORKED, COMPLETE, "Took 10 s"),)


@pytest.mark.parametrize("mode", list(ProgressMode))
@pytest.mark.parametrize("thread", list(ThreadKind))
def test_s49_when_the_platform_has_no_step_cards_no_mode_shows_a_card(mode, thread):
    """When the platform has no step cards, or Slack refuses them for a stream (the stream is then plain
    text), no mode shows a card."""
    script = [(0, call("a")), (1, ok("a")), (6, text("x")), (7, call("b")), (20, COMPLETED)]
    plain = turn(mode, thread, script, cards=False)
    assert plain.last.text == "x"
    assert [w.view.cards for w in plain.writes] == [()] * len(plain.writes)
    refused = turn(mode, thread, [(0, call("a")), (0.1, REFUSE), *script[1:]])
    assert refused.last.text == "x"
    assert [w.view.cards for w in refused.writes[1:]] == [()] * (len(refused.writes) - 1)
    assert not refused.progress.cards_shown


def test_s50_a_refused_alert_update_with_cards_is_sent_again_without_them_and_the_line_is_used_from_then_on():
    """If Slack refuses an alert thread's update with cards, the update is sent again without them, and
    the reply shows the line from then on."""
    t = turn(
        STEPS,
        ALERT,
        [(0, call("a", "one")), (0.5, ok("a")), (0.6, REFUSE), (2, call("b", "two")), (3, COMPLETED)],
    )
    refused, again = t.writes[1], t.writes[2]
    assert refused.view.cards
    assert (again.kind, again.view.cards) == (UPDATE, ())
    assert again.view.line == "Ran one()"
    assert [w.view.line for w in t.writes[3:]] == ["Calling two()", "Ran two()"]
    assert all(w.view.cards == () for w in t.writes[2:])


# ---------------------------------------------------------------------------------------------------
# The rules: redacted, shortened arguments; titles; ids; durations; the API's edges


def test_arguments_in_cards_and_lines_are_redacted_and_shortened():
    args = {"password": "hunter2", "url": "https://u:pw@h", "q": "k" * 1000}
    chat = turn(STEPS, CHAT, [(0, ToolCall("a", "login", args))])
    alert = turn(STEPS, ALERT, [(0, ToolCall("a", "login", args))])
    shown = everything_shown([*chat.writes, *alert.writes])
    assert "hunter2" not in shown
    assert ":pw@" not in shown
    title = chat.last.cards[0].title
    assert title.startswith('login(password=[redacted], url="https://u:[redacted]@h", q="kkk')
    assert len(title) == CALL_DISPLAY_LIMIT
    assert title.endswith("…")
    assert alert.last.line == f"Calling {title}"


@pytest.mark.parametrize("mode", list(ProgressMode))
@pytest.mark.parametrize("thread", list(ThreadKind))
def test_every_title_and_line_fits_a_slack_task_card(mode, thread):
    long_name = "n" * 500
    approval = ApprovalRequest(
        (ToolToApprove("ap", "b", long_name, {"x": "y" * 500}),), "t", None, AnswerFormat.TEXT
    )
    for cards in (True, False):
        script = [
            (0, ToolCall("a", long_name, {"x": "y" * 500})),
            (0.5, ToolCall("b", long_name)),
            (1, approval),
        ]
        t = turn(mode, thread, [*script, (2, WAITING)], cards=cards)
        assert t.writes
        for w in t.writes:
            assert len(w.view.line or "") <= TITLE_LIMIT
            assert all(len(c.title) <= TITLE_LIMIT for c in w.view.cards)


def test_card_ids_are_stable_per_call_and_per_working_card():
    t = turn(
        SAA,
        CHAT,
        [(0, call("a")), (1, ok("a")), (5, call("b")), (6, ok("b")), (10, text("x")), (11, COMPLETED)],
    )
    assert [c.id for c in t.last.cards] == ["call-a", "working-1", "working-2"]
    ids_over_time = [[c.id for c in w.view.cards] for w in t.writes]
    assert all(ids == ["call-a", "working-1", "working-2"][: len(ids)] for ids in ids_over_time)


@pytest.mark.parametrize(
    ("seconds", "took", "minutes"),
    [
        (0, "under 1 s", None),
        (0.9, "under 1 s", None),
        (1, "1 s", None),
        (59.9, "59 s", None),
        (60, "1 min", "1 min"),
        (61, "1 min 1 s", "1 min"),
        (206, "3 min 26 s", "3 min"),
        (3599, "59 min 59 s", "59 min"),
        (3600, "1 h", "1 h"),
        (3661, "1 h 1 min", "1 h 1 min"),
        (7325, "2 h 2 min", "2 h 2 min"),
        (-5, "under 1 s", None),
    ],
)
def test_durations(seconds, took, minutes):
    assert format_duration(seconds) == took
    assert format_minutes(seconds) == minutes


@pytest.mark.parametrize(
    ("seconds", "results", "line"),
    [
        (5, [], WORKING),
        (30, [True, False], "Working… (2 steps, 1 failed)"),
        (120, [True] * 9 + [False] * 3, "Working… (2 min, 12 steps, 3 failed)"),
        (125, [], "Working… (2 min)"),
        (3700, [True], "Working… (1 h 1 min, 1 step)"),
    ],
)
def test_the_activity_line(seconds, results, line):
    t = turn(ACTIVITY, ALERT, [(0, call("open"))], cards=False)
    t.play(
        [
            (seconds - 0.001 * (len(results) - i), ToolResult(f"r{i}", good, name="x"))
            for i, good in enumerate(results)
        ]
    )
    t.clock.now = seconds
    assert t.progress.view().line == line


def test_only_events_that_show_something_write():
    t = turn(
        STEPS,
        CHAT,
        [
            (0, TaskStarted("t", "c")),
            (0.1, Question((AskedQuestion("Which?"),), "t", "c", AnswerFormat.TEXT)),
            (0.2, TaskEnded(TaskState.INPUT_REQUIRED)),
            (0.3, text("")),
            (0.4, call("a")),
            (0.5, call("a")),  # the same call again (a followed stream replays it)
            (0.6, ok("a")),
            (0.7, ok("a")),
            (0.8, ToolResult("nameless", True)),
            (0.9, text("x")),
            (1.0, TextDelta("x", replace=True)),
        ],
    )
    assert [w.kind for w in t.writes] == [START, UPDATE, UPDATE]


def test_a_write_says_which_cards_and_whether_the_text_changed():
    t = turn(
        STEPS,
        CHAT,
        [
            (0, call("a")),
            (0.5, call("b")),
            (1, ok("a")),
            (2, text("Hi")),
            (3, TextDelta("Hello", replace=True)),
        ],
    )
    assert [([c.id for c in w.changed], w.text_changed) for w in t.writes] == [
        (["call-a"], False),
        (["call-b"], False),
        (["call-a"], False),
        ([], True),
        ([], True),
    ]


def test_the_deadline_is_when_tick_has_something_to_do():
    t = Turn(SAA, CHAT, auto_tick=False)
    assert t.progress.deadline == 3.0
    t.play([(1, call("a"))])
    assert t.progress.deadline is None  # a call under way: no gap
    t.play([(2, ok("a"))])
    assert t.progress.deadline == 5.0
    t.play([(5, TICK)])
    assert t.progress.deadline is None  # written once for the gap
    t.play([(6, COMPLETED)])
    assert t.progress.deadline is None
    assert t.progress.tick(100) == []


def test_whitespace_is_not_text():
    t = turn(STEPS, CHAT, [(0, text("  \n")), (1, COMPLETED)])
    assert t.last.text == NO_OUTPUT


class TestEndedCard:
    """A restarted process stops a stream it did not write: the card under way is ended as the
    turn's end would end it."""

    def test_a_tool_call_under_way_ends_complete_with_no_result_reported(self):
        card = Card("call-c1", 'search(q="x")', CardStatus.IN_PROGRESS)
        assert ended_card(card, Ending.FAILED) == Card(
            "call-c1", 'search(q="x")', CardStatus.COMPLETE, NO_RESULT
        )

    def test_a_working_card_ends_as_stopped_shown_as_an_error(self):
        card = Card("working-2", WORKING, CardStatus.IN_PROGRESS)
        assert ended_card(card, Ending.FAILED) == Card("working-2", STOPPED, CardStatus.ERROR)

    def test_the_activity_card_ends_as_worked_for_a_completed_task(self):
        card = Card("activity", "Working… 12 steps, 3 failed", CardStatus.IN_PROGRESS)
        assert ended_card(card, Ending.COMPLETED) == Card("activity", WORKED, CardStatus.COMPLETE)

    def test_a_card_that_already_ended_is_left_as_it_is(self):
        card = Card("call-c1", 'search(q="x")', CardStatus.ERROR, "boom")
        assert ended_card(card, Ending.FAILED) is card
