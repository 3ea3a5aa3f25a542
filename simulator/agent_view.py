"""Slack's agent surface: the direct-message conversation a person opens with the app, the event that
says they opened it, and the methods that dress it (suggested prompts, a thread's title).

Behaviour follows docs/slack-direct-messages.md (Slack's method pages and bolt-python's agent guide):

- Opening the app's Messages tab sends ``app_home_opened`` with ``tab: "messages"`` and the im's
  ``channel`` (the agent view, ``features.agent_view``; the legacy assistant view sent
  ``assistant_thread_started`` instead).
- ``assistant.threads.setSuggestedPrompts`` (scope assistant:write, Tier 4): ``channel_id`` and
  ``prompts`` (up to four, each with a ``title`` and a ``message``), optional ``title`` of the list.
  In the agent view the prompts go on the Messages tab; a call with ``thread_ts`` "will cause the
  call to silently fail": ok, and nothing changes.
- ``assistant.threads.setTitle`` (assistant:write, Tier 4): ``channel_id``, ``thread_ts``, ``title``
  all required; errors channel_not_found and invalid_thread_ts.

Slack documents no error for a fifth prompt or a prompt without its message; the fake answers them
with invalid_arguments, Slack's error for a malformed argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SlackError, invalid_arguments
from .methods import read_thread_ts
from .state import Channel
from .web_api import Call, web_method

MAX_SUGGESTED_PROMPTS = 4


@dataclass(frozen=True)
class SuggestedPrompts:
    title: str | None
    prompts: tuple[tuple[str, str], ...]  # (title, message)
    set_at: float


def app_home_opened_event(user: str, channel: Channel, event_ts: str) -> dict[str, Any]:
    return {
        "type": "app_home_opened",
        "user": user,
        "channel": channel.id,
        "tab": "messages",
        "event_ts": event_ts,
    }


def _assistant_scope(call: Call) -> None:
    if call.workspace.assistant_status_support == "missing_scope":
        raise SlackError("missing_scope", needed="assistant:write", provided="chat:write,reactions:write")
    if call.workspace.assistant_status_support == "unknown_method":
        raise SlackError("unknown_method", req_method=call.method)


def _im_of_app(call: Call) -> Channel:
    channel_id = call.args.text("channel_id")
    channel = call.state.channel_in(call.workspace.team_id, channel_id) if channel_id else None
    if channel is None or not channel.is_im or call.app.bot_user_id not in channel.members:
        raise SlackError("channel_not_found", detail="Invalid channel_id")
    return channel


@web_method("assistant.threads.setSuggestedPrompts")
def assistant_threads_set_suggested_prompts(call: Call) -> dict[str, Any]:
    _assistant_scope(call)
    channel = _im_of_app(call)
    prompts = call.args.raw("prompts")
    if not isinstance(prompts, list) or not 1 <= len(prompts) <= MAX_SUGGESTED_PROMPTS:
        raise invalid_arguments(f"prompts must be an array of 1 to {MAX_SUGGESTED_PROMPTS} objects")
    read: list[tuple[str, str]] = []
    for prompt in prompts:
        if not isinstance(prompt, dict) or not all(
            isinstance(prompt.get(key), str) and prompt[key] for key in ("title", "message")
        ):
            raise invalid_arguments("each prompt must have a title and a message")
        read.append((prompt["title"], prompt["message"]))
    if call.args.given("thread_ts"):
        return {}  # the agent view ignores a thread's prompts without saying so
    title = call.args.text("title")
    call.state.suggested_prompts[channel.id] = SuggestedPrompts(title, tuple(read), call.now)
    return {}


@web_method("assistant.threads.setTitle")
def assistant_threads_set_title(call: Call) -> dict[str, Any]:
    _assistant_scope(call)
    channel = _im_of_app(call)
    thread_ts = read_thread_ts(call, channel)
    if thread_ts is None:
        raise invalid_arguments("missing required field: thread_ts")
    if call.state.message(channel.id, thread_ts) is None:
        raise SlackError("invalid_thread_ts")
    title = call.args.text("title")
    if not title:
        raise invalid_arguments("missing required field: title")
    call.state.thread_titles[(channel.id, thread_ts)] = title
    return {}
