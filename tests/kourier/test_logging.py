"""Readable logs while developing: Celery's lines about sweeps that did nothing are left out."""

import logging

from kourier.logging import QuietSweepsFilter

SWEEP = "sweeps.recover-sessions"


def record(name: str, msg: str, args) -> logging.LogRecord:
    return logging.LogRecord(
        name, logging.INFO, __file__, 1, msg, (args,) if isinstance(args, dict) else args, None
    )


def test_a_sweep_that_did_nothing_is_left_out_from_beat_to_its_success():
    quiet = QuietSweepsFilter()
    assert not quiet.filter(
        record("celery.beat", "Scheduler: Sending due task %s (%s)", ("recover-sessions", SWEEP))
    )
    assert not quiet.filter(
        record("celery.worker.strategy", "Task %(name)s[%(id)s] received", {"name": SWEEP, "id": "1"})
    )
    assert not quiet.filter(
        record(
            "celery.app.trace",
            "Task %(name)s succeeded: %(return_value)s",
            {"name": SWEEP, "return_value": "{'sessions driven': 0}"},
        )
    )


def test_a_sweep_that_did_something_a_failed_sweep_and_other_tasks_are_kept():
    quiet = QuietSweepsFilter()
    trace = "Task %(name)s succeeded: %(return_value)s"
    assert quiet.filter(
        record("celery.app.trace", trace, {"name": SWEEP, "return_value": "{'sessions driven': 2}"})
    )
    assert quiet.filter(
        record("celery.app.trace", "Task %(name)s raised: %(exc)s", {"name": SWEEP, "exc": "boom"})
    )
    assert quiet.filter(
        record(
            "celery.worker.strategy",
            "Task %(name)s[%(id)s] received",
            {"name": "sessions.tasks.drive_session", "id": "2"},
        )
    )
