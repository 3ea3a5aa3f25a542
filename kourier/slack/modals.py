"""Opening a modal for the person who pressed a button (views.open with the press's trigger_id).

Slack lets a trigger_id be exchanged once, within three seconds of the press (docs/slack-modals.md):
past that the call fails with ``expired_trigger_id``, and nothing but another press can open one.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient


async def open_modal(slack: AsyncWebClient, trigger_id: str, view: dict[str, Any]) -> str:
    """Opens ``view`` for the person behind ``trigger_id``; its view id. Raises SlackError."""
    answer = await slack.views_open(trigger_id=trigger_id, view=view)
    return str((answer.get("view") or {}).get("id", ""))
