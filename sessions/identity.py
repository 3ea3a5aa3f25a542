"""Who a turn is filed under, and who it names to the agent.

When no person wrote it: an alert thread's first turn and the notes its trigger posts (a join, a
repeat, a resolve) are written by the product. They are filed under ``SYSTEM_IDENTITY`` in
``Turn.user_id`` and ``ThreadNote.user_id``; the admin shows it. It is lowercase, so it is never a
Slack user ID (those are upper-case letters and digits), and it is never looked up in Slack.

What a turn sends the agent as the person behind it is one function, ``sent_as``, for every turn.
kagent attributes a session to the user its ``X-User-Id`` header names (its default, unsecured mode;
without it, ``A2A_USER_<contextId>``). A Binding's ``userIdentity`` chooses what goes there: nothing,
the Slack user ID, or the person's email as Slack's users.info shows it. A turn with no person behind
it (an alert thread's) sends ``SYSTEM_IDENTITY``, whatever the Binding chose, unless it chose nothing.
When Slack does not show an email (the app lacks users:read.email, or the profile has none), the Slack
user ID is sent instead: the agent still tells people apart, and the log says why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bindings.manifest import UserIdentity

SYSTEM_IDENTITY = "kourier-system"
USER_ID_HEADER = "X-User-Id"

EmailOf = Callable[[str], Awaitable[str | None]]


def is_person(user_id: str) -> bool:
    """Whether ``user_id`` is a person's Slack ID; the system identity (or an empty ID, as alert
    turns written before it was named were stored) is not."""
    return bool(user_id) and user_id != SYSTEM_IDENTITY


def filed_under(user_id: str) -> str:
    """Who a turn or note is filed under, for people to read: the person's ID, or the system identity."""
    return user_id if is_person(user_id) else SYSTEM_IDENTITY


async def sent_as(mode: UserIdentity, slack_user: str | None, email_of: EmailOf) -> str | None:
    """The user a turn names to the agent; None: no header. ``slack_user`` not a person: the system
    identity (an alert thread's own turn)."""
    if mode is UserIdentity.NONE:
        return None
    if slack_user is None or not is_person(slack_user):
        return SYSTEM_IDENTITY
    if mode is UserIdentity.EMAIL:
        return await email_of(slack_user) or slack_user
    return slack_user


async def identity_headers(mode: UserIdentity, slack_user: str | None, email_of: EmailOf) -> dict[str, str]:
    user = await sent_as(mode, slack_user, email_of)
    return {USER_ID_HEADER: user} if user else {}
