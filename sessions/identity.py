"""What a turn sends the agent as the person behind it: one function, ``sent_as``, for every turn.

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

USER_ID_HEADER = "X-User-Id"
# The one name an alert thread's turns go under (the alerts app may name its own identity later).
SYSTEM_IDENTITY = "kourier-system"

EmailOf = Callable[[str], Awaitable[str | None]]


async def sent_as(mode: UserIdentity, slack_user: str | None, email_of: EmailOf) -> str | None:
    """The user a turn names to the agent; None: no header. ``slack_user`` None: no person (alerts)."""
    if mode is UserIdentity.NONE:
        return None
    if not slack_user:
        return SYSTEM_IDENTITY
    if mode is UserIdentity.EMAIL:
        return await email_of(slack_user) or slack_user
    return slack_user


async def identity_headers(mode: UserIdentity, slack_user: str | None, email_of: EmailOf) -> dict[str, str]:
    user = await sent_as(mode, slack_user, email_of)
    return {USER_ID_HEADER: user} if user else {}
