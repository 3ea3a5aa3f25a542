"""A person using a message's buttons and menus: block_actions payloads (docs/slack-platform.md §3.1, §4.5),
and the ``response_url`` an app answers on.

A person can only use what the message shows them, so asking for an element or option that is not
there raises ``FakeMisuse`` instead of sending a payload Slack never would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import events
from .blocks import all_options, block_problems, interactive_elements
from .errors import FakeMisuse
from .shapes import message_json, visible_blocks
from .state import Channel, Ephemeral, EventTarget, Message, ResponseUrl, SlackState, User, Workspace

RESPONSE_URL_MAX_USES = 5  # Slack honours a response_url up to five times in thirty minutes
RESPONSE_URL_LIFETIME = 30 * 60
_RESPONSE_URL_PATH = re.compile(r"^/actions/(?P<team>[^/]+)/(?P<id>[^/]+)/(?P<secret>[^/]+)$")

Choice = str | list[str]
# How an element's current value appears in state.values, by element type.
_SINGLE_OPTION_TYPES = frozenset({"static_select", "radio_buttons", "external_select"})
_MULTI_OPTION_TYPES = frozenset({"multi_static_select", "checkboxes", "multi_external_select"})
_TEXT_INPUT_TYPES = frozenset(
    {"plain_text_input", "email_text_input", "url_text_input", "number_input", "rich_text_input"}
)
_SIMPLE_VALUE_KEYS = {
    "datepicker": "selected_date",
    "timepicker": "selected_time",
    "datetimepicker": "selected_date_time",
    "users_select": "selected_user",
    "conversations_select": "selected_conversation",
    "channels_select": "selected_channel",
}


@dataclass(frozen=True)
class ActionSource:
    """What a person clicked in: a message the channel sees, or an ephemeral only they see."""

    channel: Channel
    message: Message | None = None
    ephemeral: Ephemeral | None = None

    @property
    def ts(self) -> str:
        if self.message is not None:
            return self.message.ts
        assert self.ephemeral is not None
        return self.ephemeral.ts

    @property
    def thread_ts(self) -> str | None:
        if self.message is not None:
            return self.message.thread_ts
        assert self.ephemeral is not None
        return self.ephemeral.thread_ts

    @property
    def blocks(self) -> list[dict[str, Any]]:
        if self.message is not None:
            return visible_blocks(self.message)
        assert self.ephemeral is not None
        return self.ephemeral.blocks


def find_source(state: SlackState, user: User, channel_id: str, ts: str) -> ActionSource:
    channel = state.channels.get(channel_id)
    if channel is None:
        raise FakeMisuse(f"no channel {channel_id}")
    ephemeral = state.ephemeral(user.id, ts)
    if ephemeral is not None and ephemeral.channel == channel_id:
        return ActionSource(channel, ephemeral=ephemeral)
    message = state.live_message(channel_id, ts)
    if message is None:
        raise FakeMisuse(f"{user.id} sees no message {ts} in {channel_id}")
    # Anyone in the workspace can open a public channel and use its messages without joining it.
    readable = not (channel.is_private or channel.is_im) and user.team_id == channel.team_id
    if user.id not in channel.members and not readable:
        raise FakeMisuse(f"{user.id} is not in {channel_id}, so cannot use its messages")
    return ActionSource(channel, message=message)


def find_element(
    source: ActionSource, action_id: str, block_id: str | None = None
) -> tuple[str, dict[str, Any]]:
    """(block_id, element) of the element a person uses; a block without an id gets a stand-in one."""
    for index, block in enumerate(source.blocks):
        for found_block_id, element in interactive_elements([block]):
            if element.get("action_id") == action_id and (block_id is None or found_block_id == block_id):
                return found_block_id or f"block-{index}", element
    raise FakeMisuse(
        f"message {source.ts} has no element with action_id {action_id!r}; a person cannot use it"
    )


def element_action(
    block_id: str, element: dict[str, Any], choice: Choice | None, action_ts: str
) -> dict[str, Any]:
    """One entry of a payload's ``actions``: what was clicked, or chosen, and its value."""
    action: dict[str, Any] = {
        "type": element["type"],
        "action_id": element.get("action_id"),
        "block_id": block_id,
        "action_ts": action_ts,
    }
    if element["type"] == "button":
        action["text"] = element.get("text")
        if "value" in element:
            action["value"] = element["value"]
        if "style" in element:
            action["style"] = element["style"]
        return action
    if choice is None:
        raise FakeMisuse(f"choose a value for {element.get('action_id')!r}")
    action.update(_value_entry(element, choice))
    return action


def state_values(blocks: list[dict[str, Any]], choices: Mapping[str, Choice]) -> dict[str, dict[str, Any]]:
    """``state.values`` of a surface: every stateful element, with the person's choices or its initial value."""
    values: dict[str, dict[str, Any]] = {}
    unused = dict(choices)
    for index, block in enumerate(blocks):
        for block_id, element in interactive_elements([block]):
            kind = element.get("type")
            action_id = element.get("action_id")
            if kind in ("button", "overflow") or not isinstance(action_id, str):
                continue
            choice = unused.pop(action_id, None)
            entry = _value_entry(element, choice) if choice is not None else _initial_entry(element)
            values.setdefault(block_id or f"block-{index}", {})[action_id] = entry
    if unused:
        raise FakeMisuse(f"no input with action_id {sorted(unused)} in this message")
    return values


def block_actions_payload(
    state: SlackState,
    workspace: Workspace,
    target: EventTarget,
    source: ActionSource,
    user: User,
    actions: list[dict[str, Any]],
    values: dict[str, Any],
    *,
    response_url: str,
    trigger_id: str,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "type": "message",
        "message_ts": source.ts,
        "channel_id": source.channel.id,
        "is_ephemeral": source.ephemeral is not None,
    }
    if source.thread_ts:
        container["thread_ts"] = source.thread_ts
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user.id, "username": user.name, "name": user.name, "team_id": user.team_id},
        "api_app_id": workspace.app.app_id,
        "token": target.verification_token,
        "container": container,
        "trigger_id": trigger_id,
        "team": {"id": workspace.team_id, "domain": workspace.domain},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": source.channel.id, "name": source.channel.name},
        "state": {"values": values},
        "response_url": response_url,
        "actions": actions,
    }
    if source.message is not None:  # absent for ephemeral sources: use container
        payload["message"] = message_json(state, source.message)
    return payload


def register_response_url(
    state: SlackState, workspace: Workspace, source: ActionSource, user: User
) -> ResponseUrl:
    response_url = ResponseUrl(
        id=state.new_id("R"),
        team_id=workspace.team_id,
        channel=source.channel.id,
        user=user.id,
        message_ts=source.ts,
        is_ephemeral=source.ephemeral is not None,
        created_at=state.now(),
    )
    state.response_urls[response_url.id] = response_url
    return response_url


def apply_response_url(
    state: SlackState, path: str, payload: dict[str, Any]
) -> tuple[int, dict[str, Any], str | None, list[dict[str, Any]]]:
    """Carry out a POST to a response_url: (HTTP status, body, team id, events it makes Slack send)."""
    match = _RESPONSE_URL_PATH.match(path)
    target = state.response_urls.get(match.group("id")) if match else None
    if target is None:
        return 404, {"ok": False, "error": "no_active_hooks"}, None, []
    if target.uses >= RESPONSE_URL_MAX_USES:
        return 404, {"ok": False, "error": "used_url"}, target.team_id, []
    if state.now() > target.created_at + RESPONSE_URL_LIFETIME:
        return 404, {"ok": False, "error": "expired_url"}, target.team_id, []
    blocks = payload.get("blocks")
    if blocks is not None and block_problems(
        blocks, allow_task_cards=state.workspace(target.team_id).task_cards_enabled
    ):
        return 400, {"ok": False, "error": "invalid_blocks"}, target.team_id, []
    target.uses += 1
    emitted: list[dict[str, Any]] = []
    workspace = state.workspace(target.team_id)
    channel = state.channels[target.channel]
    text = payload.get("text", "")
    if payload.get("delete_original") or payload.get("replace_original"):
        _change_original(state, target, channel, payload, emitted)
    elif payload.get("response_type") == "in_channel":
        message = Message(
            channel=channel.id,
            ts=state.next_ts(),
            team_id=workspace.team_id,
            text=text,
            blocks=blocks or [],
            user=workspace.app.bot_user_id,
            bot_id=workspace.app.bot_id,
            app_id=workspace.app.app_id,
            thread_ts=payload.get("thread_ts"),
        )
        state.add_message(message)
        emitted.append(events.message_event(state, message, channel))
    else:
        state.ephemerals.append(
            Ephemeral(
                ts=state.next_ts(),
                channel=channel.id,
                user=target.user,
                text=text,
                blocks=blocks or [],
                # Shown beside the message that was pressed: in its thread when it is in one.
                thread_ts=payload.get("thread_ts") or _thread_of(state, target),
                bot_id=workspace.app.bot_id,
            )
        )
    return 200, {"ok": True}, target.team_id, emitted


def _thread_of(state: SlackState, target: ResponseUrl) -> str | None:
    message = state.live_message(target.channel, target.message_ts)
    return message.thread_ts if message is not None else None


def _change_original(
    state: SlackState,
    target: ResponseUrl,
    channel: Channel,
    payload: dict[str, Any],
    emitted: list[dict[str, Any]],
) -> None:
    if target.is_ephemeral:
        ephemeral = state.ephemeral(target.user, target.message_ts)
        if ephemeral is None:
            return
        if payload.get("delete_original"):
            ephemeral.deleted = True
        else:
            ephemeral.text = payload.get("text", "")
            ephemeral.blocks = payload.get("blocks") or []
        return
    message = state.live_message(channel.id, target.message_ts)
    if message is None:
        return
    previous = message_json(state, message, include_metadata=False)
    if payload.get("delete_original"):
        message.deleted = True
        emitted.append(events.message_deleted_event(previous, channel, state.next_ts()))
    else:
        message.text = payload.get("text", "")
        message.blocks = payload.get("blocks") or []
        if message.stream is not None:
            message.stream.superseded = True
        emitted.append(events.message_changed_event(state, message, previous, channel, state.next_ts()))


def _value_entry(element: dict[str, Any], choice: Choice) -> dict[str, Any]:
    kind = element["type"]
    chosen = [choice] if isinstance(choice, str) else list(choice)
    if kind in _SINGLE_OPTION_TYPES or kind in _MULTI_OPTION_TYPES or kind == "overflow":
        options = {
            str(option.get("value")): option for option in all_options(element) if isinstance(option, dict)
        }
        missing = [value for value in chosen if value not in options]
        if missing:
            raise FakeMisuse(
                f"{element.get('action_id')!r} offers no option {missing}; options: {sorted(options)}"
            )
        if kind in _MULTI_OPTION_TYPES:
            return {"type": kind, "selected_options": [options[value] for value in chosen]}
        if len(chosen) != 1:
            raise FakeMisuse(f"{element.get('action_id')!r} takes exactly one option")
        return {"type": kind, "selected_option": options[chosen[0]]}
    if len(chosen) != 1:
        raise FakeMisuse(f"{element.get('action_id')!r} takes one value")
    if kind in _TEXT_INPUT_TYPES:
        return {"type": kind, "value": chosen[0]}
    if kind in _SIMPLE_VALUE_KEYS:
        return {"type": kind, _SIMPLE_VALUE_KEYS[kind]: chosen[0]}
    raise FakeMisuse(f"the fake cannot set a value on a {kind} element")


def _initial_entry(element: dict[str, Any]) -> dict[str, Any]:
    kind = element["type"]
    if kind in _MULTI_OPTION_TYPES:
        return {"type": kind, "selected_options": list(element.get("initial_options") or [])}
    if kind in _SINGLE_OPTION_TYPES:
        return {"type": kind, "selected_option": element.get("initial_option")}
    if kind in _TEXT_INPUT_TYPES:
        return {"type": kind, "value": element.get("initial_value")}
    if kind in _SIMPLE_VALUE_KEYS:
        initial_key = _SIMPLE_VALUE_KEYS[kind].replace("selected_", "initial_")
        return {"type": kind, _SIMPLE_VALUE_KEYS[kind]: element.get(initial_key)}
    return {"type": kind}
