"""What a Web API method of the fake sees of one call, and the registry of the methods it answers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import SlackError, invalid_arguments
from .state import AppInstall, Channel, Message, SlackState, Workspace

# Arguments Slack takes as JSON; form-encoded callers send them as JSON strings.
JSON_ARGUMENTS = frozenset({"blocks", "chunks", "metadata", "attachments", "loading_messages"})


class Args:
    """A call's arguments, read the lenient way Slack reads form and JSON values alike."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def given(self, name: str) -> bool:
        return self._values.get(name) is not None

    def raw(self, name: str) -> Any:
        return self._values.get(name)

    def text(self, name: str) -> str | None:
        value = self._values.get(name)
        if value is None:
            return None
        if isinstance(value, dict | list):
            raise invalid_arguments(f"{name} must be a string")
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def required_text(self, name: str, error: SlackError | None = None) -> str:
        value = self.text(name)
        if not value:
            raise error or invalid_arguments(f"missing required field: {name}")
        return value

    def flag(self, name: str) -> bool:
        value = self._values.get(name)
        if isinstance(value, str):
            return value.lower() in ("true", "1")
        return bool(value)

    def integer(self, name: str, default: int, error: str) -> int:
        value = self._values.get(name)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except (TypeError, ValueError):
            raise SlackError(error) from None


def normalize_json_arguments(values: Mapping[str, Any]) -> dict[str, Any]:
    """Decode JSON-string arguments (form callers), leaving undecodable ones as strings for the method to refuse."""
    normalized = dict(values)
    for name in JSON_ARGUMENTS & normalized.keys():
        value = normalized[name]
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                normalized[name] = json.loads(value)
    return normalized


@dataclass
class Call:
    """One authenticated call being answered."""

    method: str
    args: Args
    workspace: Workspace
    state: SlackState
    # Events API payloads (the inner ``event``) this call makes Slack send to the app.
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def app(self) -> AppInstall:
        return self.workspace.app

    @property
    def now(self) -> float:
        return self.state.now()

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def channel(self, name: str = "channel") -> Channel:
        """The named channel as the bot can see it: a private one it is not in does not exist for it."""
        channel_id = self.args.text(name)
        channel = self.state.channel_in(self.workspace.team_id, channel_id) if channel_id else None
        hidden = channel is not None and (channel.is_private or channel.is_im)
        if channel is None or (hidden and self.app.bot_user_id not in channel.members):
            raise SlackError("channel_not_found")
        return channel

    def postable_channel(self, name: str = "channel") -> Channel:
        channel = self.channel(name)
        if channel.is_archived:
            raise SlackError("is_archived")
        if self.app.bot_user_id not in channel.members:
            raise SlackError("not_in_channel")
        return channel

    def message(self, channel: Channel, ts_name: str = "ts", missing: str = "message_not_found") -> Message:
        ts = self.args.text(ts_name)
        message = self.state.live_message(channel.id, ts) if ts else None
        if message is None:
            raise SlackError(missing)
        return message

    def is_own(self, message: Message) -> bool:
        return message.bot_id == self.app.bot_id


MethodHandler = Callable[[Call], dict[str, Any]]
METHODS: dict[str, MethodHandler] = {}


def web_method(name: str) -> Callable[[MethodHandler], MethodHandler]:
    """Register a function as the fake's answer to the Web API method ``name``."""

    def register(handler: MethodHandler) -> MethodHandler:
        METHODS[name] = handler
        return handler

    return register
