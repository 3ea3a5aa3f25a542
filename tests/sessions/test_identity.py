"""What a turn sends the agent as the person behind it (sessions/identity.py)."""

import asyncio

import pytest

from bindings.manifest import UserIdentity
from sessions.identity import SYSTEM_IDENTITY, USER_ID_HEADER, identity_headers, sent_as

EMAILS = {"U0ADA": "ada@example.com"}


async def email_of(user_id: str) -> str | None:
    return EMAILS.get(user_id)


def sent(mode: UserIdentity, slack_user: str | None) -> str | None:
    return asyncio.run(sent_as(mode, slack_user, email_of))


@pytest.mark.parametrize(
    ("mode", "slack_user", "expected"),
    [
        pytest.param(UserIdentity.NONE, "U0ADA", None, id="none: nobody, even for a person"),
        pytest.param(UserIdentity.NONE, None, None, id="none: nobody for an alert either"),
        pytest.param(UserIdentity.SLACK_USER_ID, "U0ADA", "U0ADA", id="the Slack user ID"),
        pytest.param(UserIdentity.EMAIL, "U0ADA", "ada@example.com", id="the email"),
        pytest.param(UserIdentity.EMAIL, "U0GRACE", "U0GRACE", id="no email shown: the Slack user ID"),
        pytest.param(UserIdentity.SLACK_USER_ID, None, SYSTEM_IDENTITY, id="no person: the system identity"),
        pytest.param(
            UserIdentity.EMAIL, None, SYSTEM_IDENTITY, id="no person, email mode: the system identity"
        ),
    ],
)
def test_what_a_turn_sends_as_the_user(mode, slack_user, expected):
    assert sent(mode, slack_user) == expected


def test_the_header_is_x_user_id_and_is_left_out_when_nobody_is_sent():
    assert asyncio.run(identity_headers(UserIdentity.SLACK_USER_ID, "U0ADA", email_of)) == {
        USER_ID_HEADER: "U0ADA"
    }
    assert USER_ID_HEADER == "X-User-Id"  # what kagent's request handlers read (x-user-id)
    assert asyncio.run(identity_headers(UserIdentity.NONE, "U0ADA", email_of)) == {}
