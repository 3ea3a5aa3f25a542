"""Structured logging helpers.

Log calls pass identifiers as ``extra`` fields (``logger.info("turn.started", extra={"turn_id": 7})``),
never message text, answers, tool arguments or secrets. A library's lines are not ours to word:
``CredentialsFilter`` masks the credentials of any URL in any line (httpx logs each request's URL).
"""

import logging
import re
from collections.abc import Mapping

from kourier.sweeps import is_sweep_task

from .credentials import without_credentials

_STANDARD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "extra_fields",
}


class ExtraFieldsFilter(logging.Filter):
    """Collects a record's ``extra`` fields into one attribute so the text format can print them."""

    def filter(self, record: logging.LogRecord) -> bool:
        extras = {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRIBUTES}
        record.extra_fields = " ".join(f"{k}={v}" for k, v in extras.items())
        return True


class CredentialsFilter(logging.Filter):
    """Masks a URL's user and password (``https://***@host``) in a record's message, its ``extra``
    fields and its traceback, whoever logged it: httpx logs ``HTTP Request: POST <url>`` with the
    URL as configured, credentials included."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a bad format: logging reports it as it is
            return True
        masked = without_credentials(message)
        if masked != message:
            record.msg, record.args = masked, None
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRIBUTES and isinstance(value, str):
                setattr(record, key, without_credentials(value))
        if record.exc_info:
            # Formatted here so the URL an exception names (httpx's HTTPStatusError does) is masked;
            # both formatters print exc_text when there is no exc_info left.
            trace = logging.Formatter().formatException(record.exc_info)
            if without_credentials(trace) != trace:
                record.exc_info, record.exc_text = None, without_credentials(trace)
        return True


class QuietSweepsFilter(logging.Filter):
    """Drops Celery's lines about a sweep that did nothing: beat sending it, the worker receiving it,
    and its success when every count it returned is zero. A sweep that did something, or failed, is
    still logged. For readable logs while developing (``make serve``), where a sweep runs every few
    seconds. A sweep's task is known by its name (kourier/sweeps.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, Mapping) and is_sweep_task(args.get("name")):
            if "return_value" in args:  # celery.app.trace: "Task ... succeeded in ...s: {counts}"
                return _NONZERO_COUNT.search(str(args["return_value"])) is not None
            return "received" not in str(record.msg)  # celery.worker.strategy: "Task ... received"
        if record.name == "celery.beat" and isinstance(args, tuple) and len(args) == 2:
            return not is_sweep_task(args[1])  # "Scheduler: Sending due task <name> (<task>)"
        return True


_NONZERO_COUNT = re.compile(r":\s*[1-9]")
