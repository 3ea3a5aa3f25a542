"""Modals: views.open, and a person submitting or closing the modal the app opened for them.

As Slack does it (docs.slack.dev: views.open, "Handling user interaction in modals"; docs/slack-modals.md
sums up what the fake follows):

- a trigger_id comes with a person's action (block_actions here) and can be exchanged once, within
  three seconds: ``invalid_trigger_id`` for one Slack never issued (or to another workspace),
  ``expired_trigger_id`` past three seconds, ``exchanged_trigger_id`` the second time;
- the view is checked: a ``modal`` with a plain_text title of at most 24 characters, submit and
  close texts of at most 24, at most 100 blocks (each checked as a message's are), a submit button
  when it has input blocks, ``callback_id`` up to 255 characters, ``private_metadata`` up to 3000;
  anything else is ``invalid_arguments`` with Slack's ``[ERROR] ... [json-pointer:...]`` messages;
- submitting sends ``view_submission`` (its ``view.state.values``), signed like any interactivity
  request, over HTTP or Socket Mode; the app's answer (``response_action``) decides what the person
  sees next: ``errors`` keeps the modal open with the messages under the inputs, ``update`` replaces
  it, nothing (or ``clear``) closes it;
- closing sends ``view_closed`` only when the view set ``notify_on_close``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .blocks import block_problems, interactive_elements
from .errors import FakeMisuse, SlackError, invalid_arguments
from .interactivity import state_values
from .modal_state import OpenView, Trigger
from .state import EventTarget, SlackState, User, Workspace
from .web_api import Call, web_method

TRIGGER_LIFETIME = 3.0
MAX_TITLE = 24
MAX_BUTTON_TEXT = 24
MAX_MODAL_BLOCKS = 100
MAX_PRIVATE_METADATA = 3000
MAX_CALLBACK_ID = 255
MAX_VIEW_BYTES = 250_000  # view_too_large


def issue_trigger(state: SlackState, team_id: str, user_id: str) -> str:
    """A trigger_id for an action of ``user_id``, in Slack's "<seconds>.<number>.<hex>" shape."""
    trigger_id = f"{int(state.now())}.{secrets.randbelow(10**12)}.{secrets.token_hex(16)}"
    state.modals.triggers[trigger_id] = Trigger(trigger_id, team_id, user_id, state.now())
    return trigger_id


@web_method("views.open")
def views_open(call: Call) -> dict[str, Any]:
    trigger = _exchangeable_trigger(call)
    view = checked_view(call, view_problems)
    trigger.exchanged = True
    opened = OpenView(
        id=call.state.new_id("V"),
        team_id=call.workspace.team_id,
        user_id=trigger.user_id,
        app_id=call.app.app_id,
        bot_id=call.app.bot_id,
        view=view,
        hash=f"{int(call.now)}.{secrets.token_hex(4)}",
        opened_at=call.now,
    )
    call.state.modals.views[opened.id] = opened
    return {"ok": True, "view": view_json(opened)}


def _exchangeable_trigger(call: Call) -> Trigger:
    trigger_id = call.args.text("trigger_id") or call.args.text("interactivity_pointer")
    if not trigger_id:
        raise invalid_arguments("missing required field: trigger_id")
    trigger = call.state.modals.triggers.get(trigger_id)
    if trigger is None or trigger.team_id != call.workspace.team_id:
        raise SlackError("invalid_trigger_id")
    if trigger.exchanged:
        raise SlackError("exchanged_trigger_id")
    if call.now > trigger.issued_at + TRIGGER_LIFETIME:
        raise SlackError("expired_trigger_id")
    return trigger


def checked_view(call: Call, problems_of: Callable[[dict[str, Any]], list[str]]) -> dict[str, Any]:
    """The call's ``view`` argument (a JSON object or its text) once Slack would take it: refused as
    Slack words it (too large, not an object, ``problems_of`` it) otherwise. Modals and Home tabs alike."""
    raw = call.args.raw("view")
    if raw is None:
        raise invalid_arguments("missing required field: view")
    if isinstance(raw, str):
        if len(raw.encode()) > MAX_VIEW_BYTES:
            raise SlackError("view_too_large")
        try:
            raw = json.loads(raw)
        except ValueError:
            raise invalid_arguments("view must be a JSON object [json-pointer:/view]") from None
    if not isinstance(raw, dict):
        raise invalid_arguments("view must be a JSON object [json-pointer:/view]")
    problems = problems_of(raw)
    if problems:
        raise invalid_arguments(*problems)
    return raw


def view_problems(view: dict[str, Any]) -> list[str]:
    """Everything Slack refuses in a modal view, as its ``[ERROR]`` messages word it (without the prefix)."""
    problems: list[str] = []
    if view.get("type") != "modal":
        problems.append("must be modal [json-pointer:/view/type]")
    problems += _plain_text_problems(view.get("title"), "title", required=True)
    problems += _plain_text_problems(view.get("submit"), "submit", required=False)
    problems += _plain_text_problems(view.get("close"), "close", required=False)
    blocks = view.get("blocks")
    if not isinstance(blocks, list):
        problems.append("must provide an array [json-pointer:/view/blocks]")
    else:
        problems += block_problems(
            blocks, allow_task_cards=False, max_blocks=MAX_MODAL_BLOCKS, pointer="/view/blocks"
        )
        has_inputs = any(isinstance(b, dict) and b.get("type") == "input" for b in blocks)
        if has_inputs and view.get("submit") is None:
            problems.append("submit is required when a view has input blocks [json-pointer:/view/submit]")
    for name, limit in (("callback_id", MAX_CALLBACK_ID), ("private_metadata", MAX_PRIVATE_METADATA)):
        value = view.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            problems.append(f"must be a string [json-pointer:/view/{name}]")
        elif len(value) > limit:
            problems.append(f"must be less than {limit + 1} characters [json-pointer:/view/{name}]")
    return problems


def _plain_text_problems(value: Any, name: str, *, required: bool) -> list[str]:
    pointer = f"[json-pointer:/view/{name}]"
    if value is None:
        return [f"missing required field: {name} {pointer}"] if required else []
    if (
        not isinstance(value, dict)
        or value.get("type") != "plain_text"
        or not isinstance(value.get("text"), str)
    ):
        return [f"must be a plain_text text object {pointer}"]
    limit = MAX_TITLE if name == "title" else MAX_BUTTON_TEXT
    if not value["text"]:
        return [f"must be more than 0 characters [json-pointer:/view/{name}/text]"]
    if len(value["text"]) > limit:
        return [f"must be less than {limit + 1} characters [json-pointer:/view/{name}/text]"]
    return []


def view_json(opened: OpenView, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """The view as Slack shows it to the app: the app's fields and Slack's own."""
    view = opened.view
    return {
        "id": opened.id,
        "team_id": opened.team_id,
        "type": "modal",
        "blocks": view.get("blocks", []),
        "private_metadata": view.get("private_metadata", ""),
        "callback_id": view.get("callback_id", ""),
        "state": {"values": values or {}},
        "hash": opened.hash,
        "title": view.get("title"),
        "clear_on_close": bool(view.get("clear_on_close", False)),
        "notify_on_close": opened.notify_on_close,
        "close": view.get("close"),
        "submit": view.get("submit"),
        "previous_view_id": None,
        "root_view_id": opened.id,
        "app_id": opened.app_id,
        "external_id": view.get("external_id", ""),
        "app_installed_team_id": opened.team_id,
        "bot_id": opened.bot_id,
    }


def find_open_view(state: SlackState, user: User, view_id: str | None) -> OpenView:
    """The modal ``user`` has open (the given one, or their only one)."""
    open_views = state.modals.open_for(user.id)
    if view_id is not None:
        open_views = [view for view in open_views if view.id == view_id]
    if not open_views:
        raise FakeMisuse(f"{user.id} has no modal open" + (f" with id {view_id}" if view_id else ""))
    if len(open_views) > 1:
        raise FakeMisuse(f"{user.id} has several modals open; name one: {[v.id for v in open_views]}")
    return open_views[0]


def submitted_values(opened: OpenView, choices: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``view.state.values`` of a submission: every input, with what the person typed or chose.

    The Slack client does not submit a modal whose required input is empty or whose text is longer
    than its ``max_length``: asking for that is a misuse of the fake.
    """
    values = state_values(opened.blocks, choices)
    for block in opened.blocks:
        if block.get("type") != "input" or block.get("optional"):
            continue
        for block_id, element in interactive_elements([block]):
            entry = values.get(block_id or "", {}).get(str(element.get("action_id")), {})
            if not any(entry.get(key) for key in ("value", "selected_option", "selected_options")):
                raise FakeMisuse(f"the input {block_id!r} is required; Slack would not submit the modal")
    for block_id, element in interactive_elements(opened.blocks):
        limit = element.get("max_length")
        typed = choices.get(str(element.get("action_id", "")))
        if isinstance(limit, int) and isinstance(typed, str) and len(typed) > limit:
            raise FakeMisuse(f"{block_id!r} takes at most {limit} characters; Slack would not submit it")
    return values


def view_submission_payload(
    workspace: Workspace,
    target: EventTarget,
    user: User,
    opened: OpenView,
    values: dict[str, Any],
    trigger_id: str,
) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "team": {"id": workspace.team_id, "domain": workspace.domain},
        "user": _user_json(user),
        "api_app_id": workspace.app.app_id,
        "token": target.verification_token,
        "trigger_id": trigger_id,
        "view": view_json(opened, values),
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def view_closed_payload(
    workspace: Workspace, target: EventTarget, user: User, opened: OpenView
) -> dict[str, Any]:
    return {
        "type": "view_closed",
        "team": {"id": workspace.team_id, "domain": workspace.domain},
        "user": _user_json(user),
        "api_app_id": workspace.app.app_id,
        "token": target.verification_token,
        "view": view_json(opened),
        "is_cleared": False,
        "is_enterprise_install": False,
        "enterprise": None,
    }


def apply_submission_answer(opened: OpenView, answer: bytes) -> None:
    """What the person sees after submitting, by the app's ack (``response_action``)."""
    try:
        body = json.loads(answer) if answer.strip() else {}
    except ValueError:
        body = {}
    action = body.get("response_action") if isinstance(body, dict) else None
    if action == "errors" and isinstance(body.get("errors"), dict):
        opened.errors = {str(key): str(value) for key, value in body["errors"].items()}
        return
    if action == "update" and isinstance(body.get("view"), dict) and not view_problems(body["view"]):
        opened.view = body["view"]
        opened.errors = {}
        return
    opened.closed = True
    opened.close_reason = "cleared" if action == "clear" else "submitted"


def _user_json(user: User) -> dict[str, Any]:
    return {"id": user.id, "username": user.name, "name": user.name, "team_id": user.team_id}


def modal_view(opened: OpenView) -> ModalView:
    return ModalView(
        id=opened.id,
        user=opened.user_id,
        title=opened.title,
        callback_id=opened.callback_id,
        private_metadata=opened.private_metadata,
        blocks=opened.blocks,
        errors=dict(opened.errors),
        closed=opened.closed,
        close_reason=opened.close_reason,
    )


@dataclass(frozen=True)
class ModalView:
    """A modal as the person sees it (for tests, and the simulator's page)."""

    id: str
    user: str
    title: str
    callback_id: str
    private_metadata: str
    blocks: list[dict[str, Any]]
    errors: dict[str, str]  # block_id -> the message the app's response_action put under it
    closed: bool
    close_reason: str | None
