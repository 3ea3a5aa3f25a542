"""What the fake Slack knows of modals: the trigger_ids it handed out with presses, and the views open.

Plain data, kept apart from state.py so that modals stay one part of the fake; ``SlackState.modals``
holds one ``Modals``. Every change happens under ``SlackState.lock``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Trigger:
    """A trigger_id sent with a person's action: exchangeable once, for three seconds (views.open)."""

    trigger_id: str
    team_id: str
    user_id: str
    issued_at: float
    exchanged: bool = False


@dataclass
class OpenView:
    """A modal a person has open: the view as the app opened it, and what Slack added to it."""

    id: str
    team_id: str
    user_id: str
    app_id: str
    bot_id: str
    view: dict[str, Any]  # as the app sent it
    hash: str
    opened_at: float
    # The app's answer to the last submission: {block_id: message} shown under the inputs.
    errors: dict[str, str] = field(default_factory=dict)
    closed: bool = False
    close_reason: str | None = None  # "submitted", "closed" (the person), "cleared" (response_action clear)

    @property
    def callback_id(self) -> str:
        return str(self.view.get("callback_id") or "")

    @property
    def private_metadata(self) -> str:
        return str(self.view.get("private_metadata") or "")

    @property
    def title(self) -> str:
        return str((self.view.get("title") or {}).get("text", ""))

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return list(self.view.get("blocks") or [])

    @property
    def notify_on_close(self) -> bool:
        return bool(self.view.get("notify_on_close"))


@dataclass
class Modals:
    triggers: dict[str, Trigger] = field(default_factory=dict)
    views: dict[str, OpenView] = field(default_factory=dict)

    def open_for(self, user_id: str) -> list[OpenView]:
        return [view for view in self.views.values() if view.user_id == user_id and not view.closed]
