"""Faults a test injects into the fake's Web API: the failures real Slack and real networks produce.

``error`` is one of:

- ``"ratelimited"``: HTTP 429, ``Retry-After`` header, body ``{"ok": false, "error": "ratelimited"}``;
- ``"http_500"`` (any ``http_<status>``): that HTTP status with a body;
- ``"timeout"``: the request is held unanswered until the client gives up; nothing is applied;
- ``"timeout_after_apply"``: the call is applied, then its answer is lost the same way;
- ``"disconnect"`` / ``"disconnect_after_apply"``: the connection is closed without an answer
  (slack_sdk's default retry handler retries this, which can apply a call twice);
- any other name: a Slack error, HTTP 200 with ``{"ok": false, "error": <name>}``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ArgsPredicate = Callable[[Mapping[str, Any]], bool]

TRANSPORT_FAULTS = frozenset({"timeout", "timeout_after_apply", "disconnect", "disconnect_after_apply"})
_HTTP_STATUS = re.compile(r"^http_(\d{3})$")


@dataclass
class Fault:
    method: str
    error: str
    times: int | None = 1  # None: every matching call, until cleared
    retry_after: int = 1
    when: ArgsPredicate | None = None
    team_id: str | None = None
    body: str | dict[str, Any] | None = None  # overrides the answer body of http_<status> and named errors
    extra: dict[str, Any] = field(default_factory=dict)  # more fields for a named error's body
    hits: int = 0

    @property
    def http_status(self) -> int | None:
        match = _HTTP_STATUS.match(self.error)
        return int(match.group(1)) if match else None

    @property
    def after_apply(self) -> bool:
        """Whether the call is carried out before the answer is lost."""
        return self.error.endswith("_after_apply")

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def matches(self, method: str, team_id: str, args: Mapping[str, Any]) -> bool:
        if self.exhausted or method != self.method:
            return False
        if self.team_id is not None and self.team_id != team_id:
            return False
        return self.when is None or self.when(args)


class FaultPlan:
    """The faults still to be injected, first added first used."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, method: str, team_id: str, args: Mapping[str, Any]) -> Fault | None:
        """The fault this call runs into, counted as used, or None."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, team_id, args):
                    fault.hits += 1
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()
