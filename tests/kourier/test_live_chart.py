"""A Binding's last hour as SVG geometry (kourier/live_chart.py): turns per minute stacked by outcome,
failures on top, scaled to the busiest minute; and each minute's median time to a first reply."""

from datetime import UTC, datetime, timedelta

from kourier import live_chart

NOW = datetime(2026, 5, 1, 10, 30, 40, tzinfo=UTC)
THIS_MINUTE = datetime(2026, 5, 1, 10, 30, tzinfo=UTC)


def test_a_minutes_turns_stack_by_outcome_with_failures_on_top_scaled_to_the_busiest_minute():
    chart = live_chart.turns_chart(
        [
            (THIS_MINUTE, "unreachable", 1),
            (THIS_MINUTE, "completed", 3),
            (THIS_MINUTE - timedelta(minutes=59), "completed", 2),
        ],
        NOW,
    )

    assert (chart.peak, chart.total) == (4, 6)
    first, completed, failed = chart.bars
    assert (first.x, first.height, first.title) == (1, 50, "09:31 completed: 2")
    assert (completed.x, completed.y, completed.height, completed.colour) == (591, 25, 75, live_chart.GOOD)
    assert (failed.y, failed.height, failed.colour, failed.title) == (
        0,
        25,
        live_chart.BAD,
        "10:30 unreachable: 1",
    )
    assert [(e.outcome, e.count) for e in chart.legend] == [("completed", 5), ("unreachable", 1)]


def test_turns_outside_the_hour_are_left_out_and_an_idle_hour_draws_nothing():
    chart = live_chart.turns_chart([(THIS_MINUTE - timedelta(minutes=60), "completed", 5)], NOW)

    assert (chart.bars, chart.legend, chart.peak, chart.total) == ([], [], 0, 0)


def test_each_minute_shows_its_median_time_to_a_first_reply_scaled_to_the_slowest():
    chart = live_chart.reply_chart(
        [
            (THIS_MINUTE - timedelta(minutes=1), 2.0),
            (THIS_MINUTE - timedelta(minutes=1), 4.0),
            (THIS_MINUTE - timedelta(minutes=1), 30.0),
            (THIS_MINUTE, 8.0),
            (THIS_MINUTE - timedelta(hours=2), 500.0),  # outside the hour
        ],
        NOW,
    )

    assert (chart.peak_seconds, chart.median_seconds, chart.replies) == (8.0, 6.0, 4)
    assert [(p.x, p.y) for p in chart.points] == [(585, 50), (595, 0)]
    assert chart.polyline == "585,50 595,0"
    assert chart.points[0].title == "10:29 median 4.0 s (3 replies)"
