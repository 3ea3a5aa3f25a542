"""Slack's agent sessions: a thread's session status, set by the app, and the native stop control a
person presses while it is processing (docs/slack-platform.md §2.2).

Behaviour follows Slack's pages for ``agents.sessions.setStatus`` and the ``agent_session_stopped``
event:

- ``agents.sessions.setStatus`` (chat:write, Tier 3): ``channel_id`` and ``status`` (active,
  processing, suspended, closed) required; ``thread_ts`` required in a channel's or a direct
  message's thread (``thread_ts_required``); ``title`` at most 200 characters. It creates the session
  if there is none. A workspace without the feature answers ``feature_disabled``. While the app does
  not subscribe to ``agent_session_stopped`` the call succeeds with the warning
  ``missing_agent_session_stopped_event_subscription`` and people see a loading indicator they
  cannot press.
- The stop control shows only while the session is processing. Pressing it stops the app's streams
  in progress in that thread (their next append answers ``stopped_by_user``) and sends
  ``agent_session_stopped`` with ``channel``, ``thread_ts``, ``user``, ``event_ts`` and
  ``streaming_message_ts`` (the streams it stopped; empty when none was streaming). The status does
  not change by itself: the app moves it away from processing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import SlackError, invalid_arguments
from .methods import read_thread_ts, with_warnings
from .state import Channel, SlackState
from .streams import end_stream
from .web_api import Call, web_method

SESSION_STATUSES = ("active", "processing", "suspended", "closed")
MAX_TITLE_LENGTH = 200
NO_STOP_SUBSCRIPTION = "missing_agent_session_stopped_event_subscription"


@dataclass(frozen=True)
class SessionStatus:
    status: str
    set_at: float


@web_method("agents.sessions.setStatus")
def agents_sessions_set_status(call: Call) -> dict[str, Any]:
    if not call.workspace.agent_sessions_enabled:
        raise SlackError("feature_disabled")
    channel_id = call.args.text("channel_id")
    channel = call.state.channel_in(call.workspace.team_id, channel_id) if channel_id else None
    if channel is None:
        raise SlackError("channel_not_found")
    status = call.args.text("status")
    if status is None:
        raise invalid_arguments("missing required field: status")
    if status not in SESSION_STATUSES:
        raise SlackError("invalid_status")
    thread_ts = read_thread_ts(call, channel)
    if thread_ts is None:
        raise SlackError("thread_ts_required")
    title = call.args.text("title")
    if title is not None and len(title) > MAX_TITLE_LENGTH:
        raise invalid_arguments(f"title must be at most {MAX_TITLE_LENGTH} characters")
    history = call.state.agent_sessions.setdefault((channel.id, thread_ts), [])
    history.append(SessionStatus(status=status, set_at=call.now))
    subscribed = call.workspace.agent_session_stopped_subscribed
    return with_warnings({}, [] if subscribed else [NO_STOP_SUBSCRIPTION])


def session_status(state: SlackState, channel_id: str, thread_ts: str) -> str | None:
    history = state.agent_sessions.get((channel_id, thread_ts))
    return history[-1].status if history else None


def stop_session(state: SlackState, channel: Channel, thread_ts: str, user: str) -> dict[str, Any]:
    """A person presses the stop control of a processing session: the thread's streams in progress
    stop, and the event that tells the app is returned (the caller sends it)."""
    now = state.now()
    stopped = []
    for message in state.messages.get(channel.id, {}).values():
        stream = message.stream
        if message.root_ts == thread_ts and stream is not None and stream.is_streaming(now):
            end_stream(stream, "stopped_by_user", now)
            stopped.append(message.ts)
    return {
        "type": "agent_session_stopped",
        "channel": channel.id,
        "thread_ts": thread_ts,
        "user": user,
        "event_ts": state.next_ts(),
        "streaming_message_ts": sorted(stopped),
    }
