"""The Bolt app of a Connection: its authorization asks Slack who the bot is once per process."""

import asyncio

import pytest
from slack_sdk.errors import SlackApiError

from kourier.doors.slack_listeners import authorize_once

pytestmark = pytest.mark.anyio

IDENTITY = {"ok": True, "team_id": "T1", "user_id": "U0BOT", "bot_id": "B1", "enterprise_id": None}


class Identity(dict):
    headers = {"x-oauth-scopes": "app_mentions:read,chat:write"}


class AuthTestClient:
    """auth.test that answers only when the test lets it, and counts its calls."""

    token = "xoxb-test"

    def __init__(self, failures: int = 0) -> None:
        self.calls = 0
        self.failures = failures
        self.called = asyncio.Event()
        self.answer = asyncio.Event()

    async def auth_test(self) -> Identity:
        self.calls += 1
        self.called.set()
        await self.answer.wait()
        if self.calls <= self.failures:
            raise SlackApiError("invalid_auth", {"ok": False, "error": "invalid_auth"})
        return Identity(IDENTITY)


async def test_requests_arriving_before_the_first_answer_share_one_auth_test():
    client = AuthTestClient()
    authorize = authorize_once(client)  # type: ignore[arg-type]
    requests = [asyncio.create_task(authorize(user_id=f"U{index}")) for index in range(5)]  # type: ignore[var-annotated]
    await client.called.wait()  # every request has started and is waiting for the one call
    client.answer.set()
    results = await asyncio.gather(*requests)
    assert client.calls == 1
    assert [result.user_id for result in results] == ["U0", "U1", "U2", "U3", "U4"]
    assert {(r.team_id, r.bot_user_id, r.bot_id, r.bot_token) for r in results} == {
        ("T1", "U0BOT", "B1", "xoxb-test")
    }
    later = await authorize(user_id="U9")
    assert (client.calls, later.bot_user_id) == (1, "U0BOT")


async def test_a_failed_auth_test_is_not_kept_and_the_next_request_asks_again():
    client = AuthTestClient(failures=1)
    client.answer.set()
    authorize = authorize_once(client)  # type: ignore[arg-type]
    with pytest.raises(SlackApiError):
        await authorize(user_id="U1")
    assert (await authorize(user_id="U1")).bot_user_id == "U0BOT"
    assert client.calls == 2
