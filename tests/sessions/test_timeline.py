"""A session's timeline puts every turn, Slack write, question, notice, press and audit row of a thread
on one axis, shows where a slow answer's time went (a 429 and its retry in red), and draws message text
only for those who may read it."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from sessions import timeline

T0 = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
MESSAGE = "the database password is hunter2"


def a_turn(**fields):
    values = {
        "pk": 7, "created_at": T0, "started_at": T0 + timedelta(seconds=1), "ended_at": T0 + timedelta(seconds=31),
        "outcome": "completed", "state": "done", "text": MESSAGE, "slack_calls": [], "agent_events": [],
    }  # fmt: skip
    values.update(fields)
    return SimpleNamespace(**values)


def call(method, at_seconds, ms, outcome="ok", retries=0):
    return {"method": method, "outcome": outcome, "at": (T0 + timedelta(seconds=at_seconds)).timestamp(),
            "ms": ms, "retries": retries}  # fmt: skip


def test_the_marks_are_the_rows_of_the_thread_in_time_order_each_in_its_lane():
    turn = a_turn(
        slack_calls=[call("reactions.add", 1.2, 80), call("chat.startStream", 2, 25_000, retries=1)]
    )
    interaction = SimpleNamespace(pk=3, kind="question", state="answered", created_at=T0 + timedelta(seconds=5),
                                  answered_at=T0 + timedelta(seconds=9), closed_at=None)  # fmt: skip
    notice = SimpleNamespace(
        kind="notice", state="posted", created_at=T0 + timedelta(seconds=30), text="Sorry"
    )
    thumb = SimpleNamespace(is_positive=False, user_id="U0ADA", updated_at=T0 + timedelta(seconds=40))
    audit = SimpleNamespace(at=T0 + timedelta(seconds=9), action="question.answered")

    marks = timeline.marks_of([turn], [interaction], [notice], [thumb], [audit])

    assert [(m.lane, m.label) for m in marks] == [
        ("Turns", "turn 7 queued"),
        ("Turns", "turn 7 ran: completed"),
        ("Slack writes", "reactions.add: ok"),
        ("Slack writes", "chat.startStream: ok, 1 retries"),
        ("Questions", "question 3: answered"),
        ("Audit", "question.answered"),
        ("Notices", "notice: posted"),
        ("Presses", "thumbs down by U0ADA"),
    ]
    stream = marks[3]
    assert stream.trouble  # retried: where a slow answer's time went
    assert stream.seconds == 25.0
    assert not marks[2].trouble


def test_the_agents_events_are_marks_of_their_own_lane_a_failed_tool_in_red():
    def at(seconds):
        return (T0 + timedelta(seconds=seconds)).timestamp()

    turn = a_turn(agent_events=[
        {"kind": "task started", "at": at(2)},
        {"kind": "tool call", "at": at(3), "name": "get_pods"},
        {"kind": "tool result", "at": at(20), "name": "get_pods", "ok": False},
        {"kind": "text", "at": at(21), "end": at(29)},
        {"kind": "task ended", "at": at(30), "state": "completed"},
    ])  # fmt: skip

    agent = [m for m in timeline.marks_of([turn]) if m.lane == "Agent"]

    assert [(m.label, m.trouble) for m in agent] == [
        ("task started", False),
        ("tool call: get_pods", False),
        ("tool result: get_pods (failed)", True),
        ("reply text", False),
        ("task ended: completed", False),
    ]
    assert agent[3].seconds == 8.0  # the reply's text streamed for 8 s


def test_a_failed_turn_and_a_refused_write_are_trouble():
    turn = a_turn(
        outcome="unreachable", slack_calls=[call("chat.postMessage", 2, 10, outcome="rate_limited")]
    )

    marks = timeline.marks_of([turn])

    assert [m.trouble for m in marks] == [False, True, True]


def test_the_drawing_has_no_message_text_unless_the_viewer_may_read_it():
    marks = timeline.marks_of([a_turn(slack_calls=[call("chat.postMessage", 2, 120)])])

    for_staff = timeline.render_svg(marks, with_text=False)
    for_superuser = timeline.render_svg(marks, with_text=True)

    assert for_staff.startswith("<svg")
    assert for_staff.count('class="mark"') == 3
    assert MESSAGE not in for_staff
    assert MESSAGE in for_superuser
    assert "chat.postMessage: ok at +2.0 s" in for_staff
    assert "took 30.0 s" in for_staff  # the turn's run, on the same axis


def test_text_with_markup_is_escaped():
    marks = timeline.marks_of([a_turn(text="<script>alert(1)</script> & more")])

    drawn = timeline.render_svg(marks, with_text=True)

    assert "<script>" not in drawn
    assert "&lt;script&gt;" in drawn


def test_a_thread_with_nothing_yet_says_so():
    assert "Nothing happened" in timeline.render_svg([], with_text=True)


def test_a_long_quiet_stretch_is_drawn_with_its_length_and_short_pauses_are_not():
    # Posted at +2 s for 0.1 s, then nothing until the update at +25 s: the wait for the agent.
    marks = [
        timeline.Mark("Slack writes", T0 + timedelta(seconds=2), T0 + timedelta(seconds=2.1), "post"),
        timeline.Mark("Slack writes", T0 + timedelta(seconds=2.3), None, "reaction"),
        timeline.Mark("Slack writes", T0 + timedelta(seconds=25), T0 + timedelta(seconds=25.2), "update"),
    ]

    drawn = timeline.render_svg(marks, with_text=False)

    assert timeline.quiet_stretches(marks, min_seconds=1) == [
        (T0 + timedelta(seconds=2.3), T0 + timedelta(seconds=25))
    ]
    assert drawn.count('class="wait"') == 1
    assert "nothing for 22.7 s" in drawn


def test_a_stretch_a_long_mark_covers_is_not_quiet():
    turn = timeline.Mark("Turns", T0, T0 + timedelta(seconds=30), "turn")
    write = timeline.Mark("Slack writes", T0 + timedelta(seconds=29), None, "update")

    assert timeline.quiet_stretches([turn, write], min_seconds=1) == []
