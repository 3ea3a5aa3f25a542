"""Who a bot token is in Slack (``auth.test``): the operator's "Test token" on a Connection's page
(asked each time), and what the product's calls need to know of it (asked once per process)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from .clients import KourierAsyncWebClient, async_web_client


async def identity_of(client: AsyncWebClient) -> Any:
    """``auth.test``'s answer for the client's token: once per token and process for the product's
    clients (``KourierAsyncWebClient.identity``), else asked."""
    if isinstance(client, KourierAsyncWebClient):
        return await client.identity()
    return await client.auth_test()


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
