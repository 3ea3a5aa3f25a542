"""What the product reads in Slack's requests: whether a payload is one Slack sends, and message
events as the platform-neutral shape the sessions app routes (ChatMessage).

Pure: no I/O. Slack's two events for one mention (app_mention and message) read the same here,
so whichever arrives first makes the turn and the other collapses onto it. A payload or an event
with a field missing or of the wrong type is unreadable: it is never half read into a row.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .files import SharedFile, read_shared_files

# Subtypes that change or remove an existing message, or that are not a person's message.
_NOT_A_NEW_MESSAGE = frozenset(
    {
        "message_changed",
        "message_deleted",
        "message_replied",
        "bot_message",
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "group_join",
        "group_leave",
        "thread_broadcast_removed",
        "ekm_access_denied",
        "me_message_changed",
        "assistant_app_thread",
    }
)


@dataclass(frozen=True)
class ChatMessage:
    """A person's new message in a channel, as the chat platform delivered it."""

    team_id: str
    channel_id: str
    ts: str
    thread_ts: str | None  # the thread's root when the message is a reply, else None
    user_id: str
    text: str
    mentions_bot: bool
    direct: bool = False  # in the person's direct-message conversation with the app (channel_type im)
    # Slack sent it again: no earlier delivery was acknowledged (X-Slack-Retry-Num, or Socket Mode's
    # retry_attempt, which Bolt passes on as that header).
    redelivered: bool = False
    files: tuple[SharedFile, ...] = ()  # what it shares (a file_share message, a mention with files)

    @property
    def root_ts(self) -> str:
        return self.thread_ts or self.ts


@dataclass(frozen=True)
class IgnoredEvent:
    """An event that is not a person's new message (an edit, a bot's post): acked and dropped."""

    reason: str


@dataclass(frozen=True)
class UnreadableEvent:
    """An event Slack does not send: a field it always has is missing or of another type."""

    reason: str


def why_unreadable(payload: object) -> str | None:
    """Why a request's payload is not one Slack sends, or None when it can be dispatched.

    Covers what Bolt and the listeners read before an event reaches read_message_event: the
    payload's type, and per type the fields they index into.
    """
    if not isinstance(payload, dict):
        return "not a JSON object"
    kind = payload.get("type")
    if kind is None and "command" in payload:  # a slash command's form fields carry no type
        return slash_command_problem(payload)
    if not isinstance(kind, str) or not kind:
        return "no type"
    check = _PAYLOAD_CHECKS.get(kind)
    return check(payload) if check is not None else None


def _event_callback_problem(payload: Mapping[str, Any]) -> str | None:
    event = payload.get("event")
    if not isinstance(event, dict):
        return "event_callback without an event"
    if not isinstance(event.get("type"), str) or not event["type"]:
        return "event without a type"
    if not _absent_or_string(payload.get("team_id")):
        return "team_id is not a string"
    authorizations = payload.get("authorizations", [])
    # Bolt takes the workspace from the first authorization; the listeners record it.
    if not isinstance(authorizations, list) or not all(
        isinstance(each, dict) and _absent_or_string(each.get("team_id")) for each in authorizations
    ):
        return "authorizations are not objects with a team_id"
    return None


def _url_verification_problem(payload: Mapping[str, Any]) -> str | None:
    challenge = payload.get("challenge")
    return None if isinstance(challenge, str) and challenge else "url_verification without a challenge"


def _block_actions_problem(payload: Mapping[str, Any]) -> str | None:
    actions = payload.get("actions")
    if isinstance(actions, list) and actions and all(isinstance(each, dict) for each in actions):
        return None
    return "block_actions without actions"


def _view_problem(payload: Mapping[str, Any]) -> str | None:
    # Bolt matches a view listener on view.callback_id.
    view = payload.get("view")
    if isinstance(view, dict) and _absent_or_string(view.get("callback_id")):
        return None
    return f"{payload.get('type')} without a view"


def slash_command_problem(payload: Mapping[str, Any]) -> str | None:
    """Why a slash command's fields are not ones Slack sends (Bolt reads ``command``), or None."""
    for name in ("command", "channel_id", "user_id", "response_url"):
        value = payload.get(name)
        if not isinstance(value, str) or not value:
            return f"slash command without {name}"
    if not isinstance(payload.get("text", ""), str):
        return "slash command text is not a string"
    return None


def _message_action_problem(payload: Mapping[str, Any]) -> str | None:
    # Bolt matches a shortcut listener on callback_id.
    return None if isinstance(payload.get("callback_id"), str) else "message_action without a callback_id"


_PAYLOAD_CHECKS: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "event_callback": _event_callback_problem,
    "url_verification": _url_verification_problem,
    "block_actions": _block_actions_problem,
    "view_submission": _view_problem,
    "view_closed": _view_problem,
    "message_action": _message_action_problem,
}


def mention_pattern(bot_user_id: str) -> re.Pattern[str]:
    return re.compile(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>")


def is_redelivery(headers: Mapping[str, Any]) -> bool:
    """Whether a request's headers (Bolt's, lower-cased, each a list) say Slack is sending it again."""
    tries = headers.get("x-slack-retry-num") or ["0"]
    first = tries[0] if isinstance(tries, list | tuple) else tries
    return str(first).strip() not in ("", "0")


def read_message_event(
    event: Mapping[str, Any], *, team_id: str, bot_user_id: str
) -> ChatMessage | IgnoredEvent | UnreadableEvent:
    """Turns an app_mention or message event into a ChatMessage, or says why it is not one."""
    subtype = event.get("subtype")
    if not _absent_or_string(subtype):
        return UnreadableEvent("subtype is not a string")
    if subtype in _NOT_A_NEW_MESSAGE or event.get("hidden"):
        return IgnoredEvent(f"subtype {subtype}")
    if event.get("bot_id") or event.get("bot_profile"):
        return IgnoredEvent("from a bot")
    if event.get("user") is None and subtype is not None:
        # Slack sends some kinds of message (subtypes) that no person wrote; a person's always has a user.
        return IgnoredEvent(f"subtype {subtype} without a user")
    problem = _field_problem(
        event, required=("user", "channel", "ts"), optional=("text", "thread_ts", "team")
    )
    if problem is not None:
        return UnreadableEvent(problem)
    user_id, channel_id, ts = event["user"], event["channel"], event["ts"]
    if user_id == bot_user_id:
        return IgnoredEvent("from this app")
    text = event.get("text") or ""
    thread_ts = event.get("thread_ts")
    return ChatMessage(
        team_id=event.get("team") or team_id,
        channel_id=channel_id,
        ts=ts,
        thread_ts=thread_ts if thread_ts and thread_ts != ts else None,
        user_id=user_id,
        text=text,
        mentions_bot=bool(bot_user_id) and bool(mention_pattern(bot_user_id).search(text)),
        direct=event.get("channel_type") == "im",
        files=read_shared_files(event.get("files")),
    )


def _field_problem(
    event: Mapping[str, Any], *, required: tuple[str, ...], optional: tuple[str, ...]
) -> str | None:
    for name in required:
        if not event.get(name):
            return f"no {name}"
        if not isinstance(event[name], str):
            return f"{name} is not a string"
    for name in optional:
        if not _absent_or_string(event.get(name)):
            return f"{name} is not a string"
    return None


def _absent_or_string(value: object) -> bool:
    return value is None or isinstance(value, str)


@dataclass(frozen=True)
class AppOpened:
    """A person opened the app's Messages tab (app_home_opened, tab "messages": the agent view) or
    started an assistant thread (assistant_thread_started: the legacy assistant view)."""

    user_id: str
    channel_id: str  # the person's direct-message conversation with the app
    thread_ts: str | None  # the assistant view's thread; None in the agent view (prompts go on the tab)


def home_opened_by(event: Mapping[str, Any]) -> str | None:
    """The person who opened the app's Home tab (app_home_opened, tab "home"), else None."""
    if event.get("type") != "app_home_opened" or event.get("tab") != "home":
        return None
    user = event.get("user")
    return user if isinstance(user, str) and user else None


def read_app_opened(event: Mapping[str, Any]) -> AppOpened | IgnoredEvent | UnreadableEvent:
    """Reads app_home_opened or assistant_thread_started (docs/slack-direct-messages.md)."""
    if event.get("type") == "assistant_thread_started":
        thread = event.get("assistant_thread")
        if not isinstance(thread, Mapping):
            return UnreadableEvent("assistant_thread_started without an assistant_thread")
        problem = _field_problem(thread, required=("user_id", "channel_id", "thread_ts"), optional=())
        if problem is not None:
            return UnreadableEvent(f"assistant_thread: {problem}")
        return AppOpened(thread["user_id"], thread["channel_id"], thread["thread_ts"])
    if event.get("tab") != "messages":
        return IgnoredEvent(f"app_home_opened on tab {event.get('tab')}")
    problem = _field_problem(event, required=("user", "channel"), optional=())
    if problem is not None:
        return UnreadableEvent(problem)
    return AppOpened(event["user"], event["channel"], None)


@dataclass(frozen=True)
class SessionStop:
    """A person pressed Slack's stop control of a thread's agent session (agent_session_stopped)."""

    user_id: str
    channel_id: str
    thread_ts: str


def read_session_stop(event: Mapping[str, Any]) -> SessionStop | UnreadableEvent:
    """Reads agent_session_stopped; its streaming_message_ts (the streams Slack stopped) is not
    needed: the turn's own stream learns it from its next write."""
    problem = _field_problem(event, required=("user", "channel", "thread_ts"), optional=())
    if problem is not None:
        return UnreadableEvent(f"agent_session_stopped: {problem}")
    return SessionStop(event["user"], event["channel"], event["thread_ts"])


@dataclass(frozen=True)
class SubmitPress:
    """A press of a prompt's Submit button: who pressed what, where, with the prompt's inputs."""

    value: str  # the button's value: the product's id of what the prompt asks
    team_id: str
    channel_id: str
    message_ts: str  # the prompt's message
    thread_ts: str | None
    user_id: str
    values: dict[str, Any]  # state.values: block_id → action_id → the input's value
    response_url: str  # where to answer the person who pressed
    action_id: str = ""  # which button: an approval prompt has several
    trigger_id: str = ""  # lets the app open a modal for the person, for three seconds
    reason: str | None = None  # a denial's reason, from its modal (None: not asked for yet)
    in_view: bool = False  # pressed in a view (the Home tab), not in the prompt's message


# A prompt's buttons shown outside its message (the Home tab) name the prompt in their block's id, since
# a press in a view carries no channel, message or response_url of its own.
_VIEW_PROMPT_BLOCK = "prompt"


def view_prompt_block_id(channel_id: str, prompt_ts: str, thread_ts: str) -> str:
    """The block_id of a prompt's buttons in a view: the prompt's channel, message and thread."""
    return "|".join((_VIEW_PROMPT_BLOCK, channel_id, prompt_ts, thread_ts))


def _view_prompt(block_id: object) -> tuple[str, str, str] | None:
    parts = block_id.split("|") if isinstance(block_id, str) else []
    if len(parts) != 4 or parts[0] != _VIEW_PROMPT_BLOCK or not all(parts[1:]):
        return None
    return parts[1], parts[2], parts[3]


def read_submit(payload: Mapping[str, Any], action: Mapping[str, Any]) -> SubmitPress | UnreadableEvent:
    """Reads a block_actions payload for one of its actions (a button), or says why it cannot: a press
    in a message, or of a prompt's buttons in a view (the Home tab)."""
    container = payload.get("container")
    if isinstance(container, Mapping) and container.get("type") == "view":
        return _read_view_press(payload, action)
    user = payload.get("user")
    channel = payload.get("channel")
    state = payload.get("state") or {}
    if not isinstance(user, Mapping) or not isinstance(user.get("id"), str):
        return UnreadableEvent("block_actions without a user")
    if not isinstance(channel, Mapping) or not isinstance(channel.get("id"), str):
        return UnreadableEvent("block_actions without a channel")
    if not isinstance(container, Mapping) or not isinstance(container.get("message_ts"), str):
        return UnreadableEvent("block_actions without a message")
    if not isinstance(state, Mapping) or not isinstance(state.get("values", {}), Mapping):
        return UnreadableEvent("block_actions state is not an object")
    value = action.get("value")
    if not isinstance(value, str):
        return UnreadableEvent("button without a value")
    response_url = payload.get("response_url")
    if not isinstance(response_url, str) or not response_url.startswith(("https://", "http://")):
        return UnreadableEvent("block_actions without a response_url")
    team = payload.get("team")
    thread_ts = container.get("thread_ts")
    return SubmitPress(
        value=value,
        team_id=str(team.get("id", "")) if isinstance(team, Mapping) else "",
        channel_id=channel["id"],
        message_ts=container["message_ts"],
        thread_ts=thread_ts if isinstance(thread_ts, str) else None,
        user_id=user["id"],
        values=dict(state.get("values", {})),
        response_url=response_url,
        action_id=str(action.get("action_id", "")),
        trigger_id=str(payload.get("trigger_id") or ""),
    )


def _read_view_press(payload: Mapping[str, Any], action: Mapping[str, Any]) -> SubmitPress | UnreadableEvent:
    user = payload.get("user")
    if not isinstance(user, Mapping) or not isinstance(user.get("id"), str):
        return UnreadableEvent("block_actions without a user")
    prompt = _view_prompt(action.get("block_id"))
    if prompt is None:
        return UnreadableEvent("a press in a view outside a prompt's buttons")
    value = action.get("value")
    if not isinstance(value, str):
        return UnreadableEvent("button without a value")
    team = payload.get("team")
    channel_id, prompt_ts, thread_ts = prompt
    return SubmitPress(
        value=value,
        team_id=str(team.get("id", "")) if isinstance(team, Mapping) else "",
        channel_id=channel_id,
        message_ts=prompt_ts,
        thread_ts=thread_ts,
        user_id=user["id"],
        values={},  # the view's buttons decide every tool at once (Approve all, Deny all)
        response_url="",  # a view has none: the person sees the outcome in the thread and the view
        action_id=str(action.get("action_id", "")),
        trigger_id=str(payload.get("trigger_id") or ""),
        in_view=True,
    )


@dataclass(frozen=True)
class ModalSubmission:
    """A person's submission (or closing) of a modal the app opened: who, which modal, what they typed."""

    user_id: str
    team_id: str
    callback_id: str
    private_metadata: str
    values: dict[str, Any]  # view.state.values: block_id → action_id → the input's value


def read_modal(payload: Mapping[str, Any]) -> ModalSubmission | UnreadableEvent:
    """Reads a view_submission or view_closed payload, or says why it cannot."""
    user = payload.get("user")
    view = payload.get("view")
    if not isinstance(user, Mapping) or not isinstance(user.get("id"), str):
        return UnreadableEvent(f"{payload.get('type')} without a user")
    if not isinstance(view, Mapping):
        return UnreadableEvent(f"{payload.get('type')} without a view")
    state = view.get("state") or {}
    values = state.get("values", {}) if isinstance(state, Mapping) else None
    if not isinstance(values, Mapping):
        return UnreadableEvent("view state is not an object")
    team = payload.get("team")
    return ModalSubmission(
        user_id=user["id"],
        team_id=str(team.get("id", "")) if isinstance(team, Mapping) else "",
        callback_id=str(view.get("callback_id") or ""),
        private_metadata=str(view.get("private_metadata") or ""),
        values=dict(values),
    )


def input_text(values: Mapping[str, Any], block_id: str, action_id: str) -> str:
    """The text a person typed in a plain_text_input of a submitted view ("" when empty or absent)."""
    block = values.get(block_id)
    element = block.get(action_id) if isinstance(block, Mapping) else None
    value = element.get("value") if isinstance(element, Mapping) else None
    return value if isinstance(value, str) else ""


def selected_value(values: Mapping[str, Any], block_id: str, action_id: str) -> str:
    """The value of the option chosen in a select or radio group of a submitted view ("" for none)."""
    block = values.get(block_id)
    element = block.get(action_id) if isinstance(block, Mapping) else None
    option = element.get("selected_option") if isinstance(element, Mapping) else None
    value = option.get("value") if isinstance(option, Mapping) else None
    return value if isinstance(value, str) else ""
