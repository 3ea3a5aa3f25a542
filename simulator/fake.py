"""SlackFake: a Slack that the app under test talks to over real HTTP, and the people who use it.

The app's real slack_sdk clients call ``fake.url``; tests set the world up (workspaces, people,
channels), make people act (say something, press a button), inject faults, and read back what a
person would see and which calls the app made.
"""

from __future__ import annotations

import json
import secrets
import ssl
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from . import agent_sessions, agent_view, events, files, home, interactivity, modals, streams
from .app_requests import AppRequests, DeliverWhich, DeliveryOrder
from .clock import Clock, SystemClock
from .delivery import ACK_TIMEOUT, Deliverer, Delivery, Outgoing
from .errors import FakeMisuse
from .faults import ArgsPredicate, Fault, FaultPlan
from .methods import current_assistant_status
from .modals import ModalView
from .pipeline import HttpAnswer, HttpRequest, RecordedCall, WebApi
from .rate_limits import RateLimiter
from .server import FakeHttpServer
from .shapes import message_json, rich_text_blocks
from .socket_mode import DEFAULT_RETRY_DELAYS, SocketConnection, SocketEnvelope, SocketModeServer
from .state import (
    DEFAULT_STREAM_LIFETIME,
    AppInstall,
    AssistantStatusSupport,
    Channel,
    EventTarget,
    Message,
    SlackState,
    User,
    UserGroup,
    Workspace,
    opened_im,
)
from .views import EphemeralView, MessageView, ephemeral_view, message_view, thread_view

Choice = interactivity.Choice


class SlackFake:
    def __init__(
        self,
        *,
        clock: Clock | None = None,
        rate_limits: bool = False,
        rate_limit_multiplier: float = 1.0,
        stream_lifetime: float = DEFAULT_STREAM_LIFETIME,
        ack_timeout: float = ACK_TIMEOUT,
        socket_retry_delays: tuple[float, ...] = DEFAULT_RETRY_DELAYS,
        port: int = 0,
        public_host: str = "127.0.0.1",
        socket_tls: ssl.SSLContext | None = None,
    ) -> None:
        """``rate_limits=True`` enforces Slack's budgets per workspace and method (rate_limits.py: the
        load tests, the benchmarks, the demo); off, the default (the functional tests), admits every
        call. ``rate_limit_multiplier`` scales every budget.

        ``stream_lifetime`` is the default for workspaces added later (Slack: about five minutes).
        ``ack_timeout`` is how long deliveries wait for the app's 2xx or its Socket Mode ack (Slack:
        three seconds). ``socket_retry_delays``: when Slack sends an unacked Socket Mode event again
        (Slack: nearly at once, ~1 min, ~5 min). ``port``: where the Web API listens (0: a free port).
        ``public_host``: the host name the fake gives in the URLs it hands the app (its Web API's,
        response_urls, Socket Mode links), as Slack gives slack.com and wss-primary.slack.com; it still
        listens on 127.0.0.1 (the egress proxy test names a host only its proxy resolves).
        ``socket_tls``: Socket Mode links are wss, served with this context (Slack's are wss).
        """
        self.public_host = public_host
        self.clock = clock or SystemClock()
        self.rate_limits = RateLimiter(self.clock, enabled=rate_limits, multiplier=rate_limit_multiplier)
        self._state = SlackState(self.clock)
        self._faults = FaultPlan()
        self._default_stream_lifetime = stream_lifetime
        self._deliveries: list[Delivery] = []
        self._deliverer = Deliverer(self._record_delivery, ack_timeout)
        self._api = WebApi(self._state, self.rate_limits, self._faults, self._echo_to_app)
        self._mounts: dict[str, Callable[[HttpRequest], HttpAnswer]] = {}
        self._server = FakeHttpServer(
            self._route, port, public_host="" if public_host == "127.0.0.1" else public_host
        )
        self._socket = SocketModeServer(
            self._notify_changed,
            self._record_delivery,
            ack_timeout=ack_timeout,
            retry_delays=socket_retry_delays,
            public_host=public_host,
            tls=socket_tls,
        )
        self._api.open_socket = lambda workspace: self._socket.issue_url(
            workspace.team_id, workspace.app.app_id
        )
        self._requests = AppRequests(self._state, lambda: f"http://{self.public_host}:{self._server.port}/")
        self._primary_team: str | None = None
        self._running = False
        self._stopped = False

    # Lifecycle.

    def start(self) -> SlackFake:
        if self._stopped:
            raise RuntimeError("a stopped SlackFake cannot be started again; make a new one")
        if not self._running:
            self._server.start()
            self._socket.start()
            with self._state.lock:
                self._state.files_base = f"http://{self.public_host}:{self._server.port}/"
            self._running = True
        return self

    def stop(self) -> None:
        """Stop serving (held requests are let go) and finish background deliveries. Safe to call twice."""
        if self._running:
            self._server.stop()
            self._socket.stop()
            self._running = False
        if not self._stopped:
            self._deliverer.close()
            self._stopped = True

    def mount(self, prefix: str, handle: Callable[[HttpRequest], HttpAnswer]) -> None:
        """Serve requests whose path starts with ``prefix`` with ``handle`` beside the Web API (the
        simulator's page API, control.py), on the same port."""
        if prefix.startswith(("/api/", "/actions/")):
            raise FakeMisuse(f"{prefix} is Slack's own")
        self._mounts[prefix] = handle

    def __enter__(self) -> SlackFake:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The Web API base URL for slack_sdk clients (``base_url``), ending in "/"."""
        return f"http://{self.public_host}:{self._server.port}/api/"

    # The world: workspaces, people, channels.

    def add_workspace(
        self,
        team_id: str,
        *,
        domain: str | None = None,
        name: str | None = None,
        app_name: str = "kourier",
        bot_user_id: str | None = None,
        bot_id: str | None = None,
        app_id: str | None = None,
        bot_token: str | None = None,
        app_token: str | None = None,
    ) -> Workspace:
        """A workspace with the app installed: a bot user, a bot id and a bot token (and an app token if given)."""
        with self._state.lock:
            if team_id in self._state.workspaces:
                raise FakeMisuse(f"workspace {team_id} exists already")
            app = AppInstall(
                app_id=app_id or self._state.new_id("A"),
                bot_id=bot_id or self._state.new_id("B"),
                bot_user_id=bot_user_id or self._state.new_id("U"),
                bot_token=bot_token or f"xoxb-{team_id}-{secrets.token_hex(12)}",
                app_token=app_token,
                name=app_name,
            )
            workspace = Workspace(
                team_id=team_id,
                domain=domain or team_id.lower(),
                name=name or f"Workspace {team_id}",
                app=app,
                stream_lifetime=self._default_stream_lifetime,
            )
            self._state.workspaces[team_id] = workspace
            self._state.tokens[app.bot_token] = (team_id, "bot")
            if app_token:
                self._state.tokens[app_token] = (team_id, "app")
            self._state.users[app.bot_user_id] = User(
                id=app.bot_user_id,
                team_id=team_id,
                name=app_name,
                real_name=app_name.title(),
                display_name=app_name,
                is_bot=True,
                bot_id=app.bot_id,
                app_id=app.app_id,
            )
            self._primary_team = self._primary_team or team_id
            return workspace

    def add_user(
        self,
        user_id: str,
        real_name: str,
        *,
        team: str | None = None,
        display_name: str | None = None,
        name: str | None = None,
        deleted: bool = False,
        email: str = "",
    ) -> User:
        user = User(
            id=user_id,
            team_id=self._team(team),
            name=name or real_name.split()[0].lower(),
            real_name=real_name,
            display_name=display_name if display_name is not None else real_name.split()[0].lower(),
            deleted=deleted,
            email=email,
        )
        with self._state.lock:
            self._state.users[user_id] = user
        return user

    def add_bot(self, user_id: str, name: str, *, team: str | None = None, bot_id: str | None = None) -> User:
        """Another app's bot (an alerting integration, say), which can post with ``bot_says``."""
        with self._state.lock:
            user = User(
                id=user_id,
                team_id=self._team(team),
                name=name,
                real_name=name,
                display_name=name,
                is_bot=True,
                bot_id=bot_id or self._state.new_id("B"),
                app_id=self._state.new_id("A"),
            )
            self._state.users[user_id] = user
            return user

    def add_channel(
        self,
        channel_id: str,
        name: str,
        *,
        team: str | None = None,
        members: list[str] | tuple[str, ...] = (),
        bot_is_member: bool = True,
        private: bool = False,
        archived: bool = False,
    ) -> Channel:
        workspace = self.workspace(team)
        member_ids = list(members)
        if bot_is_member:
            member_ids.append(workspace.app.bot_user_id)
        channel = Channel(
            id=channel_id,
            team_id=workspace.team_id,
            name=name,
            members=list(dict.fromkeys(member_ids)),
            is_private=private,
            is_archived=archived,
        )
        with self._state.lock:
            self._state.channels[channel_id] = channel
        return channel

    def add_dm(self, channel_id: str, user: str, *, team: str | None = None) -> Channel:
        """The direct-message conversation between a person and the app."""
        workspace = self.workspace(team)
        channel = Channel(
            id=channel_id,
            team_id=workspace.team_id,
            name=channel_id,
            members=[user, workspace.app.bot_user_id],
            is_im=True,
        )
        with self._state.lock:
            self._state.channels[channel_id] = channel
        return channel

    def add_usergroup(
        self, group_id: str, handle: str, users: list[str], *, team: str | None = None, disabled: bool = False
    ) -> UserGroup:
        group = UserGroup(
            id=group_id, team_id=self._team(team), handle=handle, users=list(users), disabled=disabled
        )
        with self._state.lock:
            self._state.usergroups[group_id] = group
        return group

    def add_emoji(self, name: str, *, team: str | None = None) -> None:
        """A custom emoji of the workspace, usable as a reaction."""
        with self._state.lock:
            self.workspace(team).custom_emoji.add(name)

    def join(self, channel: str, user: str) -> list[Delivery]:
        """``user`` joins the channel: the apps in it are sent ``member_joined_channel``."""
        return self._change_membership(channel, user, joined=True)

    def leave(self, channel: str, user: str) -> list[Delivery]:
        """``user`` leaves the channel: the apps in it are sent ``member_left_channel``."""
        return self._change_membership(channel, user, joined=False)

    def _change_membership(self, channel: str, user: str, *, joined: bool) -> list[Delivery]:
        with self._state.lock:
            chan = self._channel(channel)
            if (user in chan.members) == joined:
                return []
            if joined:
                chan.members.append(user)
            else:
                chan.members.remove(user)
            workspace = self._state.workspace(chan.team_id)
            if workspace.app.bot_user_id not in chan.members or user == workspace.app.bot_user_id:
                return []  # Slack sends channel events only to apps in the channel
            kind = "member_joined_channel" if joined else "member_left_channel"
            outgoing = self._requests.for_channel_event(
                chan, events.member_event(kind, user, chan, self._state.next_ts())
            )
        return self._send(outgoing)

    def archive_channel(self, channel: str) -> None:
        with self._state.lock:
            self._channel(channel).is_archived = True

    def deactivate_user(self, user: str) -> None:
        with self._state.lock:
            self._user(user).deleted = True

    def workspace(self, team: str | None = None) -> Workspace:
        team_id = self._team(team)
        if team_id not in self._state.workspaces:
            raise FakeMisuse(f"no workspace {team_id}")
        return self._state.workspaces[team_id]

    def configure_workspace(
        self,
        team: str | None = None,
        *,
        streams_enabled: bool | None = None,
        task_cards_enabled: bool | None = None,
        assistant_status: AssistantStatusSupport | None = None,
        usergroups_available: bool | None = None,
        stream_lifetime: float | None = None,
        home_tab_enabled: bool | None = None,
        scopes: set[str] | None = None,
        agent_sessions: bool | None = None,
        agent_session_stopped_subscribed: bool | None = None,
    ) -> Workspace:
        """Switch what a workspace (or the app in it) can do.

        ``streams_enabled=False``: chat.startStream answers feature_not_enabled.
        ``task_cards_enabled=False``: task_update/plan_update chunks answer invalid_chunks, and
        task_card/plan blocks answer invalid_blocks, as when the app lacks the agent feature.
        ``assistant_status``: "missing_scope" or "unknown_method" for assistant.threads.setStatus.
        ``usergroups_available=False``: usergroups.users.list answers plan_upgrade_required.
        ``stream_lifetime``: seconds from a stream's start until it expires.
        ``home_tab_enabled=False``: views.publish of a home view answers not_enabled.
        ``scopes``: the app's file scopes (files:read, files:write; both by default): without files:read
        a file's url_private answers Slack's sign-in page, without files:write the upload methods
        answer missing_scope.
        ``agent_sessions=False``: agents.sessions.setStatus answers feature_disabled.
        ``agent_session_stopped_subscribed=False``: it answers with the warning that the app does not
        subscribe to agent_session_stopped (people see a loading indicator they cannot press).
        """
        with self._state.lock:
            workspace = self.workspace(team)
            if streams_enabled is not None:
                workspace.streams_enabled = streams_enabled
            if task_cards_enabled is not None:
                workspace.task_cards_enabled = task_cards_enabled
            if assistant_status is not None:
                workspace.assistant_status_support = assistant_status
            if usergroups_available is not None:
                workspace.usergroups_available = usergroups_available
            if stream_lifetime is not None:
                workspace.stream_lifetime = stream_lifetime
            if home_tab_enabled is not None:
                workspace.home_tab_enabled = home_tab_enabled
            if scopes is not None:
                workspace.scopes = set(scopes)
            if agent_sessions is not None:
                workspace.agent_sessions_enabled = agent_sessions
            if agent_session_stopped_subscribed is not None:
                workspace.agent_session_stopped_subscribed = agent_session_stopped_subscribed
            return workspace

    def deliver_events_to(
        self,
        url: str,
        signing_secret: str,
        *,
        team: str | None = None,
        verification_token: str = "fake-verification-token",
        echo_own_messages: bool = True,
    ) -> None:
        """Send this workspace's Events API and interactivity requests to the app at ``url``.

        With ``echo_own_messages``, the app's own posts, edits and deletions come back to it as message
        events with its bot_id, as Slack sends them.
        """
        with self._state.lock:
            self.workspace(team).events = EventTarget(
                url, signing_secret, verification_token, echo_own_messages
            )

    def deliver_events_over_socket_mode(
        self, *, team: str | None = None, echo_own_messages: bool = True, wait_for_acks: bool = False
    ) -> None:
        """Send this workspace's events and interactivity over its app's Socket Mode connections (the app
        opens them with apps.connections.open and its app token) instead of to a URL.

        A person's message returns at once (the envelopes' record fills in as the acks come), or with
        ``wait_for_acks`` once each of its envelopes is acked or timed out, as over HTTP."""
        with self._state.lock:
            workspace = self.workspace(team)
            if workspace.app.app_token is None:
                raise FakeMisuse(f"the app of {workspace.team_id} has no app token")
            workspace.events = EventTarget(
                "",
                "",
                "fake-verification-token",
                echo_own_messages,
                socket_mode=True,
                wait_for_acks=wait_for_acks,
            )

    # Socket Mode: the connections, their envelopes, and what Slack does to them.

    @property
    def socket_port(self) -> int:
        """Where the Socket Mode links point (another port than the Web API's, as Slack's wss host is)."""
        return self._socket.port

    def socket_connections(self, *, open_only: bool = True) -> list[SocketConnection]:
        return self._socket.connections(open_only=open_only)

    def socket_envelopes(self, kind: str | None = None) -> list[SocketEnvelope]:
        """Every envelope sent, retries included, in the order sent; ``kind`` as Delivery.kind."""
        found = sorted(self._socket.envelopes(), key=lambda envelope: envelope.sent_at)
        return [e for e in found if kind is None or e.kind == kind]

    @property
    def socket_refused_frames(self) -> list[str]:
        """Frames the app sent that ack no envelope of its app (unknown id, not JSON, ...)."""
        return list(self._socket.refused_frames)

    def wait_for_socket_connections(self, count: int, timeout: float = 30.0) -> list[SocketConnection]:
        """Waits until ``count`` connections are open (and greeted); returns them."""
        self.wait_until(lambda: len(self._socket.connections()) >= count, timeout=timeout)
        return self._socket.connections()

    def socket_disconnect(
        self, reason: str = "refresh_requested", *, connection: int | None = None, close_after: float = 1.0
    ) -> list[int]:
        """Sends ``disconnect`` (refresh_requested, warning, ...) on one connection or all, and closes them
        ``close_after`` seconds later; returns the connections told."""
        return self._socket.disconnect(reason, connection, close_after)

    def socket_drop(self, *, connection: int | None = None) -> list[int]:
        """Drops one connection or all without warning (no disconnect message, no close frame)."""
        return self._socket.drop(connection)

    def send_socket_frame(
        self, frame: str, *, connection: int | None = None, team: str | None = None
    ) -> None:
        """Sends any text frame on a connection of the app (for its bad-input tests)."""
        self._socket.send_raw(frame, self.workspace(team).app.app_id, connection)

    def send_socket_envelope(
        self, envelope_type: str, payload: Any, *, team: str | None = None, kind: str = "raw"
    ) -> SocketEnvelope:
        """An envelope of any type and payload, waited for like any other (for bad-input tests)."""
        workspace = self.workspace(team)
        return self._socket.send_envelope(
            envelope_type, payload, kind, workspace.team_id, workspace.app.app_id
        )

    def revoke_token(self, token: str) -> None:
        """The token is revoked: calls with it answer token_revoked; an app token's sockets close."""
        with self._state.lock:
            known = self._state.tokens.get(token)
            self._api.revoked_tokens.add(token)
        if known is not None and known[1] == "app":
            self._socket.close_app(self.workspace(known[0]).app.app_id)

    # The primary (first) workspace's ids, for tests that use one workspace.

    @property
    def team_id(self) -> str:
        return self.workspace().team_id

    @property
    def bot_token(self) -> str:
        return self.workspace().app.bot_token

    @property
    def app_token(self) -> str | None:
        return self.workspace().app.app_token

    @property
    def bot_user_id(self) -> str:
        return self.workspace().app.bot_user_id

    @property
    def bot_id(self) -> str:
        return self.workspace().app.bot_id

    @property
    def app_id(self) -> str:
        return self.workspace().app.app_id

    @property
    def bot_mention(self) -> str:
        """How a person's message mentions the app: ``<@BOTUSERID>``."""
        return f"<@{self.bot_user_id}>"

    # Faults and the call record.

    def fail(
        self,
        method: str,
        error: str = "ratelimited",
        *,
        times: int | None = 1,
        retry_after: int = 1,
        when: ArgsPredicate | None = None,
        team: str | None = None,
        body: str | dict[str, Any] | None = None,
        **extra: Any,
    ) -> Fault:
        """Make the next ``times`` matching calls of ``method`` fail (``times=None``: all, until cleared).

        ``error``: "ratelimited", "http_<status>", "timeout", "timeout_after_apply", "disconnect",
        "disconnect_after_apply", or any Slack error name (see faults.py). ``when`` picks calls by their
        arguments; ``body`` replaces the answer's body; ``extra`` adds fields to a named error's body.
        """
        return self._faults.add(
            Fault(method, error, times, retry_after, when, team, body=body, extra=dict(extra))
        )

    def clear_faults(self) -> None:
        self._faults.clear()

    def calls(self, method: str | None = None) -> list[RecordedCall]:
        return self._api.calls(method)

    def count(self, method: str) -> int:
        return len(self._api.calls(method))

    def last_call(self, method: str) -> RecordedCall:
        calls = self._api.calls(method)
        if not calls:
            raise AssertionError(f"the app never called {method}")
        return calls[-1]

    def reset_calls(self) -> None:
        self._api.reset_calls()

    @property
    def internal_errors(self) -> list[str]:
        """Tracebacks of the fake's own failures (answered as HTTP 500 "fake_internal_error")."""
        with self._state.lock:
            return list(self._api.internal_errors)

    def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Block until ``condition()`` holds, re-checking whenever the app makes a call or a delivery ends."""
        deadline = time.monotonic() + timeout
        with self._api.changed:
            while not condition():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"condition not met within {timeout} s")
                # The timeout also re-checks conditions on time-based state, such as stream expiry.
                self._api.changed.wait(min(remaining, 0.05))

    def wait_for_call(self, method: str, count: int = 1, timeout: float = 5.0) -> RecordedCall:
        """Wait until the app has called ``method`` ``count`` times; returns the latest such call."""
        self.wait_until(lambda: self.count(method) >= count, timeout)
        return self.last_call(method)

    # What people see.

    def thread(self, channel: str, thread_ts: str) -> list[MessageView]:
        """The thread as a person sees it: root first, then replies in order."""
        with self._state.lock:
            root = self._state.message(channel, thread_ts)
            if root is None:
                raise KeyError(f"no message {thread_ts} in {channel}")
            root = self._state.message(channel, root.root_ts) or root
            return thread_view(self._state, root)

    def message(self, channel: str, ts: str) -> MessageView:
        with self._state.lock:
            message = self._state.message(channel, ts)
            if message is None:
                raise KeyError(f"no message {ts} in {channel}")
            return message_view(self._state, message)

    def app_messages_to(self, user: str) -> list[MessageView]:
        """What the app wrote in the person's direct messages with it, oldest first."""
        with self._state.lock:
            im = opened_im(self._state, self.workspace(self._user(user).team_id), user)
        return [message for message in self.messages(im.id) if message.bot_id]

    def messages(self, channel: str) -> list[MessageView]:
        """The channel's top-level messages, oldest first (thread replies are in ``thread``)."""
        with self._state.lock:
            return [
                message_view(self._state, m)
                for m in self._state.messages.get(channel, {}).values()
                if not m.is_reply and (not m.deleted or self._state.replies(m))
            ]

    def ephemerals(self, user: str, channel: str | None = None) -> list[EphemeralView]:
        """The "Only visible to you" messages a person has been shown."""
        with self._state.lock:
            return [
                ephemeral_view(e)
                for e in self._state.ephemerals
                if e.user == user and not e.deleted and (channel is None or e.channel == channel)
            ]

    def assistant_status(self, channel: str, thread_ts: str) -> str | None:
        """The assistant status shown in a thread now, if any."""
        with self._state.lock:
            history = self._state.assistant_statuses.get((channel, thread_ts), [])
            return current_assistant_status(history, self._state.now())

    def assistant_status_history(self, channel: str, thread_ts: str) -> list[str]:
        """Every status set in a thread, in order; "" where it was cleared (by the app or by its reply)."""
        with self._state.lock:
            return [s.status for s in self._state.assistant_statuses.get((channel, thread_ts), [])]

    def suggested_prompts(self, channel: str) -> list[tuple[str, str]]:
        """The suggested prompts on a person's Messages tab with the app: (title, message) each."""
        with self._state.lock:
            found = self._state.suggested_prompts.get(channel)
            return list(found.prompts) if found is not None else []

    def thread_title(self, channel: str, thread_ts: str) -> str | None:
        """The title the app gave a thread of its direct messages, if any."""
        with self._state.lock:
            return self._state.thread_titles.get((channel, thread_ts))

    # People acting. Events go to the app only when deliver_events_to was called for the workspace.

    def user_opens_app(self, user: str, *, team: str | None = None) -> str:
        """A person opens the app's Messages tab (the agent view): their direct-message conversation
        with the app is opened if it was not, and Slack sends ``app_home_opened``. Returns its id."""
        with self._state.lock:
            person = self._user(user)
            workspace = self.workspace(team or person.team_id)
            channel = opened_im(self._state, workspace, user)
            event = agent_view.app_home_opened_event(user, channel, self._state.next_ts())
            outgoing = self._requests.for_channel_event(channel, event)
        self._send(outgoing)
        return channel.id

    def user_opens_home(self, user: str, *, team: str | None = None) -> list[Delivery]:
        """A person opens the app's Home tab: Slack sends ``app_home_opened`` with ``tab: "home"`` (and the
        view published for them, if any)."""
        with self._state.lock:
            person = self._user(user)
            workspace = self.workspace(team or person.team_id)
            channel = opened_im(self._state, workspace, user)
            event = home.app_home_opened_event(self._state, workspace, user, channel.id)
            outgoing = self._requests.for_channel_event(channel, event)
        return self._send(outgoing)

    def home_view(self, user: str, *, team: str | None = None) -> dict[str, Any] | None:
        """The Home tab the app last published for ``user`` (as views.publish answered it), or None."""
        with self._state.lock:
            workspace = self.workspace(team or self._user(user).team_id)
            published = self._state.home_views.get(home.home_key(workspace.team_id, user))
            return home.home_view_json(workspace, published) if published is not None else None

    def press_home_button(self, user: str, action_id: str, *, block_id: str | None = None) -> Delivery:
        """A person clicks a button in the Home tab the app published for them."""
        with self._state.lock:
            person = self._user(user)
            published = self._state.home_views.get(home.home_key(person.team_id, user))
            if published is None:
                raise FakeMisuse(f"the app published no Home tab for {user}")
            found_block, element = home.find_button(published, action_id, block_id)
            action = interactivity.element_action(found_block, element, None, self._state.next_ts())
            outgoing = self._requests.home_block_actions(person, published, action)
        return self._transmit(outgoing)

    def user_says(
        self,
        user: str,
        channel: str,
        text: str,
        thread_ts: str | None = None,
        *,
        deliver: DeliverWhich = "both",
        order: DeliveryOrder = "app_mention_first",
        concurrent: bool = False,
    ) -> str:
        """A person posts a message; returns its ts.

        Slack sends the app a ``message`` event, and also an ``app_mention`` when the text mentions the
        app (docs/slack-platform.md §4.1). ``deliver`` picks which of the two to send ("none": neither),
        ``order`` their order, and ``concurrent`` sends them at the same moment.
        """
        with self._state.lock:
            person = self._member(user, channel)
            message = self._state.add_message(
                Message(
                    channel=channel,
                    ts=self._state.next_ts(),
                    team_id=person.team_id,
                    text=text,
                    blocks=rich_text_blocks(text),
                    user=user,
                    client_msg_id=str(uuid.uuid4()),
                    thread_ts=self._thread_root(channel, thread_ts),
                )
            )
            outgoing = self._requests.for_new_message(message, deliver, order)
        self._send(outgoing, concurrent)
        return message.ts

    def user_shares_files(
        self,
        user: str,
        channel: str,
        text: str,
        shared: list[tuple[str, bytes, str]],
        thread_ts: str | None = None,
        *,
        deliver: DeliverWhich = "both",
        unreachable: tuple[str, ...] = (),
    ) -> str:
        """A person posts a message with files attached, each ``(name, content, mimetype)``; returns its ts.

        Slack sends a ``message`` event of subtype ``file_share`` with the ``files`` array (and the
        ``app_mention``, with the same files, when the text mentions the app). The files named in
        ``unreachable`` are gone by the time the app asks for them (their private URL answers 404)."""
        if not shared:
            raise FakeMisuse("a file_share message shares at least one file")
        with self._state.lock:
            person = self._member(user, channel)
            added = [
                files.add_shared_file(self._state, person.team_id, user, name, content, mimetype)
                for name, content, mimetype in shared
            ]
            for file in added:
                file.reachable = file.name not in unreachable
            message = self._state.add_message(
                Message(
                    channel=channel,
                    ts=self._state.next_ts(),
                    team_id=person.team_id,
                    text=text,
                    blocks=rich_text_blocks(text) if text else [],
                    user=user,
                    client_msg_id=str(uuid.uuid4()),
                    thread_ts=self._thread_root(channel, thread_ts),
                    subtype="file_share",
                    files=[file.id for file in added],
                )
            )
            outgoing = self._requests.for_new_message(message, deliver, "app_mention_first")
        self._send(outgoing)
        return message.ts

    def file(self, file_id: str) -> files.FileView:
        """A file as Slack holds it: its name, title, media type and bytes, and whether it was shared."""
        with self._state.lock:
            found = self._state.files.get(file_id)
            if found is None:
                raise KeyError(f"no file {file_id}")
            return files.file_view(found)

    def files_in_thread(self, channel: str, thread_ts: str) -> list[files.FileView]:
        """Every file shared in the thread, in the order shared (the app's uploads and people's)."""
        with self._state.lock:
            root = self._state.message(channel, thread_ts)
            if root is None:
                raise KeyError(f"no message {thread_ts} in {channel}")
            thread = [root, *self._state.replies(root)]
            return [
                files.file_view(self._state.files[f])
                for m in thread
                for f in m.files
                if f in self._state.files
            ]

    def make_file_unreachable(self, file_id: str) -> None:
        """Slack stops serving the file (deleted, or its host fails): its url_private answers 404."""
        with self._state.lock:
            self._state.files[file_id].reachable = False

    def bot_says(
        self,
        bot_user: str,
        channel: str,
        text: str,
        thread_ts: str | None = None,
        *,
        attachments: list[dict[str, Any]] | None = None,
        blocks: list[dict[str, Any]] | None = None,
    ) -> str:
        """Another app's bot posts a message (with its bot_id); returns its ts. ``attachments`` and
        ``blocks`` as the app sends them to chat.postMessage (an alert's often has no ``text`` of its own)."""
        with self._state.lock:
            bot = self._member(bot_user, channel)
            if not bot.is_bot:
                raise FakeMisuse(f"{bot_user} is a person; use user_says")
            message = self._state.add_message(
                Message(
                    channel=channel,
                    ts=self._state.next_ts(),
                    team_id=bot.team_id,
                    text=text,
                    blocks=list(blocks or []),
                    attachments=[dict(attachment) for attachment in attachments or []],
                    user=bot.id,
                    bot_id=bot.bot_id,
                    app_id=bot.app_id,
                    thread_ts=self._thread_root(channel, thread_ts),
                )
            )
            outgoing = self._requests.for_new_message(message, "both", "app_mention_first")
        self._send(outgoing)
        return message.ts

    def user_edits(self, user: str, channel: str, ts: str, text: str) -> list[Delivery]:
        """A person edits their message: Slack sends a ``message_changed`` event (no new app_mention)."""
        with self._state.lock:
            message = self._own_message(user, channel, ts)
            previous = message_json(self._state, message, include_metadata=False)
            message.text, message.blocks = text, rich_text_blocks(text)
            message.edited = {"user": user, "ts": self._state.next_ts()}
            chan = self._channel(channel)
            event = events.message_changed_event(self._state, message, previous, chan, self._state.next_ts())
            outgoing = self._requests.for_channel_event(chan, event)
        return self._send(outgoing)

    def user_deletes(self, user: str, channel: str, ts: str) -> list[Delivery]:
        """A person deletes their message: Slack sends a ``message_deleted`` event."""
        with self._state.lock:
            message = self._own_message(user, channel, ts)
            previous = message_json(self._state, message, include_metadata=False)
            message.deleted = True
            chan = self._channel(channel)
            outgoing = self._requests.for_channel_event(
                chan, events.message_deleted_event(previous, chan, self._state.next_ts())
            )
        return self._send(outgoing)

    def user_reacts(self, user: str, channel: str, ts: str, name: str) -> list[Delivery]:
        """A person adds a reaction: Slack sends ``reaction_added``."""
        with self._state.lock:
            self._member(user, channel)
            message = self._state.live_message(channel, ts)
            if message is None:
                raise FakeMisuse(f"no message {ts} in {channel}")
            reactors = message.reactions.setdefault(name, [])
            if user not in reactors:
                reactors.append(user)
            event = events.reaction_added_event(user, name, message, self._state.next_ts())
            outgoing = self._requests.for_channel_event(self._channel(channel), event)
        return self._send(outgoing)

    def user_stops_stream(self, channel: str, ts: str, *, user: str | None = None) -> None:
        """A person presses stop on a streaming reply: appends then fail with stopped_by_user.
        ``user``, when given, must be the person the stream is shown to (its ``recipient_user_id``;
        in a DM, where none is needed, anyone in it): nobody else has the stop."""
        with self._state.lock:
            message = self._state.live_message(channel, ts)
            if (
                message is None
                or message.stream is None
                or not message.stream.is_streaming(self._state.now())
            ):
                raise FakeMisuse(f"{ts} in {channel} is not streaming")
            recipient = message.stream.recipient_user_id
            if user is not None and recipient and user != recipient:
                raise FakeMisuse(f"only {recipient}, whom the stream is shown to, can stop it")
            streams.end_stream(message.stream, "stopped_by_user", self._state.now())

    def agent_session_status(self, channel: str, thread_ts: str) -> str | None:
        """The thread's agent session status as the app last set it; None: it has no session."""
        with self._state.lock:
            return agent_sessions.session_status(self._state, channel, thread_ts)

    def agent_session_history(self, channel: str, thread_ts: str) -> list[str]:
        with self._state.lock:
            return [s.status for s in self._state.agent_sessions.get((channel, thread_ts), [])]

    def user_stops_agent_session(self, user: str, channel: str, thread_ts: str) -> list[Delivery]:
        """A person viewing the thread (a member of the channel or not) presses Slack's stop control
        of its agent session, which shows only while the session is processing and the app subscribes
        to the stop: the thread's streams stop and the app is sent agent_session_stopped."""
        with self._state.lock:
            person = self._user(user)
            workspace = self._state.workspace(self._channel(channel).team_id)
            if agent_sessions.session_status(self._state, channel, thread_ts) != "processing":
                raise FakeMisuse(
                    f"the agent session of {thread_ts} in {channel} is not processing: no stop shows"
                )
            if not workspace.agent_session_stopped_subscribed:
                raise FakeMisuse(
                    "the app does not subscribe to agent_session_stopped: the indicator has no stop"
                )
            event = agent_sessions.stop_session(self._state, self._channel(channel), thread_ts, person.id)
            outgoing = self._requests.for_channel_event(self._channel(channel), event)
        return self._send(outgoing)

    def press_button(
        self,
        user: str,
        channel: str,
        ts: str,
        action_id: str,
        *,
        block_id: str | None = None,
        choices: Mapping[str, Choice] | None = None,
    ) -> Delivery:
        """A person clicks a button of a message (or of an ephemeral they were shown).

        ``choices`` are what they picked or typed in the message's other inputs first, by action_id
        (an option value, a list of values, or text); they appear in the payload's ``state.values``.
        """
        return self._act(user, channel, ts, action_id, block_id, None, choices or {})

    def choose(
        self,
        user: str,
        channel: str,
        ts: str,
        action_id: str,
        choice: Choice,
        *,
        block_id: str | None = None,
        choices: Mapping[str, Choice] | None = None,
    ) -> Delivery:
        """A person picks an option in a select, radio group, checkboxes or overflow menu that sends at once."""
        return self._act(user, channel, ts, action_id, block_id, choice, choices or {})

    def response_url(self, user: str, channel: str, ts: str) -> str:
        """The response_url a press by ``user`` on message ``ts`` would carry, for tests that hand a
        press to the app's code directly instead of delivering it."""
        with self._state.lock:
            person = self._user(user)
            source = interactivity.find_source(self._state, person, channel, ts)
            return self._requests.response_url(person, source)

    def send_block_actions(
        self,
        user: str,
        channel: str,
        ts: str,
        actions: list[dict[str, Any]],
        state_values: dict[str, Any] | None = None,
    ) -> Delivery:
        """A block_actions payload with ``actions`` and ``state.values`` exactly as given."""
        with self._state.lock:
            person = self._user(user)
            source = interactivity.find_source(self._state, person, channel, ts)
            outgoing = self._requests.block_actions(person, source, actions, state_values or {})
        return self._transmit(outgoing)

    # Other ways to reach the app (surfaces.py): a slash command, a message shortcut.

    def user_types_command(
        self, user: str, channel: str, text: str = "", *, command: str = "/kourier"
    ) -> Delivery:
        """A person types ``command text`` in the message box of a conversation they are in."""
        if not command.startswith("/") or len(command) < 2:
            raise FakeMisuse(f"a slash command starts with /: {command!r}")
        with self._state.lock:
            person = self._member(user, channel)
            outgoing = self._requests.slash_command(person, self._channel(channel), command, text)
        return self._transmit(outgoing)

    def user_uses_shortcut(
        self, user: str, channel: str, ts: str, *, callback_id: str = "ask_about_message"
    ) -> Delivery:
        """A person chooses the app's message shortcut in the menu of message ``ts``."""
        with self._state.lock:
            person = self._user(user)
            source = interactivity.find_source(self._state, person, channel, ts)
            if source.message is None:
                raise FakeMisuse("an ephemeral message has no shortcuts menu")
            outgoing = self._requests.message_action(person, source, callback_id)
        return self._transmit(outgoing)

    # Modals (modals.py): what the app opened with views.open, and the person submitting or closing it.

    def modals(self, user: str, *, open_only: bool = True) -> list[ModalView]:
        """The modals the app opened for ``user``, oldest first."""
        with self._state.lock:
            found = [v for v in self._state.modals.views.values() if v.user_id == user]
            return [modals.modal_view(v) for v in found if not (open_only and v.closed)]

    def wait_for_modal(self, user: str, timeout: float = 5.0) -> ModalView:
        """The modal ``user`` has open, once the app has opened one."""
        self.wait_until(lambda: bool(self.modals(user)), timeout)
        return self.modals(user)[-1]

    def submit_modal(
        self, user: str, choices: Mapping[str, Choice] | None = None, *, view_id: str | None = None
    ) -> Delivery:
        """The person fills in the modal's inputs (``choices`` by action_id) and presses its submit button.

        The app's answer decides what they see next (``modals()``): the errors it returned, or the modal closed.
        """
        with self._state.lock:
            person = self._user(user)
            opened = modals.find_open_view(self._state, person, view_id)
            values = modals.submitted_values(opened, choices or {})
            outgoing = self._requests.view_submission(person, opened, values)
        delivery = self._transmit(outgoing)
        with self._state.lock:
            if delivery.ok:
                modals.apply_submission_answer(opened, delivery.response_body)
        return delivery

    def close_modal(self, user: str, *, view_id: str | None = None) -> Delivery | None:
        """The person closes the modal (its close button, or the x); the app hears of it only when the
        view asked (``notify_on_close``)."""
        with self._state.lock:
            person = self._user(user)
            opened = modals.find_open_view(self._state, person, view_id)
            opened.closed, opened.close_reason = True, "closed"
            if not opened.notify_on_close:
                return None
            outgoing = self._requests.view_closed(person, opened)
        return self._transmit(outgoing)

    def send_url_verification(self, *, team: str | None = None, challenge: str | None = None) -> Delivery:
        outgoing = self._requests.url_verification(
            self.workspace(team), challenge or secrets.token_urlsafe(24)
        )
        return self._deliverer.send(outgoing)

    def deliver_raw(
        self,
        body: bytes | str | dict[str, Any],
        headers: Mapping[str, str] | None = None,
        *,
        sign: events.SignMode = "valid",
        team: str | None = None,
        content_type: str = "application/json",
    ) -> Delivery:
        """Send any body to the app, signed validly, forged, stale, or not at all (for its 401 tests)."""
        if isinstance(body, dict):
            body = json.dumps(body)
        raw = body.encode() if isinstance(body, str) else body
        outgoing = self._requests.signed(
            self.workspace(team), "raw", raw, sign=sign, content_type=content_type
        )
        outgoing.headers.update(headers or {})
        return self._deliverer.send(outgoing)

    def redeliver(self, delivery: Delivery, *, retry_num: int = 1, reason: str = "http_timeout") -> Delivery:
        """Send a delivery again as Slack's retry: same body and event_id, fresh signature, retry headers."""
        if delivery.envelope_id is not None:
            return self._socket_delivery(
                self._socket.resend(
                    self._envelope(delivery.envelope_id), retry_attempt=retry_num, reason=reason
                )
            )
        return self._deliverer.send(self._requests.retry(delivery, retry_num, reason))

    def deliveries(self, kind: str | None = None, *, ts: str | None = None) -> list[Delivery]:
        """Requests sent to the app so far, optionally of one kind (event type) or about one message ts."""
        with self._state.lock:
            found = list(self._deliveries)
        if kind is not None:
            found = [d for d in found if d.kind == kind]
        if ts is not None:
            found = [d for d in found if d.message_ts == ts]
        return found

    def wait_for_deliveries(self, timeout: float = 5.0) -> None:
        """Wait until the background deliveries (the app's own messages echoed back) are done."""
        if not self._deliverer.wait_idle(timeout):
            raise TimeoutError(f"deliveries still running after {timeout} s")

    # Internals.

    def _team(self, team: str | None) -> str:
        if team is not None:
            return team
        if self._primary_team is None:
            raise FakeMisuse("add a workspace first")
        return self._primary_team

    def _channel(self, channel: str) -> Channel:
        found = self._state.channels.get(channel)
        if found is None:
            raise FakeMisuse(f"no channel {channel}")
        return found

    def _user(self, user: str) -> User:
        found = self._state.users.get(user)
        if found is None:
            raise FakeMisuse(f"no user {user}")
        return found

    def _member(self, user: str, channel: str) -> User:
        """A user who can post in the channel: present, active and a member."""
        person = self._user(user)
        chan = self._channel(channel)
        if person.deleted:
            raise FakeMisuse(f"{user} is deactivated")
        if user not in chan.members:
            raise FakeMisuse(f"{user} is not a member of {channel}")
        if chan.is_archived:
            raise FakeMisuse(f"{channel} is archived")
        return person

    def _own_message(self, user: str, channel: str, ts: str) -> Message:
        message = self._state.live_message(channel, ts)
        if message is None or message.user != user:
            raise FakeMisuse(f"{user} has no message {ts} in {channel}")
        return message

    def _thread_root(self, channel: str, thread_ts: str | None) -> str | None:
        """People reply from the thread view, so their reply always goes under a real root."""
        if thread_ts is None:
            return None
        target = self._state.live_message(channel, thread_ts)
        if target is None:
            raise FakeMisuse(f"no message {thread_ts} in {channel} to reply to")
        return target.root_ts

    def _send(self, outgoing: list[Outgoing], concurrent: bool = False) -> list[Delivery]:
        """Over HTTP: each request, answered. Over Socket Mode the events go out without waiting for
        their acks (their record comes in ``deliveries()`` and ``socket_envelopes()``): []."""
        if outgoing and self._over_socket(outgoing[0]):
            target = self.workspace(outgoing[0].team_id).events
            wait = target is not None and target.wait_for_acks
            sent = [self._socket.send(each, self._app_of(each), wait=wait) for each in outgoing]
            return [self._socket_delivery(envelope) for envelope in sent] if wait else []
        if concurrent and len(outgoing) > 1:
            return self._deliverer.send_together(outgoing)
        return [self._deliverer.send(each) for each in outgoing]

    def _act(
        self,
        user: str,
        channel: str,
        ts: str,
        action_id: str,
        block_id: str | None,
        choice: Choice | None,
        choices: Mapping[str, Choice],
    ) -> Delivery:
        with self._state.lock:
            person = self._user(user)
            source = interactivity.find_source(self._state, person, channel, ts)
            found_block_id, element = interactivity.find_element(source, action_id, block_id)
            if (choice is None) != (element["type"] == "button"):
                verb = "press_button" if element["type"] == "button" else "choose"
                raise FakeMisuse(f"{action_id!r} is a {element['type']}; use {verb}")
            action = interactivity.element_action(found_block_id, element, choice, self._state.next_ts())
            all_choices = dict(choices)
            if choice is not None:
                all_choices[action_id] = choice
            values = interactivity.state_values(source.blocks, all_choices)
            outgoing = self._requests.block_actions(person, source, [action], values)
        return self._transmit(outgoing)

    def _echo_to_app(self, workspace: Workspace, inner_events: list[dict[str, Any]]) -> None:
        """The app's own posts, edits and deletions come back to it as events, as Slack sends them."""
        target = workspace.events
        if target is None or not target.echo_own_messages:
            return
        for event in inner_events:
            outgoing = self._requests.event(workspace, event)
            if target.socket_mode:
                self._socket.send(outgoing, workspace.app.app_id, wait=False)
            else:
                self._deliverer.send_in_background(outgoing)

    def _transmit(self, outgoing: Outgoing) -> Delivery:
        """One request to the app, answered or acked (or not, in time)."""
        if self._over_socket(outgoing):
            return self._socket_delivery(self._socket.send(outgoing, self._app_of(outgoing)))
        return self._deliverer.send(outgoing)

    def _over_socket(self, outgoing: Outgoing) -> bool:
        if outgoing.team_id is None:
            return False
        target = self.workspace(outgoing.team_id).events
        return target is not None and target.socket_mode

    def _app_of(self, outgoing: Outgoing) -> str:
        return self.workspace(outgoing.team_id).app.app_id

    def _socket_delivery(self, envelope: SocketEnvelope) -> Delivery:
        if envelope.delivery is None:
            raise TimeoutError(f"envelope {envelope.envelope_id} was neither acked nor timed out")
        return envelope.delivery

    def _envelope(self, envelope_id: str) -> SocketEnvelope:
        for envelope in self._socket.envelopes():
            if envelope.envelope_id == envelope_id:
                return envelope
        raise FakeMisuse(f"no envelope {envelope_id}")

    def _route(self, request: HttpRequest) -> HttpAnswer:
        for prefix, handle in self._mounts.items():
            if request.path.startswith(prefix):
                return handle(request)
        if request.path.startswith(files.DOWNLOAD_PREFIX):
            return self._files_request(files.serve_private_url, request)
        if request.path.startswith(files.UPLOAD_PREFIX):
            return self._files_request(files.receive_upload, request)
        return self._api.handle(request)

    def _files_request(
        self, handle: Callable[[SlackState, HttpRequest], HttpAnswer], request: HttpRequest
    ) -> HttpAnswer:
        """A request for a file's bytes, recorded like a call ("files-pri" or "upload"), with its status."""
        answer = handle(self._state, request)
        kind = "files-pri" if request.path.startswith(files.DOWNLOAD_PREFIX) else "upload"
        recorded = {"path": request.path, "authorization": "authorization" in request.headers}
        error = None if answer.status == 200 else f"http_{answer.status}"
        self._api.record(RecordedCall(kind, recorded, None, self._state.now(), answer.status, error, None))
        return answer

    def _notify_changed(self) -> None:
        with self._api.changed:
            self._api.changed.notify_all()

    def _record_delivery(self, delivery: Delivery) -> None:
        with self._api.changed:
            self._deliveries.append(delivery)
            self._api.changed.notify_all()
