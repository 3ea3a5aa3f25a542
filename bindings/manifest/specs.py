"""The specs: what a manifest reads into and is written from, and the spec's defaults (what an omitted
field means). Frozen dataclasses compared by value: applying tells an unchanged resource by equality."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

from kourier.progress import DEFAULT_PROGRESS_MODE, ProgressMode

API_VERSION = "kourier/v1"


class Kind(StrEnum):
    CONNECTION = "Connection"
    BINDING = "Binding"


class Dialect(StrEnum):
    KAGENT_V1 = "kagent-v1"
    A2A = "a2a"


class ProtocolVersion(StrEnum):
    AUTO = "auto"
    V1_0 = "1.0"
    V0_3 = "0.3"


class UserIdentity(StrEnum):
    """What a turn sends the agent as the person behind it (the X-User-Id header kagent reads)."""

    NONE = "none"
    SLACK_USER_ID = "slack-user-id"
    EMAIL = "email"  # from users.info (the users:read.email scope)


class Output(StrEnum):
    LIVE = "live"
    FINAL = "final"


class StopBy(StrEnum):
    """Who may stop a running turn (sessions/stops.py): beyond the spec, any channel member unless set."""

    MEMBERS = "members"
    REQUESTER = "requester"  # only the person whose message the turn carries (an alert's: any member)


class ThreadReplies(StrEnum):
    ALL = "all"
    MENTION = "mention"


class Mentions(StrEnum):
    """Whom the agent's answer may mention: nobody, or people (never a channel or a group)."""

    NONE = "none"
    USERS = "users"


class Unattended(StrEnum):
    """What becomes of a tool's approval in a turn no person started (an alert thread's own turn)."""

    ASK = "ask"  # put to the thread, as any approval
    DENY = "deny"  # denied at once, with a fixed reason for the model; audited as decided by policy


class TriggerKind(StrEnum):
    ALERTMANAGER = "alertmanager"  # Prometheus Alertmanager's webhook payload, version 4
    GENERIC = "generic"  # the small documented JSON shape (docs/manifests.md)


class ThreadPer(StrEnum):
    """What one alert thread of an alertmanager trigger is for."""

    GROUP = "group"  # one Alertmanager group (its groupKey, with the receiver): the default
    ALERT = "alert"  # one alert (its fingerprint), as the generic kind always does


# The spec's defaults: what an omitted field means.
DEFAULT_DIALECT = Dialect.A2A
DEFAULT_PROTOCOL_VERSION = ProtocolVersion.AUTO
DEFAULT_USER_IDENTITY = UserIdentity.NONE
DEFAULT_OUTPUT = Output.LIVE
DEFAULT_THREAD_REPLIES = ThreadReplies.ALL
DEFAULT_ACKNOWLEDGMENT_ENABLED = True
DEFAULT_ACKNOWLEDGMENT_EMOJI = "hourglass_flowing_sand"
DEFAULT_PROGRESS = DEFAULT_PROGRESS_MODE
DEFAULT_ASK_USER = False
DEFAULT_TOOL_APPROVALS = False
# Beyond the spec (issue 21): approvals past the peers, opt-in per Binding.
DEFAULT_SEPARATE_APPROVER = False
DEFAULT_UNATTENDED = Unattended.ASK
DEFAULT_INTERACTION_TIMEOUT = timedelta(minutes=30)
DEFAULT_THREAD_TTL = timedelta(days=90)
DEFAULT_THREAD_PER = ThreadPer.GROUP
DEFAULT_MAX_THREADS_PER_HOUR = 20
# Beyond the spec (docs/security.md): a reply's limits, opt-in per Binding.
DEFAULT_ALLOW_MENTIONS = Mentions.NONE
DEFAULT_MAX_MESSAGES = 10  # no normal answer reaches it: 10 messages of 12,000 characters
# Beyond the spec (issue 30): a mention in a thread Kourier did not start carries the thread so far.
# On by default: it changes no fixed wording or default of the spec, and is what people expect.
DEFAULT_THREAD_CONTEXT_ENABLED = True
DEFAULT_THREAD_CONTEXT_MAX_MESSAGES = 50
DEFAULT_THREAD_CONTEXT_MAX_CHARACTERS = 12_000
# Issue 30: files a person shares go to the agent within these bounds, and files the agent returns
# are uploaded into the thread (sessions/files_in.py, sessions/files_out.py). Media types as the
# agent card names them ("image/*" for a family); sizes in bytes.
DEFAULT_FILE_TYPES = ("image/*", "application/pdf", "text/*", "application/json")
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_TURN_FILE_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_FILES_OUT = 5


# Beyond the spec (issue 33): the Slack app's slash command, as its app manifest declares it.
DEFAULT_SLASH_COMMAND = "/kourier"


@dataclass(frozen=True)
class ConnectionSpec:
    name: str
    bot_token_env: str
    signing_secret_env: str
    app_token_env: str | None = None  # Socket Mode when set
    slash_command: str = DEFAULT_SLASH_COMMAND  # the one command the listeners answer
    # Beyond the spec (issue 33): Slack's agent sessions, whose status follows each turn and whose
    # native stop stops it (kourier/slack/agent_sessions.py). Off: the Stop button alone.
    agent_sessions: bool = False


@dataclass(frozen=True)
class KagentRef:
    """A kagent agent by name: ``spec.agent.kagent``. Applying finds it on the controller (which line,
    at which address) and fills the AgentSpec's ``url`` and ``protocol_version`` from what it found."""

    controller: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} on {self.controller}"


@dataclass(frozen=True)
class AgentSpec:
    url: str  # for a kagent agent by name: its address, once found ("" before)
    dialect: Dialect = DEFAULT_DIALECT
    protocol_version: ProtocolVersion = DEFAULT_PROTOCOL_VERSION
    headers: tuple[tuple[str, str], ...] = ()  # (header name, environment variable), sorted by header
    kagent: KagentRef | None = None
    user_identity: UserIdentity = DEFAULT_USER_IDENTITY

    @property
    def needs_lookup(self) -> bool:
        """A kagent agent by name whose address is not known yet."""
        return self.kagent is not None and not self.url


@dataclass(frozen=True)
class AcknowledgmentSpec:
    enabled: bool = DEFAULT_ACKNOWLEDGMENT_ENABLED
    emoji: str = DEFAULT_ACKNOWLEDGMENT_EMOJI


@dataclass(frozen=True)
class ThreadContextSpec:
    """``spec.chat.threadContext``: what a mention that starts a session in a thread Kourier did not
    start carries of the thread so far (sessions/thread_context.py)."""

    enabled: bool = DEFAULT_THREAD_CONTEXT_ENABLED
    max_messages: int = DEFAULT_THREAD_CONTEXT_MAX_MESSAGES
    max_characters: int = DEFAULT_THREAD_CONTEXT_MAX_CHARACTERS


@dataclass(frozen=True)
class FilesSpec:
    """``spec.chat.files``: which files a person shares reach the agent (``types``, ``maxFileBytes``,
    ``maxTurnBytes``), and how many the agent's answer may put in the thread (``maxFilesOut``), from
    the bytes it sends or from a URL under one of ``fromUrls``."""

    types: tuple[str, ...] = DEFAULT_FILE_TYPES
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_turn_bytes: int = DEFAULT_MAX_TURN_FILE_BYTES
    max_files_out: int = DEFAULT_MAX_FILES_OUT
    from_urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChatSpec:
    thread_replies: ThreadReplies = DEFAULT_THREAD_REPLIES
    acknowledgment: AcknowledgmentSpec = field(default_factory=AcknowledgmentSpec)
    progress: ProgressMode = DEFAULT_PROGRESS
    thread_context: ThreadContextSpec = field(default_factory=ThreadContextSpec)
    files: FilesSpec = field(default_factory=FilesSpec)


@dataclass(frozen=True)
class ToolRule:
    """``spec.interactions.tools[]``: the approval rules of the tools whose name ``match`` fits (a name,
    or a glob: ``*``, ``?``, ``[...]``). A field left out takes the Binding's own (``None``)."""

    match: str
    approver_groups: tuple[str, ...] | None = None  # () : any non-bot member of the channel
    separate_approver: bool | None = None
    unattended: Unattended = DEFAULT_UNATTENDED


@dataclass(frozen=True)
class InteractionsSpec:
    ask_user: bool = DEFAULT_ASK_USER
    tool_approvals: bool = DEFAULT_TOOL_APPROVALS
    approver_groups: tuple[str, ...] = ()  # in the order given: membership is read in that order
    timeout: timedelta = DEFAULT_INTERACTION_TIMEOUT
    # Beyond the spec, opt-in: a denial asks the person why (a modal), and the model reads the reason.
    deny_reasons: bool = False
    # Beyond the spec (issue 21): remind the approvers this long before the deadline; None: never.
    remind_before: timedelta | None = None
    separate_approver: bool = DEFAULT_SEPARATE_APPROVER  # four eyes: the requester may deny, not approve
    tools: tuple[ToolRule, ...] = ()  # in the order given: the first that matches a tool wins
    # Beyond the spec (issue 33), opt-in: approvers may allow a tool for the rest of the thread.
    allow_for_thread: bool = False


@dataclass(frozen=True)
class SessionSpec:
    thread_ttl: timedelta = DEFAULT_THREAD_TTL


@dataclass(frozen=True)
class RepliesSpec:
    allow_mentions: Mentions = DEFAULT_ALLOW_MENTIONS
    max_messages: int = DEFAULT_MAX_MESSAGES


@dataclass(frozen=True)
class BudgetSpec:
    """``spec.budget``: model tokens (in and out, as the agent reports them) a channel may use per UTC
    day; None: no budget. An agent that reports no usage never reaches one."""

    daily_tokens_per_channel: int | None = None


@dataclass(frozen=True)
class TriggerSpec:
    """A door that starts alert threads: POST /triggers/<binding>/<name>, with a bearer token."""

    name: str
    kind: TriggerKind
    token_env: str
    channel: str | None = None  # None: the Binding's only channel
    thread_per: ThreadPer = DEFAULT_THREAD_PER  # alertmanager only: a generic delivery has no group
    max_threads_per_hour: int = DEFAULT_MAX_THREADS_PER_HOUR  # past it: the hour's storm thread


@dataclass(frozen=True)
class SuggestedPrompt:
    """One of the prompts Slack offers a person who opens the app (assistant.threads.setSuggestedPrompts)."""

    title: str
    message: str


@dataclass(frozen=True)
class DirectMessagesSpec:
    """``spec.directMessages``: the Binding takes its Connection's direct messages instead of channels.

    No allowedUsers and no allowedGroups: every member of the workspace may talk to the agent.
    """

    allowed_users: tuple[str, ...] = ()
    allowed_groups: tuple[str, ...] = ()  # in the order given: membership is read in that order
    suggested_prompts: tuple[SuggestedPrompt, ...] = ()
    approvals_channel: str | None = None  # where a direct message's approval is also put to the approvers

    @property
    def open_to_everyone(self) -> bool:
        return not self.allowed_users and not self.allowed_groups


@dataclass(frozen=True)
class BindingSpec:
    name: str
    connection: str
    channels: tuple[str, ...]  # sorted: the order of channels means nothing; empty with directMessages
    agent: AgentSpec
    output: Output = DEFAULT_OUTPUT
    chat: ChatSpec = field(default_factory=ChatSpec)
    interactions: InteractionsSpec = field(default_factory=InteractionsSpec)
    session: SessionSpec = field(default_factory=SessionSpec)
    triggers: tuple[TriggerSpec, ...] = ()  # in the order given
    replies: RepliesSpec = field(default_factory=RepliesSpec)
    budget: BudgetSpec = field(default_factory=BudgetSpec)
    # Beyond the spec, opt-in: an answer's final reply carries thumbs up and down (feedback/).
    feedback: bool = False
    # Beyond the spec: who may stop a running turn; any channel member unless set.
    stop_by: StopBy = StopBy.MEMBERS
    direct_messages: DirectMessagesSpec | None = None


Spec = ConnectionSpec | BindingSpec


def sort_headers(items: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Headers in their one order, so that two specs with the same headers are equal."""
    return tuple(sorted(items, key=lambda item: (item[0].lower(), item[0])))
