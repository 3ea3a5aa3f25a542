"""The one retry machine of the interactions app: work kept as a row until a try does it, each try a
Celery message.

Two kinds of work go through it: a press on an approval prompt kept while Slack could not tell whether
the presser is an approver (kept_presses.py), and the rewrite a prompt is owed once its Interaction
changed (closings.py). Each keeps a row with ``attempt``, the try the next message is for, and
``due_at``, when that try should have started (or, once taken, ended); a ``Retries`` says the rest,
the same way for both:

- a try's message carries the row's key and the try's number, and the try is taken by a conditional
  update of that number (``claim``): a message sent twice (by the sweep, or given back by the broker)
  runs once;
- a try that fails for now is put off (``put_off``): the row says when the next one is due and its
  message is sent, after 1, 2, 4, ... seconds (at most ``longest_wait``); after the last try the work
  is given up, its row forgotten (``GAVE_UP``: its caller says what that means);
- beat's sweep sends again a try that is overdue (``send_overdue``): its message was lost with a Redis
  that lost its data, or its worker died holding it (after a SIGKILL the broker would hide its copy
  for its visibility timeout, an hour). SIGTERM gives the broker back the message a worker holds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from kourier.queue import enqueue_after_commit, enqueue_after_commit_in

# Past its time by this much, a try that never started was lost with its worker or its broker.
LOST_AFTER = timedelta(seconds=10)


class TryOutcome(enum.StrEnum):
    """What one try of kept work did."""

    DONE = "done"  # the work is done (or turned out to need nothing): its row is forgotten
    STALE = "stale"  # the try was taken already (its message came twice), or the work is gone: nothing done
    AGAIN = "again"  # it failed for now: the next try is due after its backoff, its message sent
    GAVE_UP = "gave-up"  # the last try failed: the work is given up, its row forgotten


@dataclass(frozen=True)
class Retries:
    """How one kind of kept work is tried: its rows, the task a try runs in, how many tries."""

    rows: type[models.Model]  # with ``attempt`` and ``due_at``
    key: str  # the field a try's message names its row by
    task_name: str  # the task that runs one try: (key, attempt)
    tries: int  # in all, the first one included
    longest_wait: int  # seconds between two tries, at most
    try_takes_at_most: timedelta  # a try still running after this died with its worker

    def backoff(self, attempt: int) -> int:
        """Seconds from try ``attempt`` to the next."""
        return min(self.longest_wait, 2**attempt)

    def is_last(self, attempt: int) -> bool:
        return attempt + 1 >= self.tries

    def first_due(self, now: datetime) -> datetime:
        """When a row's first try, sent as it is kept, is overdue."""
        return now + LOST_AFTER

    def send(self, key: Any, attempt: int) -> None:
        """Sends try ``attempt``'s message once the caller's transaction commits."""
        enqueue_after_commit(self.task_name, key, attempt)

    def claim(self, key: Any, attempt: int, *, now: datetime | None = None) -> bool:
        """Takes try ``attempt``; False when it was taken already or the row is gone."""
        now = now or timezone.now()
        return self._row(key, attempt).update(attempt=attempt + 1, due_at=now + self.try_takes_at_most) == 1

    def put_off(self, key: Any, attempt: int, *, now: datetime | None = None) -> TryOutcome:
        """After try ``attempt`` failed for now: AGAIN, the next try's time kept in the row and its
        message sent after the backoff; GAVE_UP after the last try (the row forgotten). Conditional:
        work asked for again while the try ran (a newer try's message is on its way) is left to it."""
        now = now or timezone.now()
        if self.is_last(attempt):
            self.finished(key, attempt)
            return TryOutcome.GAVE_UP
        delay = self.backoff(attempt)
        with transaction.atomic():
            if self._row(key, attempt + 1).update(due_at=now + timedelta(seconds=delay) + LOST_AFTER):
                enqueue_after_commit_in(delay, self.task_name, key, attempt + 1)
        return TryOutcome.AGAIN

    def finished(self, key: Any, attempt: int) -> None:
        """Try ``attempt`` is over: the row forgotten, unless work was asked for again meanwhile."""
        self._row(key, attempt + 1).delete()

    def given_up_if_last(self, key: Any, attempt: int) -> None:
        """A try that raised (a bug, not a failure that may pass): the last one forgets the row, so a
        bug is not tried for ever; before it, the row stays owed and the sweep sends it once overdue."""
        if self.is_last(attempt):
            self.finished(key, attempt)

    def send_overdue(self, *, now: datetime | None = None) -> int:
        """Sends again every try that is overdue; returns how many."""
        now = now or timezone.now()
        sent = 0
        overdue = self._rows().filter(due_at__lt=now).values_list(self.key, "attempt", "due_at")
        for key, attempt, due_at in overdue:
            # Conditional: a try taken or put off since the read is not overdue any more.
            with transaction.atomic():
                if self._row(key, attempt).filter(due_at=due_at).update(due_at=now + LOST_AFTER):
                    self.send(key, attempt)
                    sent += 1
        return sent

    def _rows(self) -> models.QuerySet[Any]:
        return self.rows._default_manager.all()

    def _row(self, key: Any, attempt: int) -> models.QuerySet[Any]:
        return self._rows().filter(**{self.key: key, "attempt": attempt})
