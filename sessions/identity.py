"""Who a turn or a note is filed under when no person wrote it: the system identity.

An alert thread's first turn and the notes its trigger posts (a join, a repeat, a resolve) are
written by the product, not by a person. They are filed under ``SYSTEM_IDENTITY`` in
``Turn.user_id`` and ``ThreadNote.user_id``; the admin shows it, and an adapter that must name a
user to the agent for such a turn names this one. It is lowercase, so it is never a Slack user ID
(those are upper-case letters and digits), and it is never looked up in Slack.
"""

SYSTEM_IDENTITY = "kourier-system"


def is_person(user_id: str) -> bool:
    """Whether ``user_id`` is a person's Slack ID; the system identity (or an empty ID, as alert
    turns written before it was named were stored) is not."""
    return bool(user_id) and user_id != SYSTEM_IDENTITY


def filed_under(user_id: str) -> str:
    """Who a turn or note is filed under, for people to read: the person's ID, or the system identity."""
    return user_id if is_person(user_id) else SYSTEM_IDENTITY
