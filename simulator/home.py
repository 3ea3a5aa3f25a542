"""The app's Home tab: views.publish, and a person opening the tab (docs/slack-platform.md §7).

As Slack does it (docs.slack.dev: views.publish, app_home_opened):

- ``views.publish`` takes ``user_id`` and ``view`` (a JSON-encoded ``home`` view: at most 100 blocks,
  each checked as a message's are, ``callback_id`` up to 255 characters, ``private_metadata`` up to
  3000, 250 kB at most: ``view_too_large``) and an optional ``hash``: the published view's, else
  ``hash_conflict``. A workspace whose app has no Home tab answers ``not_enabled``. A user the
  workspace does not have answers ``user_not_found`` (chosen here: Slack's page names no error for it).
  Its answer is the view with what Slack adds (``id``, ``hash``, ``team_id``, ``app_id``, ``bot_id``,
  ``state``). Tier 4, counted per person: each person's Home tab has its own 100 a minute here.
- A person opening the tab makes Slack send ``app_home_opened`` with ``tab: "home"`` and, once one was
  published for them, the ``view``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from .blocks import block_problems, interactive_elements
from .errors import FakeMisuse, SlackError, invalid_arguments
from .modals import MAX_CALLBACK_ID, MAX_MODAL_BLOCKS, MAX_PRIVATE_METADATA, checked_view
from .state import SlackState, Workspace
from .web_api import Call, web_method


@dataclass
class HomeView:
    """The Home tab the app published for one person."""

    id: str
    team_id: str
    user_id: str
    view: dict[str, Any]
    hash: str
    published_at: float
    publishes: int = 1


def home_key(team_id: str, user_id: str) -> tuple[str, str]:
    return (team_id, user_id)


@web_method("views.publish")
def views_publish(call: Call) -> dict[str, Any]:
    user_id = call.args.text("user_id")
    if not user_id:
        raise invalid_arguments("missing required field: user_id")
    view = checked_view(call, home_view_problems)
    if not call.workspace.home_tab_enabled:
        raise SlackError("not_enabled")
    if call.state.user_in(call.workspace.team_id, user_id) is None:
        raise SlackError("user_not_found")
    key = home_key(call.workspace.team_id, user_id)
    published = call.state.home_views.get(key)
    given_hash = call.args.text("hash")
    if given_hash and (published is None or published.hash != given_hash):
        raise SlackError("hash_conflict")
    new_hash = f"{int(call.now)}.{secrets.token_hex(4)}"
    if published is None:
        published = HomeView(
            call.state.new_id("V"), call.workspace.team_id, user_id, view, new_hash, call.now
        )
        call.state.home_views[key] = published
    else:
        published.view, published.hash, published.published_at = view, new_hash, call.now
        published.publishes += 1
    return {"ok": True, "view": home_view_json(call.workspace, published)}


def home_view_problems(view: dict[str, Any]) -> list[str]:
    """What Slack refuses in a Home tab view, as its ``[ERROR]`` messages word it (without the prefix)."""
    problems: list[str] = []
    if view.get("type") != "home":
        problems.append("must be home [json-pointer:/view/type]")
    blocks = view.get("blocks")
    if not isinstance(blocks, list):
        problems.append("must provide an array [json-pointer:/view/blocks]")
    else:
        problems += block_problems(
            blocks, allow_task_cards=False, max_blocks=MAX_MODAL_BLOCKS, pointer="/view/blocks"
        )
    for name, limit in (("callback_id", MAX_CALLBACK_ID), ("private_metadata", MAX_PRIVATE_METADATA)):
        value = view.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            problems.append(f"must be a string [json-pointer:/view/{name}]")
        elif len(value) > limit:
            problems.append(f"must be less than {limit + 1} characters [json-pointer:/view/{name}]")
    return problems


def home_view_json(workspace: Workspace, published: HomeView) -> dict[str, Any]:
    return {
        "id": published.id,
        "team_id": published.team_id,
        "type": "home",
        "blocks": published.view.get("blocks", []),
        "private_metadata": published.view.get("private_metadata", ""),
        "callback_id": published.view.get("callback_id", ""),
        "external_id": published.view.get("external_id", ""),
        "state": {"values": {}},
        "hash": published.hash,
        "clear_on_close": False,
        "notify_on_close": False,
        "close": None,
        "submit": None,
        "root_view_id": published.id,
        "previous_view_id": None,
        "app_id": workspace.app.app_id,
        "bot_id": workspace.app.bot_id,
    }


def app_home_opened_event(
    state: SlackState, workspace: Workspace, user_id: str, channel_id: str
) -> dict[str, Any]:
    """``app_home_opened`` on the Home tab, with the view published for the person if there is one."""
    event: dict[str, Any] = {
        "type": "app_home_opened",
        "user": user_id,
        "channel": channel_id,
        "tab": "home",
        "event_ts": state.next_ts(),
    }
    published = state.home_views.get(home_key(workspace.team_id, user_id))
    if published is not None:
        event["view"] = home_view_json(workspace, published)
    return event


def home_block_actions_payload(
    state: SlackState,
    workspace: Workspace,
    verification_token: str,
    published: HomeView,
    user_id: str,
    user_name: str,
    action: dict[str, Any],
    trigger_id: str,
) -> dict[str, Any]:
    """A press of a button in the person's Home tab: ``container.type`` "view", the view whole, no
    channel, no message, no response_url (Slack sends none for a view)."""
    return {
        "type": "block_actions",
        "user": {"id": user_id, "username": user_name, "name": user_name, "team_id": workspace.team_id},
        "api_app_id": workspace.app.app_id,
        "token": verification_token,
        "container": {"type": "view", "view_id": published.id},
        "trigger_id": trigger_id,
        "team": {"id": workspace.team_id, "domain": workspace.domain},
        "enterprise": None,
        "is_enterprise_install": False,
        "view": home_view_json(workspace, published),
        "actions": [action],
    }


def find_button(published: HomeView, action_id: str, block_id: str | None) -> tuple[str, dict[str, Any]]:
    """(block_id, element) of a button the person can see in their Home tab."""
    for index, block in enumerate(published.view.get("blocks", [])):
        for found_block_id, element in interactive_elements([block]):
            if element.get("action_id") == action_id and (block_id is None or found_block_id == block_id):
                return found_block_id or f"block-{index}", element
    raise FakeMisuse(f"the Home tab has no element with action_id {action_id!r}; a person cannot use it")
