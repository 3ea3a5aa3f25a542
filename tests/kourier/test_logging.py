"""Readable logs while developing: Celery's lines about sweeps that did nothing are left out. No
line shows a URL's credentials, whoever logs it."""

import io
import logging
from typing import cast

import httpx
import pytest
from django.conf import settings
from pythonjsonlogger.json import JsonFormatter

from kourier.logging import CredentialsFilter, ExtraFieldsFilter, QuietSweepsFilter

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


URL = "https://kourier:s3cret@agents.example/ops/"


@pytest.fixture(params=["json", "text"])
def log_line(request):
    """A logger written as the console handler writes (settings.LOGGING): the filters in their order,
    then the JSON or the text format."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(CredentialsFilter())
    handler.addFilter(ExtraFieldsFilter())
    handler.setFormatter(
        JsonFormatter("%(levelname)s %(name)s %(message)s")
        if request.param == "json"
        else logging.Formatter("%(levelname)s %(name)s %(message)s %(extra_fields)s")
    )
    logger = logging.getLogger(f"tests.credentials.{request.param}")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield logger, out
    logger.removeHandler(handler)


def test_the_console_handler_masks_credentials_first():
    handlers = cast(dict[str, dict[str, list[str]]], settings.LOGGING["handlers"])
    assert handlers["console"]["filters"][0] == "credentials"


def test_httpx_logs_a_request_without_its_urls_credentials(log_line):
    logger, out = log_line
    httpx_logger = logging.getLogger("httpx")
    handler = logger.handlers[0]
    httpx_logger.addHandler(handler)
    level = httpx_logger.level
    httpx_logger.setLevel(logging.INFO)
    try:
        with httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200))) as client:
            client.get(URL)
    finally:
        httpx_logger.removeHandler(handler)
        httpx_logger.setLevel(level)

    assert "HTTP Request: GET https://***@agents.example/ops/" in out.getvalue()
    assert "s3cret" not in out.getvalue()


@pytest.mark.parametrize(
    "log",
    [
        lambda logger: logger.info("calling %s", URL),
        lambda logger: logger.info("agent.unreachable", extra={"configured_url": URL}),
        lambda logger: logger.warning(f"calling {URL}"),
    ],
    ids=["argument", "extra", "message"],
)
def test_a_url_in_a_message_or_an_extra_field_shows_no_credentials(log_line, log):
    logger, out = log_line

    log(logger)

    assert "https://***@agents.example/ops/" in out.getvalue()
    assert "s3cret" not in out.getvalue()


def test_a_url_in_an_exceptions_traceback_shows_no_credentials(log_line):
    logger, out = log_line
    try:
        raise httpx.HTTPStatusError(
            f"Client error for url '{URL}'", request=httpx.Request("GET", URL), response=httpx.Response(404)
        )
    except httpx.HTTPStatusError:
        logger.exception("agent.failed")

    assert "HTTPStatusError" in out.getvalue()
    assert "s3cret" not in out.getvalue()
