"""Who a bot token is in Slack (``auth.test``): the operator's "Test token" on a Connection's page."""

from __future__ import annotations

from dataclasses import dataclass

from .clients import async_web_client


@dataclass(frozen=True)
class TokenIdentity:
    team: str
    team_id: str
    bot_user_id: str
    url: str  # the workspace's address


async def token_identity(token: str, *, workspace: str | None = None) -> TokenIdentity:
    """The workspace and bot user the token belongs to; raises ``SlackError`` when Slack refuses it
    (``invalid_auth``, ``token_revoked``, ...) or cannot be reached."""
    answer = await async_web_client(token, workspace=workspace).auth_test()
    return TokenIdentity(
        team=str(answer.get("team") or ""),
        team_id=str(answer.get("team_id") or ""),
        bot_user_id=str(answer.get("user_id") or ""),
        url=str(answer.get("url") or ""),
    )
