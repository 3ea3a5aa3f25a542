"""What the fake Slack knows: workspaces, people, channels, messages, streams and the rest.

Plain data and lookups only. The rules about who may do what live in the Web API methods; the
way a person sees a message lives in views.py. Every mutation happens under ``SlackState.lock``.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from .clock import Clock
from .modal_state import Modals

TokenKind = Literal["bot", "app"]
AssistantStatusSupport = Literal["ok", "missing_scope", "unknown_method"]
StreamMode = Literal["markdown_text", "chunks"]
StreamState = Literal["streaming", "stopped", "stopped_by_user"]

DEFAULT_STREAM_LIFETIME = 300.0  # observed expiry of a stream, docs/slack-platform.md §1.3
ASSISTANT_STATUS_TIMEOUT = 120.0  # "A two minute timeout applies", docs/slack-platform.md §2.1


@dataclass
class AppInstall:
    """The app installed in one workspace: its bot user and its tokens."""

    app_id: str
    bot_id: str
    bot_user_id: str
    bot_token: str
    app_token: str | None
    name: str


@dataclass
class EventTarget:
    """Where Slack sends this workspace's Events API and interactivity requests."""

    url: str
    signing_secret: str
    verification_token: str
    echo_own_messages: bool = True
    socket_mode: bool = False  # over the app's Socket Mode connections instead of ``url``
    wait_for_acks: bool = False  # over Socket Mode: a person's action returns once its envelopes are acked


@dataclass
class Workspace:
    team_id: str
    domain: str
    name: str
    app: AppInstall
    # Switches that reproduce what a given workspace or app cannot do.
    streams_enabled: bool = True
    task_cards_enabled: bool = True
    assistant_status_support: AssistantStatusSupport = "ok"
    usergroups_available: bool = True  # User Groups need a paid plan
    home_tab_enabled: bool = True  # features.app_home.home_tab_enabled (views.publish: not_enabled)
    # Agent sessions (agent_sessions.py): the workspace has them, and the app subscribes to the stop.
    agent_sessions_enabled: bool = True
    agent_session_stopped_subscribed: bool = True
    stream_lifetime: float = DEFAULT_STREAM_LIFETIME
    custom_emoji: set[str] = field(default_factory=set)
    events: EventTarget | None = None
    # The app's bot scopes that decide what the fake lets it do with files (files.py): without files:read
    # a url_private answers the sign-in page, without files:write the upload methods answer missing_scope.
    scopes: set[str] = field(default_factory=lambda: {"files:read", "files:write"})


@dataclass
class User:
    id: str
    team_id: str
    name: str
    real_name: str
    display_name: str
    is_bot: bool = False
    bot_id: str | None = None
    app_id: str | None = None
    deleted: bool = False
    tz: str = "Europe/London"
    email: str = ""  # in users.info's profile, as Slack shows it to an app with users:read.email


@dataclass
class Channel:
    id: str
    team_id: str
    name: str
    members: list[str] = field(default_factory=list)
    is_private: bool = False
    is_im: bool = False
    is_archived: bool = False

    @property
    def channel_type(self) -> str:
        """The ``channel_type`` Slack puts in message events."""
        if self.is_im:
            return "im"
        return "group" if self.is_private else "channel"


@dataclass
class UserGroup:
    id: str
    team_id: str
    handle: str
    users: list[str]
    disabled: bool = False


@dataclass
class TaskCard:
    """One task card of a stream, as the latest ``task_update`` chunk with its id left it."""

    id: str
    title: str
    status: str
    details: str | None = None
    output: str | None = None
    sources: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Stream:
    """The streaming side of a message started with chat.startStream."""

    started_at: float
    expires_at: float
    recipient_user_id: str | None
    recipient_team_id: str | None
    task_display_mode: str
    state: StreamState = "streaming"
    mode: StreamMode | None = None  # locked by the first payload that carries content
    text: str = ""
    cards: dict[str, TaskCard] = field(default_factory=dict)
    plan_title: str | None = None
    chunk_blocks: list[dict[str, Any]] = field(default_factory=list)
    final_blocks: list[dict[str, Any]] = field(default_factory=list)
    ended_at: float | None = None
    # Set once chat.update rewrites the message: from then on the message shows what the update said.
    superseded: bool = False

    def is_streaming(self, now: float) -> bool:
        return self.state == "streaming" and now < self.expires_at

    def phase(self, now: float) -> str:
        """streaming, stopped, stopped_by_user or expired."""
        if self.state == "streaming" and now >= self.expires_at:
            return "expired"
        return self.state


@dataclass
class Message:
    channel: str
    ts: str
    team_id: str
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    # Legacy secondary attachments (what Alertmanager's Slack receiver and paging tools post).
    attachments: list[dict[str, Any]] = field(default_factory=list)
    user: str | None = None
    bot_id: str | None = None
    app_id: str | None = None
    username: str | None = None  # legacy bot messages carry a name instead of a user
    subtype: str | None = None
    thread_ts: str | None = None  # the root's ts, on replies and on a root that has replies
    client_msg_id: str | None = None
    metadata: dict[str, Any] | None = None
    reactions: dict[str, list[str]] = field(default_factory=dict)
    edited: dict[str, str] | None = None
    deleted: bool = False
    stream: Stream | None = None
    reply_ts: list[str] = field(default_factory=list)  # on a root: its replies, oldest first
    files: list[str] = field(default_factory=list)  # the ids of the files it shares (files.py)

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

    @property
    def root_ts(self) -> str:
        return self.thread_ts if self.thread_ts is not None else self.ts


@dataclass
class SlackFile:
    """A file in the workspace: one a person shared, or one the app uploaded (files.py)."""

    id: str
    team_id: str
    name: str
    title: str
    mimetype: str
    user: str
    created: int
    content: bytes | None = None  # None until its bytes arrive at the upload URL
    declared_length: int | None = None  # files.getUploadURLExternal's length
    upload_token: str | None = None
    completed: bool = False
    reachable: bool = True  # False: Slack no longer serves it (deleted, or its host fails)


@dataclass
class Ephemeral:
    """A message only one person sees. Slack does not persist these; the fake keeps them for tests."""

    ts: str
    channel: str
    user: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None
    bot_id: str | None
    deleted: bool = False


@dataclass
class AssistantStatus:
    status: str  # "" clears the status
    loading_messages: list[str]
    set_at: float
    cleared_by_reply: bool = False  # Slack takes the status off when the app posts in the thread


@dataclass
class ResponseUrl:
    """The ``response_url`` of one block_actions payload: where the app may replace or answer the source."""

    id: str
    team_id: str
    channel: str
    user: str
    message_ts: str
    is_ephemeral: bool
    created_at: float
    uses: int = 0


class TsFactory:
    """Message timestamps as Slack writes them ("1712345678.123456"), unique and increasing."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last_micros = 0

    def next(self) -> str:
        micros = max(int(self._clock.now() * 1_000_000), self._last_micros + 1)
        self._last_micros = micros
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"


class SlackState:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        # Reentrant so that a helper holding the lock can call another helper that takes it.
        self.lock = threading.RLock()
        self.workspaces: dict[str, Workspace] = {}
        self.tokens: dict[str, tuple[str, TokenKind]] = {}
        self.users: dict[str, User] = {}
        self.channels: dict[str, Channel] = {}
        self.usergroups: dict[str, UserGroup] = {}
        self.messages: dict[str, dict[str, Message]] = {}
        self.ephemerals: list[Ephemeral] = []
        self.assistant_statuses: dict[tuple[str, str], list[AssistantStatus]] = {}
        # agent_sessions.py: each (channel, thread root)'s session statuses, oldest first.
        self.agent_sessions: dict[tuple[str, str], list[Any]] = {}
        # The agent surface (agent_view.py): prompts per im, titles per (im, thread root).
        self.suggested_prompts: dict[str, Any] = {}
        self.thread_titles: dict[tuple[str, str], str] = {}
        self.response_urls: dict[str, ResponseUrl] = {}
        self.modals = Modals()  # modal_state.py: trigger_ids handed out, views open
        self.home_views: dict[tuple[str, str], Any] = {}  # home.py: (team, user) → the published HomeView
        self.files: dict[str, SlackFile] = {}  # files.py, by id
        # Where url_private and upload URLs point: the fake's own address (Slack's files.slack.com).
        self.files_base = "http://127.0.0.1/"
        self._ts = TsFactory(clock)
        self._serial = itertools.count(1)

    def now(self) -> float:
        return self.clock.now()

    def next_ts(self) -> str:
        return self._ts.next()

    def new_id(self, prefix: str) -> str:
        """A fresh Slack-looking id: a type letter and upper-case base-36 digits."""
        return f"{prefix}{_base36(next(self._serial)).rjust(9, '0')}"

    # Lookups.

    def workspace(self, team_id: str) -> Workspace:
        return self.workspaces[team_id]

    def channel_in(self, team_id: str, channel_id: str) -> Channel | None:
        channel = self.channels.get(channel_id)
        return channel if channel is not None and channel.team_id == team_id else None

    def user_in(self, team_id: str, user_id: str) -> User | None:
        user = self.users.get(user_id)
        return user if user is not None and user.team_id == team_id else None

    def message(self, channel_id: str, ts: str) -> Message | None:
        return self.messages.get(channel_id, {}).get(ts)

    def live_message(self, channel_id: str, ts: str) -> Message | None:
        message = self.message(channel_id, ts)
        return message if message is not None and not message.deleted else None

    def replies(self, root: Message) -> list[Message]:
        channel_messages = self.messages.get(root.channel, {})
        return [channel_messages[ts] for ts in root.reply_ts if not channel_messages[ts].deleted]

    def ephemeral(self, user: str, ts: str) -> Ephemeral | None:
        return next((e for e in self.ephemerals if e.user == user and e.ts == ts and not e.deleted), None)

    # Mutations.

    def add_message(self, message: Message) -> Message:
        """Store a message; a reply is filed under its thread's root.

        A reply to a well-formed ts that names no message is kept but shown nowhere: Slack answers ok and
        the reply lands in a thread nobody can open (python-slack-sdk issue #840).
        """
        self.messages.setdefault(message.channel, {})[message.ts] = message
        root = self.message(message.channel, message.root_ts) if message.is_reply else None
        if root is not None:
            root.thread_ts = root.ts
            root.reply_ts.append(message.ts)
        return message


def _base36(number: int) -> str:
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    text = ""
    while True:
        number, remainder = divmod(number, 36)
        text = digits[remainder] + text
        if number == 0:
            return text


def opened_im(state: SlackState, workspace: Workspace, user: str) -> Channel:
    """The person's direct-message conversation with the app, opened now if it was not yet."""
    for channel in state.channels.values():
        if (
            channel.is_im
            and channel.team_id == workspace.team_id
            and sorted(channel.members) == sorted([user, workspace.app.bot_user_id])
        ):
            return channel
    channel = Channel(
        id=state.new_id("D"),
        team_id=workspace.team_id,
        name=state.new_id("D"),
        members=[user, workspace.app.bot_user_id],
        is_im=True,
    )
    state.channels[channel.id] = channel
    return channel
