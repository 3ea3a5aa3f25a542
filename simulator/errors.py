"""The one way a Web API method of the fake says no."""

from __future__ import annotations

from typing import Any


class SlackError(Exception):
    """A refusal Slack sends as HTTP 200 with ``{"ok": false, "error": <name>}`` and maybe more fields."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"ok": False, "error": self.error, **self.extra}


def invalid_arguments(*messages: str) -> SlackError:
    """Slack's answer to a missing or malformed argument that has no error of its own."""
    return SlackError("invalid_arguments", response_metadata={"messages": [f"[ERROR] {m}" for m in messages]})


class FakeMisuse(Exception):
    """A test asked a person to do something a person could not do in Slack (press a button that is not there)."""
