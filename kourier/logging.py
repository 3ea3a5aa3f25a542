"""Structured logging helpers.

Log calls pass identifiers as ``extra`` fields (``logger.info("turn.started", extra={"turn_id": 7})``),
never message text, answers, tool arguments or secrets.
"""

import logging

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
