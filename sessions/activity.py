"""A thread's activity: what keeps its session for ``session.threadTTL`` after it (spec, Lifetime).

A message taken as a turn or a note is activity, and so is an alert thread's note (an alert joined,
fired again, resolved), an answer to the agent's question (typed in the thread or a Submit) and a
decision on its tools: each moves the thread's expiry forward.
"""

from datetime import datetime, timedelta

from django.db.models import Q

from .models import Session


def touch(session: Session, ttl: timedelta, now: datetime) -> None:
    """Moves the session's last activity to ``now`` and its expiry ``ttl`` after it."""
    if session.last_activity_at >= now:  # a session this delivery started: nothing to move
        return
    # Activity only moves forward, whichever of two concurrent deliveries commits last.
    Session.objects.filter(pk=session.pk).filter(Q(last_activity_at__lt=now)).update(
        last_activity_at=now, expires_at=now + ttl
    )
