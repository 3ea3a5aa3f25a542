"""What an alert thread owes: its root message and its notes, each recorded as an ``AlertPost`` in the
transaction that changed the thread, and its delivery queued after commit (delivery.py makes them)."""

from __future__ import annotations

import uuid

from kourier.queue import enqueue_after_commit

from . import messages
from .models import Alert, AlertPost
from .task_names import DELIVER_ALERT


def message_key(alert: Alert) -> str:
    """The key of the alert's root message (kept in its metadata)."""
    return f"alert-{alert.pk}"


def owe_message(alert: Alert) -> None:
    """Owes the thread's root message: the alert message, posted at the top level of the channel."""
    AlertPost.objects.create(alert=alert, key=message_key(alert), kind=AlertPost.Kind.MESSAGE, text="")
    enqueue_after_commit(DELIVER_ALERT, alert.pk)


def owe_note(thread: Alert, name: str, text: str, *, once: bool = False) -> None:
    """Owes a note in the thread (a held thread's: in its storm thread, naming it). ``once``: a note
    that a re-send of the same notification must not owe again (its name says what it is about)."""
    if thread.storm_id is not None:
        target_id = thread.storm_id
        text = messages.held_group_note(thread.title, text)
    else:
        target_id = thread.pk
    # Unique per note: the thread's row lock orders its notes, and a storm thread's come from many.
    key = f"alert-{target_id}:{thread.pk}-{name}" + ("" if once else f"-{uuid.uuid4().hex[:12]}")
    if once and AlertPost.objects.filter(key=key).exists():
        return
    AlertPost.objects.create(alert_id=target_id, key=key, kind=AlertPost.Kind.NOTE, text=text)
    enqueue_after_commit(DELIVER_ALERT, target_id)
