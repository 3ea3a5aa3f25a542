"""The requests Slack sends to an app, signed and ready to send: Events API envelopes and interactivity payloads.

Only workspaces told where their app lives (``SlackFake.deliver_events_to``) get requests.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlencode

from . import events, home, interactivity, modals, surfaces
from .delivery import Delivery, Outgoing
from .errors import FakeMisuse
from .modal_state import OpenView
from .shapes import mentioned_users
from .state import Channel, EventTarget, Message, SlackState, User, Workspace

DeliverWhich = Literal["both", "app_mention", "message", "none"]
DeliveryOrder = Literal["app_mention_first", "message_first"]


class AppRequests:
    def __init__(self, state: SlackState, server_root: Callable[[], str]) -> None:
        """``server_root``: the fake's own base URL ("http://127.0.0.1:<port>/"), for response_url values."""
        self._state = state
        self._server_root = server_root
        self._event_ids = events.EventIds()

    def target(self, workspace: Workspace) -> EventTarget:
        if workspace.events is None:
            raise FakeMisuse(f"call deliver_events_to() for {workspace.team_id} first")
        return workspace.events

    def for_new_message(
        self, message: Message, deliver: DeliverWhich, order: DeliveryOrder
    ) -> list[Outgoing]:
        """The events a new message makes Slack send: ``message``, and ``app_mention`` when it mentions the app."""
        channel = self._state.channels[message.channel]
        workspace = self._state.workspace(channel.team_id)
        if workspace.events is None or workspace.app.bot_user_id not in channel.members:
            return []  # Slack sends channel events only to apps in the channel
        # "Messages sent to your app in direct message conversations are not dispatched via app_mention."
        mentions_app = not channel.is_im and workspace.app.bot_user_id in mentioned_users(message.text)
        mention = events.app_mention_event(self._state, message, channel) if mentions_app else None
        plain = events.message_event(self._state, message, channel)
        by_choice: dict[DeliverWhich, list[dict[str, Any] | None]] = {
            "both": [mention, plain],
            "app_mention": [mention],
            "message": [plain],
            "none": [],
        }
        chosen = by_choice[deliver]
        if order == "message_first":
            chosen.reverse()
        return [self.event(workspace, event) for event in chosen if event is not None]

    def for_channel_event(self, channel: Channel, event: dict[str, Any]) -> list[Outgoing]:
        """An event in this channel, if its workspace has an app endpoint."""
        workspace = self._state.workspace(channel.team_id)
        return [self.event(workspace, event)] if workspace.events is not None else []

    def event(self, workspace: Workspace, event: dict[str, Any]) -> Outgoing:
        target = self.target(workspace)
        event_id = self._event_ids.next()
        body = events.envelope(workspace, target, event, event_id, int(self._state.now()))
        kind = event.get("subtype") or event["type"]
        return self.signed(workspace, kind, json.dumps(body).encode(), event_id=event_id)

    def url_verification(self, workspace: Workspace, challenge: str) -> Outgoing:
        body = events.url_verification(self.target(workspace), challenge)
        return self.signed(workspace, "url_verification", json.dumps(body).encode())

    def response_url(self, person: User, source: interactivity.ActionSource) -> str:
        """A response_url for a press of ``person`` on ``source``, registered as a press registers one."""
        workspace = self._state.workspace(source.channel.team_id)
        registered = interactivity.register_response_url(self._state, workspace, source, person)
        return f"{self._server_root()}actions/{workspace.team_id}/{registered.id}/{secrets.token_urlsafe(12)}"

    def block_actions(
        self,
        person: User,
        source: interactivity.ActionSource,
        actions: list[dict[str, Any]],
        values: dict[str, Any],
    ) -> Outgoing:
        """A form body with one ``payload`` field, as Slack sends interactivity (docs/slack-platform.md
        §4.3)."""
        workspace = self._state.workspace(source.channel.team_id)
        response_url = interactivity.register_response_url(self._state, workspace, source, person)
        payload = interactivity.block_actions_payload(
            self._state,
            workspace,
            self.target(workspace),
            source,
            person,
            actions,
            values,
            response_url=f"{self._server_root()}actions/{workspace.team_id}/{response_url.id}/"
            f"{secrets.token_urlsafe(12)}",
            trigger_id=modals.issue_trigger(self._state, workspace.team_id, person.id),
        )
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return self.signed(workspace, "block_actions", body, content_type="application/x-www-form-urlencoded")

    def slash_command(self, person: User, channel: Channel, command: str, text: str) -> Outgoing:
        """The form fields of a typed slash command, signed (not a ``payload`` field: docs/slack-platform.md §7)."""
        workspace = self._state.workspace(channel.team_id)
        registered = surfaces.command_response_url(self._state, workspace, channel, person)
        fields = surfaces.slash_command_fields(
            workspace,
            self.target(workspace),
            channel,
            person,
            command,
            text,
            response_url=self._response_url_of(workspace, registered.id),
            trigger_id=modals.issue_trigger(self._state, workspace.team_id, person.id),
        )
        return self.signed(
            workspace,
            "slash_command",
            urlencode(fields).encode(),
            content_type="application/x-www-form-urlencoded",
        )

    def message_action(self, person: User, source: interactivity.ActionSource, callback_id: str) -> Outgoing:
        workspace = self._state.workspace(source.channel.team_id)
        registered = interactivity.register_response_url(self._state, workspace, source, person)
        payload = surfaces.message_action_payload(
            self._state,
            workspace,
            self.target(workspace),
            source,
            person,
            callback_id,
            response_url=self._response_url_of(workspace, registered.id),
            trigger_id=modals.issue_trigger(self._state, workspace.team_id, person.id),
        )
        return self._interactive(workspace, "message_action", payload)

    def home_block_actions(self, person: User, published: home.HomeView, action: dict[str, Any]) -> Outgoing:
        workspace = self._state.workspace(published.team_id)
        payload = home.home_block_actions_payload(
            self._state,
            workspace,
            self.target(workspace).verification_token,
            published,
            person.id,
            person.name,
            action,
            modals.issue_trigger(self._state, workspace.team_id, person.id),
        )
        return self._interactive(workspace, "block_actions", payload)

    def _response_url_of(self, workspace: Workspace, registered_id: str) -> str:
        return f"{self._server_root()}actions/{workspace.team_id}/{registered_id}/{secrets.token_urlsafe(12)}"

    def view_submission(self, person: User, opened: OpenView, values: dict[str, Any]) -> Outgoing:
        workspace = self._state.workspace(opened.team_id)
        trigger_id = modals.issue_trigger(self._state, workspace.team_id, person.id)
        payload = modals.view_submission_payload(
            workspace, self.target(workspace), person, opened, values, trigger_id
        )
        return self._interactive(workspace, "view_submission", payload)

    def view_closed(self, person: User, opened: OpenView) -> Outgoing:
        workspace = self._state.workspace(opened.team_id)
        payload = modals.view_closed_payload(workspace, self.target(workspace), person, opened)
        return self._interactive(workspace, "view_closed", payload)

    def _interactive(self, workspace: Workspace, kind: str, payload: dict[str, Any]) -> Outgoing:
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return self.signed(workspace, kind, body, content_type="application/x-www-form-urlencoded")

    def retry(self, delivery: Delivery, retry_num: int, reason: str) -> Outgoing:
        """The same body and event_id again, freshly signed, with Slack's retry headers (§4.2)."""
        if delivery.team_id is None:
            raise FakeMisuse("only deliveries to a workspace's app can be sent again")
        outgoing = self.signed(
            self._state.workspace(delivery.team_id),
            delivery.kind,
            delivery.body,
            event_id=delivery.event_id,
            content_type=delivery.headers.get("Content-Type", "application/json"),
            retry_num=retry_num,
        )
        outgoing.headers.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": reason})
        return outgoing

    def signed(
        self,
        workspace: Workspace,
        kind: str,
        body: bytes,
        *,
        event_id: str | None = None,
        sign: events.SignMode = "valid",
        content_type: str = "application/json",
        retry_num: int = 0,
    ) -> Outgoing:
        target = self.target(workspace)
        # Signatures use the wall clock, not the fake's: the app checks them against its own.
        headers = events.signed_headers(
            target.signing_secret, body, now=time.time(), mode=sign, content_type=content_type
        )
        return Outgoing(kind, target.url, body, headers, event_id, retry_num, workspace.team_id)
