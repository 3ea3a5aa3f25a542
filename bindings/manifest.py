"""Manifests, the operator's format for Connections and Bindings: parse, validate, serialize.

Pure: no ORM and no I/O. The loader (``manage.py apply``) and the admin forms both validate through
``validate()``, so a rule and its wording live here once. Every refusal names the resource and the
field path, as ``Binding "ops": spec.interactions.approverGroups: at most 10 entries are allowed (got 11)``.

Rules that span documents (a channel bound twice, an unknown connection) are checked against plain data
that the caller passes in: the names of the Connections that exist and the channels already bound.

A field set to null is treated as omitted, and an omitted field takes the spec's default.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml

from kourier.progress import DEFAULT_PROGRESS_MODE, ProgressMode

API_VERSION = "kourier/v1"
NAME_MAX_LENGTH = 63
ENV_NAME_MAX_LENGTH = 255
URL_MAX_LENGTH = 500
EMOJI_MAX_LENGTH = 100
MAX_APPROVER_GROUPS = 10
MAX_TOOL_RULES = 50
TOOL_MATCH_MAX_LENGTH = 200
MAX_TRIGGERS = 20
MAX_THREADS_PER_HOUR_LIMIT = 10000
MAX_DURATION = timedelta(days=3650)


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
MAX_MAX_MESSAGES = 100

NAME_RE = re.compile(r"[-a-zA-Z0-9_]+")  # Django's slug, so the model's SlugField agrees
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token
# Kubernetes names: a namespace is a DNS label, an agent's name a DNS subdomain.
KUBERNETES_NAMESPACE_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
KUBERNETES_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
SLACK_ID_MAX_LENGTH = 32
CHANNEL_ID_RE = re.compile(r"[CGD][A-Z0-9]{1,31}")
USER_GROUP_ID_RE = re.compile(r"S[A-Z0-9]{1,31}")
USER_ID_RE = re.compile(r"[UW][A-Z0-9]{1,31}")
PUBLIC_OR_PRIVATE_CHANNEL_ID_RE = re.compile(r"[CG][A-Z0-9]{1,31}")
DURATION_RE = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_DURATION_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


# --- Durations ---------------------------------------------------------------------------------------


def parse_duration(text: str) -> timedelta:
    """Parse ``45s``, ``30m``, ``1h30m``, ``90d``: whole numbers of units, largest unit first."""
    match = DURATION_RE.fullmatch(text)
    if not text or match is None:
        raise ValueError(f"not a duration: {text!r}")
    seconds = sum(int(n) * size for n, (_, size) in zip(match.groups(), _DURATION_UNITS, strict=True) if n)
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The canonical form: each unit at most once, largest first, zero units left out (``1h30m``)."""
    seconds = int(value.total_seconds())
    if seconds <= 0:
        return "0s"
    parts = []
    for unit, size in _DURATION_UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


# --- What validation produces ------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """A refusal: which resource, which field, and what is wrong."""

    subject: str  # Binding "ops", Connection "acme", or where the document is when it has no usable name
    path: str  # spec.interactions.approverGroups[2]; empty for a problem with the document as a whole
    message: str

    def __str__(self) -> str:
        return (
            f"{self.subject}: {self.path}: {self.message}" if self.path else f"{self.subject}: {self.message}"
        )


@dataclass(frozen=True)
class ManifestWarning:
    """Accepted, but the operator should know. ``message`` names the field itself."""

    subject: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.message}"


@dataclass(frozen=True)
class Document:
    """One YAML document, and where it came from (for the refusals of a document with no usable name)."""

    data: Any
    source: str = ""  # a file name, "<stdin>", or "" when it came from elsewhere (the admin)
    index: int = 0  # 1-based position in its source; 0 when it has no position

    @property
    def location(self) -> str:
        if not self.index:
            return ""
        return f"document {self.index} in {self.source}" if self.source else f"document {self.index}"


@dataclass(frozen=True)
class ConnectionSpec:
    name: str
    bot_token_env: str
    signing_secret_env: str
    app_token_env: str | None = None  # Socket Mode when set


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
class ChatSpec:
    thread_replies: ThreadReplies = DEFAULT_THREAD_REPLIES
    acknowledgment: AcknowledgmentSpec = field(default_factory=AcknowledgmentSpec)
    progress: ProgressMode = DEFAULT_PROGRESS


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
    direct_messages: DirectMessagesSpec | None = None


Spec = ConnectionSpec | BindingSpec


@dataclass
class Validation:
    """The outcome of validating some documents: the specs are usable only when ``errors`` is empty."""

    connections: list[ConnectionSpec] = field(default_factory=list)
    bindings: list[BindingSpec] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    warnings: list[ManifestWarning] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def subject_for(kind: str, name: str) -> str:
    return f'{kind} "{name}"'


# --- Parsing YAML ------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing a key written twice in one mapping (PyYAML keeps the last silently)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # keys merged in with << may be overridden on purpose
        key = loader.construct_object(key_node, deep=True)
        try:
            repeated = key in seen
        except TypeError:
            continue  # unhashable: construct_mapping refuses it with its own message
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {json.dumps(str(key))}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_documents(text: str, source: str = "") -> tuple[list[Document], list[Problem]]:
    """Split YAML text into documents (empty ones skipped), or say where the YAML is broken."""
    documents: list[Document] = []
    try:
        for index, data in enumerate(yaml.load_all(text, Loader=_Loader), start=1):
            if data is not None:
                documents.append(Document(data=data, source=source, index=index))
    except yaml.YAMLError as exc:
        where = source or "input"
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f"{where}: line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        return documents, [Problem(where, "", f"not valid YAML: {problem}")]
    return documents, []


# --- Validation --------------------------------------------------------------------------------------


_MISSING = object()
E = TypeVar("E", bound=StrEnum)

CONNECTION_FIELDS = ("botToken", "signingSecret", "appToken")
BINDING_FIELDS = (
    "connection",
    "channels",
    "agent",
    "output",
    "chat",
    "interactions",
    "session",
    "triggers",
    "replies",
    "budget",
    "feedback",
    "directMessages",
)
DIRECT_MESSAGES_FIELDS = ("allowedUsers", "allowedGroups", "suggestedPrompts", "approvalsChannel")
SUGGESTED_PROMPT_FIELDS = ("title", "message")
MAX_SUGGESTED_PROMPTS = 4  # Slack: "up to four suggested prompts" (docs/slack-direct-messages.md)
SUGGESTED_PROMPT_MAX_LENGTH = 300  # ours: a prompt is a line, not a document
MAX_ALLOWED_USERS = 500
MAX_ALLOWED_GROUPS = 10  # as approverGroups
BUDGET_FIELDS = ("dailyTokensPerChannel",)
MAX_DAILY_TOKENS = 10**12
TRIGGER_FIELDS = ("name", "kind", "token", "channel", "threadPer", "maxThreadsPerHour")
AGENT_FIELDS = ("url", "kagent", "dialect", "protocolVersion", "headers", "userIdentity")
KAGENT_FIELDS = ("controller", "namespace", "name")
CHAT_FIELDS = ("threadReplies", "acknowledgment", "progress")
ACKNOWLEDGMENT_FIELDS = ("enabled", "emoji")
INTERACTIONS_FIELDS = (
    "askUser", "toolApprovals", "approverGroups", "timeout", "separateApprover", "tools", "denyReasons", "remindBefore",
)  # fmt: skip
TOOL_RULE_FIELDS = ("match", "approverGroups", "separateApprover", "unattended")
SESSION_FIELDS = ("threadTTL",)
REPLIES_FIELDS = ("allowMentions", "maxMessages")
DOCUMENT_FIELDS = ("apiVersion", "kind", "metadata", "spec")
METADATA_FIELDS = ("name",)
SECRET_FIELDS = ("fromEnv",)


def _show(value: Any) -> str:
    """A value as the operator wrote it, for "(got ...)"; long strings are cut."""
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 60 else value[:57] + "...")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return _type_name(value)


def _type_name(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Checker:
    """Reads one document, recording each refusal against its field path."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.errors: list[Problem] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(Problem(self.subject, path, message))

    def mapping(self, value: Any, path: str, allowed: Sequence[str]) -> dict[str, Any] | None:
        """A mapping with only the ``allowed`` keys, or None (refused). A missing mapping is empty."""
        if value is _MISSING:
            return {}
        if not isinstance(value, dict):
            self.error(path, f"must be a mapping (got {_show(value)})")
            return None
        for key in value:
            if key not in allowed:
                self.error(_join(path, str(key)), _unknown_field(str(key), allowed))
        return {key: val for key, val in value.items() if key in allowed}

    def required(self, value: Any, path: str) -> bool:
        if value is _MISSING:
            self.error(path, "is required")
            return False
        return True

    def string(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str):
            self.error(path, f"must be a string (got {_show(value)})")
            return None
        return value

    def boolean(self, value: Any, path: str, default: bool) -> bool:
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.error(path, f"must be true or false (got {_show(value)})")
            return default
        return value

    def choice(self, value: Any, path: str, choices: type[E], default: E) -> E:
        if value is _MISSING:
            return default
        allowed = ", ".join(c.value for c in choices)
        if not isinstance(value, str) or value not in {c.value for c in choices}:
            self.error(path, f"must be one of {allowed} (got {_show(value)})")
            return default
        return choices(value)

    def duration(self, value: Any, path: str, default: timedelta) -> timedelta:
        if value is _MISSING:
            return default
        try:
            parsed = parse_duration(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        except OverflowError:
            parsed = MAX_DURATION + timedelta(days=1)  # beyond what Python holds: refused as too long
        if parsed is None:
            self.error(path, f"must be a duration such as 45s, 30m, 1h30m or 90d (got {_show(value)})")
            return default
        if parsed <= timedelta(0):
            self.error(path, f"must be longer than zero (got {_show(value)})")
        elif parsed > MAX_DURATION:
            self.error(path, f"must be at most {format_duration(MAX_DURATION)} (got {_show(value)})")
        return parsed

    def env_reference(self, value: Any, path: str) -> str | None:
        """``{fromEnv: NAME}``. A secret never appears in a manifest, so its value is never echoed."""
        if not isinstance(value, dict):
            self.error(
                path,
                "must be a reference to an environment variable, {fromEnv: VARIABLE_NAME}; "
                f"a secret is never written in a manifest (got {_type_name(value)})",
            )
            return None
        ref = self.mapping(value, path, SECRET_FIELDS)
        if ref is None:
            return None
        name = ref.get("fromEnv", _MISSING)
        if not self.required(name, f"{path}.fromEnv"):
            return None
        return self.env_name(name, f"{path}.fromEnv")

    def env_name(self, value: Any, path: str) -> str | None:
        name = self.string(value, path)
        if name is None:
            return None
        if not ENV_NAME_RE.fullmatch(name) or len(name) > ENV_NAME_MAX_LENGTH:
            # Not echoed: a value here that is not a variable name may well be the secret itself.
            self.error(
                path,
                "must be an environment variable name: letters, digits and underscores, "
                f"not starting with a digit, at most {ENV_NAME_MAX_LENGTH} characters",
            )
            return None
        return name

    def id_list(
        self, value: Any, path: str, pattern: re.Pattern[str], what: str, example: str
    ) -> list[tuple[int, str]] | None:
        """A list of Slack IDs, refusing wrong types, empty entries, bad shapes and duplicates."""
        if not isinstance(value, list):
            self.error(path, f"must be a list (got {_show(value)})")
            return None
        entries: list[tuple[int, str]] = []
        seen: set[str] = set()
        for i, entry in enumerate(value):
            entry_path = f"{path}[{i}]"
            if not isinstance(entry, str):
                self.error(entry_path, f"must be a string (got {_show(entry)})")
            elif not entry.strip():
                self.error(entry_path, "must not be empty")
            elif not pattern.fullmatch(entry):
                self.error(entry_path, f"must be a Slack {what} ID such as {example} (got {_show(entry)})")
            elif entry in seen:
                self.error(entry_path, f"duplicate entry {_show(entry)}")
            else:
                seen.add(entry)
                entries.append((i, entry))
        return entries


def _unknown_field(key: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    if close:
        return f'unknown field (did you mean "{close[0]}"?)'
    return f"unknown field (expected one of: {', '.join(allowed)})"


def _get(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """The value of a field, or _MISSING when it is absent or null."""
    if mapping is None:
        return _MISSING
    value = mapping.get(key, _MISSING)
    return _MISSING if value is None else value


@dataclass
class _Read:
    """One document as far as it could be read: enough for the checks across documents."""

    document: Document
    kind: Kind | None
    name: str | None
    subject: str
    spec: Spec | None = None
    connection: str | None = None
    channels: list[tuple[int, str]] = field(default_factory=list)
    direct_messages: bool = False  # takes its Connection's direct messages
    errors: list[Problem] = field(default_factory=list)

    def error(self, path: str, message: str) -> None:
        self.errors.append(Problem(self.subject, path, message))


def _read_document(document: Document) -> _Read:
    data = document.data
    location = document.location
    if not isinstance(data, dict):
        read = _Read(document, None, None, location or "document")
        read.error("", f"must be a mapping with {', '.join(DOCUMENT_FIELDS)} (got {_show(data)})")
        return read

    kind_value = _get(data, "kind")
    kind = Kind(kind_value) if isinstance(kind_value, str) and kind_value in set(Kind) else None
    metadata = _get(data, "metadata")
    name_value = _get(metadata, "name") if isinstance(metadata, dict) else _MISSING
    name: str | None = None
    if isinstance(name_value, str) and NAME_RE.fullmatch(name_value) and len(name_value) <= NAME_MAX_LENGTH:
        name = name_value
    if kind is not None and name is not None:
        subject = subject_for(kind.value, name)
    elif kind is not None:
        subject = f"{kind.value} in {location}" if location else kind.value
    else:
        subject = location or "document"

    check = _Checker(subject)
    check.mapping(data, "", DOCUMENT_FIELDS)
    api_version = _get(data, "apiVersion")
    if check.required(api_version, "apiVersion") and api_version != API_VERSION:
        check.error("apiVersion", f"must be {API_VERSION} (got {_show(api_version)})")
    if check.required(kind_value, "kind") and kind is None:
        check.error("kind", f"must be one of {', '.join(k.value for k in Kind)} (got {_show(kind_value)})")
    if check.required(metadata, "metadata"):
        section = check.mapping(metadata, "metadata", METADATA_FIELDS)
        if section is not None and check.required(name_value, "metadata.name") and name is None:
            check.error(
                "metadata.name",
                "must be a name of letters, digits, hyphens and underscores, "
                f"at most {NAME_MAX_LENGTH} characters (got {_show(name_value)})",
            )
    read = _Read(document, kind, name, subject)
    spec_value = _get(data, "spec")
    if kind is Kind.CONNECTION:
        spec: Spec | None = _read_connection(check, name, spec_value)
    elif kind is Kind.BINDING:
        spec = _read_binding(check, name, spec_value, read)
    else:
        spec = None
    read.spec = spec
    read.errors = check.errors
    return read


def _read_connection(check: _Checker, name: str | None, value: Any) -> ConnectionSpec | None:
    if not check.required(value, "spec"):
        return None
    spec = check.mapping(value, "spec", CONNECTION_FIELDS)
    if spec is None:
        return None
    bot_token = _get(spec, "botToken")
    signing_secret = _get(spec, "signingSecret")
    app_token = _get(spec, "appToken")
    bot_token_env = (
        check.env_reference(bot_token, "spec.botToken")
        if check.required(bot_token, "spec.botToken")
        else None
    )
    signing_secret_env = (
        check.env_reference(signing_secret, "spec.signingSecret")
        if check.required(signing_secret, "spec.signingSecret")
        else None
    )
    app_token_env = None if app_token is _MISSING else check.env_reference(app_token, "spec.appToken")
    if name is None or bot_token_env is None or signing_secret_env is None:
        return None
    return ConnectionSpec(name, bot_token_env, signing_secret_env, app_token_env)


def _read_binding(check: _Checker, name: str | None, value: Any, read: _Read) -> BindingSpec | None:
    if not check.required(value, "spec"):
        return None
    spec = check.mapping(value, "spec", BINDING_FIELDS)
    if spec is None:
        return None

    connection_value = _get(spec, "connection")
    if check.required(connection_value, "spec.connection"):
        read.connection = check.string(connection_value, "spec.connection")

    direct_messages_value = _get(spec, "directMessages")
    direct_messages = None
    channels_value = _get(spec, "channels")
    if direct_messages_value is not _MISSING:
        direct_messages = _read_direct_messages(check, direct_messages_value)
        read.direct_messages = direct_messages is not None
        if channels_value is not _MISSING:
            check.error("spec.directMessages", "a Binding takes channels or directMessages, not both")
    elif check.required(channels_value, "spec.channels"):
        channels = check.id_list(channels_value, "spec.channels", CHANNEL_ID_RE, "channel", "C0123456789")
        if channels is not None:
            read.channels = channels
            if not channels_value:
                check.error("spec.channels", "must list at least one channel")

    agent = _read_agent(check, _get(spec, "agent"))
    output = check.choice(_get(spec, "output"), "spec.output", Output, DEFAULT_OUTPUT)
    chat = _read_chat(check, _get(spec, "chat"))
    interactions = _read_interactions(check, _get(spec, "interactions"))
    session_section = check.mapping(_get(spec, "session"), "spec.session", SESSION_FIELDS)
    thread_ttl = check.duration(
        _get(session_section, "threadTTL"), "spec.session.threadTTL", DEFAULT_THREAD_TTL
    )
    replies = _read_replies(check, _get(spec, "replies"))

    dialect = agent.dialect if agent is not None else _dialect_of(spec)
    if interactions is not None and interactions.tool_approvals and dialect not in (None, Dialect.KAGENT_V1):
        check.error(
            "spec.interactions.toolApprovals",
            f"tool approvals need the kagent-v1 dialect (spec.agent.dialect is {dialect})",
        )
    if (
        direct_messages is not None
        and interactions is not None
        and interactions.approver_groups
        and direct_messages.approvals_channel is None
    ):
        check.error(
            "spec.directMessages.approvalsChannel",
            "is required with approver groups: an approver outside a direct message cannot see its prompt",
        )
    triggers = _read_triggers(check, _get(spec, "triggers"), read.channels)
    budget = _read_budget(check, _get(spec, "budget"))
    feedback = check.boolean(_get(spec, "feedback"), "spec.feedback", False)
    if (
        (direct_messages_value is not _MISSING and direct_messages is None)
        or name is None
        or read.connection is None
        or agent is None
        or interactions is None
        or chat is None
        or triggers is None
        or replies is None
        or budget is None
    ):
        return None
    return BindingSpec(
        name=name,
        connection=read.connection,
        channels=tuple(sorted(channel for _, channel in read.channels)),
        agent=agent,
        output=output,
        chat=chat,
        interactions=interactions,
        session=SessionSpec(thread_ttl=thread_ttl),
        triggers=triggers,
        replies=replies,
        budget=budget,
        feedback=feedback,
        direct_messages=direct_messages,
    )


def _read_direct_messages(check: _Checker, value: Any) -> DirectMessagesSpec | None:
    """``true``, or a mapping of the options (``false`` is the same as leaving the section out: refused,
    since a Binding without channels takes nothing)."""
    path = "spec.directMessages"
    if value is True:
        return DirectMessagesSpec()
    if not isinstance(value, dict):
        check.error(
            path, f"must be true or a mapping of {', '.join(DIRECT_MESSAGES_FIELDS)} (got {_show(value)})"
        )
        return None
    section = check.mapping(value, path, DIRECT_MESSAGES_FIELDS)
    if section is None:
        return None
    ok = True
    users: list[tuple[int, str]] = []
    groups: list[tuple[int, str]] = []
    for key, pattern, what, example, most, into in (
        ("allowedUsers", USER_ID_RE, "user", "U0123456789", MAX_ALLOWED_USERS, users),
        ("allowedGroups", USER_GROUP_ID_RE, "user group", "S0123456789", MAX_ALLOWED_GROUPS, groups),
    ):
        listed = _get(section, key)
        if listed is _MISSING:
            continue
        if isinstance(listed, list) and len(listed) > most:
            check.error(f"{path}.{key}", f"at most {most} entries are allowed (got {len(listed)})")
            ok = False
        entries = check.id_list(listed, f"{path}.{key}", pattern, what, example)
        if entries is None:
            ok = False
        else:
            into.extend(entries)
    prompts = _read_suggested_prompts(check, _get(section, "suggestedPrompts"))
    channel_value = _get(section, "approvalsChannel")
    approvals_channel = None
    if channel_value is not _MISSING:
        if isinstance(channel_value, str) and PUBLIC_OR_PRIVATE_CHANNEL_ID_RE.fullmatch(channel_value):
            approvals_channel = channel_value
        else:
            check.error(
                f"{path}.approvalsChannel",
                f"must be a Slack channel ID such as C0123456789 (got {_show(channel_value)})",
            )
            ok = False
    if not ok or prompts is None:
        return None
    return DirectMessagesSpec(
        allowed_users=tuple(user for _, user in users),
        allowed_groups=tuple(group for _, group in groups),
        suggested_prompts=prompts,
        approvals_channel=approvals_channel,
    )


def _read_suggested_prompts(check: _Checker, value: Any) -> tuple[SuggestedPrompt, ...] | None:
    path = "spec.directMessages.suggestedPrompts"
    if value is _MISSING:
        return ()
    if not isinstance(value, list):
        check.error(path, f"must be a list (got {_show(value)})")
        return None
    if len(value) > MAX_SUGGESTED_PROMPTS:
        check.error(path, f"at most {MAX_SUGGESTED_PROMPTS} prompts are allowed (got {len(value)})")
        return None
    prompts = []
    for i, entry in enumerate(value):
        entry_path = f"{path}[{i}]"
        section = check.mapping(entry, entry_path, SUGGESTED_PROMPT_FIELDS)
        if section is None:
            return None
        texts = {}
        for key in SUGGESTED_PROMPT_FIELDS:
            text = _get(section, key)
            if not check.required(text, f"{entry_path}.{key}"):
                continue
            if not isinstance(text, str) or not text.strip():
                check.error(f"{entry_path}.{key}", f"must be a non-empty string (got {_show(text)})")
            elif len(text) > SUGGESTED_PROMPT_MAX_LENGTH:
                check.error(
                    f"{entry_path}.{key}", f"must be at most {SUGGESTED_PROMPT_MAX_LENGTH} characters"
                )
            else:
                texts[key] = text.strip()
        if len(texts) != len(SUGGESTED_PROMPT_FIELDS):
            return None
        prompts.append(SuggestedPrompt(title=texts["title"], message=texts["message"]))
    return tuple(prompts)


def _read_replies(check: _Checker, value: Any) -> RepliesSpec | None:
    section = check.mapping(value, "spec.replies", REPLIES_FIELDS)
    if section is None:
        return None
    mentions = check.choice(
        _get(section, "allowMentions"), "spec.replies.allowMentions", Mentions, DEFAULT_ALLOW_MENTIONS
    )
    count = _get(section, "maxMessages")
    if count is _MISSING:
        return RepliesSpec(allow_mentions=mentions)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_MAX_MESSAGES:
        check.error(
            "spec.replies.maxMessages",
            f"must be a whole number from 1 to {MAX_MAX_MESSAGES} (got {_show(count)})",
        )
        return None
    return RepliesSpec(allow_mentions=mentions, max_messages=count)


def _read_budget(check: _Checker, value: Any) -> BudgetSpec | None:
    section = check.mapping(value, "spec.budget", BUDGET_FIELDS)
    if section is None:
        return None
    tokens = _get(section, "dailyTokensPerChannel")
    if tokens is _MISSING:
        return BudgetSpec()
    path = "spec.budget.dailyTokensPerChannel"
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens <= MAX_DAILY_TOKENS:
        check.error(
            path, f"must be a whole number of tokens from 1 to {MAX_DAILY_TOKENS} (got {_show(tokens)})"
        )
        return None
    return BudgetSpec(daily_tokens_per_channel=tokens)


def _read_triggers(
    check: _Checker, value: Any, channels: Sequence[tuple[int, str]]
) -> tuple[TriggerSpec, ...] | None:
    """The Binding's triggers: each named once, of a known kind, with its token's variable, and in one
    of the Binding's channels (required when it has more than one)."""
    if value is _MISSING:
        return ()
    path = "spec.triggers"
    if not isinstance(value, list):
        check.error(path, f"must be a list (got {_show(value)})")
        return None
    if len(value) > MAX_TRIGGERS:
        check.error(path, f"at most {MAX_TRIGGERS} entries are allowed (got {len(value)})")
        return None
    bound = [channel for _, channel in channels]
    triggers: list[TriggerSpec] = []
    seen: set[str] = set()
    ok = True
    for i, entry in enumerate(value):
        entry_path = f"{path}[{i}]"
        section = check.mapping(entry, entry_path, TRIGGER_FIELDS)
        if section is None:
            ok = False
            continue
        before = len(check.errors)
        name_value = _get(section, "name")
        name = None
        if check.required(name_value, f"{entry_path}.name"):
            if (
                isinstance(name_value, str)
                and NAME_RE.fullmatch(name_value)
                and len(name_value) <= NAME_MAX_LENGTH
            ):
                name = name_value
                if name in seen:
                    check.error(f"{entry_path}.name", f"duplicate trigger {_show(name)}")
                seen.add(name)
            else:
                check.error(
                    f"{entry_path}.name",
                    "must be a name of letters, digits, hyphens and underscores, "
                    f"at most {NAME_MAX_LENGTH} characters (got {_show(name_value)})",
                )
        kind_value = _get(section, "kind")
        kind = None
        if check.required(kind_value, f"{entry_path}.kind"):
            allowed = ", ".join(k.value for k in TriggerKind)
            if isinstance(kind_value, str) and kind_value in set(TriggerKind):
                kind = TriggerKind(kind_value)
            else:
                check.error(f"{entry_path}.kind", f"must be one of {allowed} (got {_show(kind_value)})")
        token_value = _get(section, "token")
        token_env = (
            check.env_reference(token_value, f"{entry_path}.token")
            if check.required(token_value, f"{entry_path}.token")
            else None
        )
        channel_value = _get(section, "channel")
        channel = None
        if channel_value is not _MISSING:
            channel = check.string(channel_value, f"{entry_path}.channel")
            if channel is not None and bound and channel not in bound:
                check.error(
                    f"{entry_path}.channel",
                    f"must be one of the Binding's channels ({', '.join(bound)}) (got {_show(channel)})",
                )
        elif len(bound) > 1:
            check.error(f"{entry_path}.channel", "is required when the Binding has more than one channel")
        thread_per = _read_thread_per(check, _get(section, "threadPer"), f"{entry_path}.threadPer", kind)
        cap_value = _get(section, "maxThreadsPerHour")
        cap = DEFAULT_MAX_THREADS_PER_HOUR
        if cap_value is not _MISSING:
            if (
                isinstance(cap_value, int)
                and not isinstance(cap_value, bool)
                and 1 <= cap_value <= MAX_THREADS_PER_HOUR_LIMIT
            ):
                cap = cap_value
            else:
                check.error(
                    f"{entry_path}.maxThreadsPerHour",
                    f"must be a whole number from 1 to {MAX_THREADS_PER_HOUR_LIMIT} (got {_show(cap_value)})",
                )
        if len(check.errors) > before or name is None or kind is None or token_env is None:
            ok = False
            continue
        triggers.append(
            TriggerSpec(
                name=name,
                kind=kind,
                token_env=token_env,
                channel=channel,
                thread_per=thread_per,
                max_threads_per_hour=cap,
            )
        )
    return tuple(triggers) if ok else None


def _read_thread_per(check: _Checker, value: Any, path: str, kind: TriggerKind | None) -> ThreadPer:
    """An alertmanager trigger's threads: per group (default) or per alert; a generic trigger sends
    one alert at a time and has no group, so its threads are per alert and it takes no threadPer."""
    if kind is TriggerKind.GENERIC:
        if value is not _MISSING:
            check.error(
                path, "only an alertmanager trigger groups alerts; a generic one has a thread per alert"
            )
        return DEFAULT_THREAD_PER  # not read: a generic delivery is one alert, with no group
    if value is _MISSING:
        return DEFAULT_THREAD_PER
    if isinstance(value, str) and value in set(ThreadPer):
        return ThreadPer(value)
    check.error(path, f"must be one of {', '.join(t.value for t in ThreadPer)} (got {_show(value)})")
    return DEFAULT_THREAD_PER


def _dialect_of(spec: dict[str, Any]) -> Dialect | None:
    """The dialect of a Binding whose agent section has refusals, when the dialect itself is fine."""
    agent = _get(spec, "agent")
    value = _get(agent, "dialect") if isinstance(agent, dict) else _MISSING
    if value is _MISSING:
        return DEFAULT_DIALECT
    return Dialect(value) if isinstance(value, str) and value in set(Dialect) else None


def _read_agent(check: _Checker, value: Any) -> AgentSpec | None:
    if not check.required(value, "spec.agent"):
        return None
    agent = check.mapping(value, "spec.agent", AGENT_FIELDS)
    if agent is None:
        return None
    url_value = _get(agent, "url")
    kagent_value = _get(agent, "kagent")
    url = None
    kagent = None
    if url_value is not _MISSING and kagent_value is not _MISSING:
        check.error("spec.agent.kagent", "give either spec.agent.url or spec.agent.kagent, not both")
    elif kagent_value is not _MISSING:
        kagent = _read_kagent(check, kagent_value)
    elif url_value is _MISSING:
        check.error("spec.agent.url", "is required (or name a kagent agent with spec.agent.kagent)")
    else:
        url = _http_url(check, url_value, "spec.agent.url")
    dialect = check.choice(_get(agent, "dialect"), "spec.agent.dialect", Dialect, DEFAULT_DIALECT)
    version_value = _get(agent, "protocolVersion")
    if isinstance(version_value, float) and str(version_value) in {v.value for v in ProtocolVersion}:
        version_value = str(version_value)  # protocolVersion: 1.0 unquoted is a YAML number
    version = check.choice(
        version_value, "spec.agent.protocolVersion", ProtocolVersion, DEFAULT_PROTOCOL_VERSION
    )
    if kagent_value is not _MISSING:
        # A kagent agent speaks kagent's dialect, in the A2A version its card offers.
        if _get(agent, "dialect") is _MISSING:
            dialect = Dialect.KAGENT_V1
        elif dialect is not Dialect.KAGENT_V1:
            check.error(
                "spec.agent.dialect",
                f"a kagent agent speaks {Dialect.KAGENT_V1.value} (got {_show(dialect.value)})",
            )
        if version is not ProtocolVersion.AUTO:
            check.error(
                "spec.agent.protocolVersion",
                "is read from the agent card for a kagent agent: leave it out, or set it to auto "
                f"(got {_show(version.value)})",
            )
    headers = _read_headers(check, _get(agent, "headers"))
    user_identity = check.choice(
        _get(agent, "userIdentity"), "spec.agent.userIdentity", UserIdentity, DEFAULT_USER_IDENTITY
    )
    if headers is None or (url is None and kagent is None):
        return None
    return AgentSpec(
        url=url or "",
        dialect=dialect,
        protocol_version=version,
        headers=headers,
        kagent=kagent,
        user_identity=user_identity,
    )


def _http_url(check: _Checker, value: Any, path: str) -> str | None:
    url = check.string(value, path)
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > URL_MAX_LENGTH:
        check.error(
            path,
            f"must be an http:// or https:// URL of at most {URL_MAX_LENGTH} characters (got {_show(url)})",
        )
        return None
    if "@" in parts.netloc or "?" in url or "#" in url:
        # Not echoed: a user:password@ or a ?token= is a secret written where no secret goes.
        check.error(
            path,
            "must be an address without credentials (user:password@), a query (?…) or a fragment (#…): "
            "a credential goes in spec.agent.headers, read from the environment",
        )
        return None
    return url


def _read_kagent(check: _Checker, value: Any) -> KagentRef | None:
    path = "spec.agent.kagent"
    section = check.mapping(value, path, KAGENT_FIELDS)
    if section is None:
        return None
    found: dict[str, str | None] = {}
    for key in KAGENT_FIELDS:
        field_value = _get(section, key)
        found[key] = None
        if check.required(field_value, f"{path}.{key}"):
            found[key] = (
                _http_url(check, field_value, f"{path}.{key}")
                if key == "controller"
                else check.string(field_value, f"{path}.{key}")
            )
    for key, pattern, what in (
        ("namespace", KUBERNETES_NAMESPACE_RE, "a Kubernetes namespace"),
        ("name", KUBERNETES_NAME_RE, "a Kubernetes name"),
    ):
        text = found[key]
        if text is not None and not pattern.fullmatch(text):
            check.error(
                f"{path}.{key}",
                f"must be {what}: lower-case letters, digits and hyphens (got {_show(text)})",
            )
            found[key] = None
    controller, namespace, name = found["controller"], found["namespace"], found["name"]
    if controller is None or namespace is None or name is None:
        return None
    return KagentRef(controller=controller, namespace=namespace, name=name)


def _read_headers(check: _Checker, value: Any) -> tuple[tuple[str, str], ...] | None:
    if value is _MISSING:
        return ()
    if not isinstance(value, dict):
        check.error(
            "spec.agent.headers",
            f"must be a mapping of header names to {{fromEnv: NAME}} (got {_show(value)})",
        )
        return None
    headers: dict[str, str] = {}
    seen: dict[str, str] = {}
    ok = True
    for header, ref in value.items():
        path = f"spec.agent.headers.{header}"
        if not isinstance(header, str) or not HEADER_NAME_RE.fullmatch(header):
            check.error(path, f"must be an HTTP header name (got {_show(header)})")
            ok = False
            continue
        if header.lower() in seen:
            check.error(
                path, f'duplicate header: HTTP header names ignore case, and "{seen[header.lower()]}" is set'
            )
            ok = False
            continue
        seen[header.lower()] = header
        env = check.env_reference(ref, path)
        if env is None:
            ok = False
        else:
            headers[header] = env
    if not ok:
        return None
    return sort_headers(headers.items())


def header_variable_allowed(name: str, allowed: Sequence[str]) -> bool:
    """Whether an agent header may read variable ``name``: listed in ``allowed`` by its name, or by a
    prefix ending in "*" (AGENT_HEADER_VARIABLES)."""
    return any(name.startswith(entry[:-1]) if entry.endswith("*") else name == entry for entry in allowed)


def sort_headers(items: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Headers in their one order, so that two specs with the same headers are equal."""
    return tuple(sorted(items, key=lambda item: (item[0].lower(), item[0])))


def _read_chat(check: _Checker, value: Any) -> ChatSpec | None:
    chat = check.mapping(value, "spec.chat", CHAT_FIELDS)
    if chat is None:
        return None
    thread_replies = check.choice(
        _get(chat, "threadReplies"), "spec.chat.threadReplies", ThreadReplies, DEFAULT_THREAD_REPLIES
    )
    progress = check.choice(_get(chat, "progress"), "spec.chat.progress", ProgressMode, DEFAULT_PROGRESS)
    ack = check.mapping(_get(chat, "acknowledgment"), "spec.chat.acknowledgment", ACKNOWLEDGMENT_FIELDS)
    if ack is None:
        return None
    enabled = check.boolean(
        _get(ack, "enabled"), "spec.chat.acknowledgment.enabled", DEFAULT_ACKNOWLEDGMENT_ENABLED
    )
    emoji_value = _get(ack, "emoji")
    emoji = DEFAULT_ACKNOWLEDGMENT_EMOJI
    if emoji_value is not _MISSING:
        path = "spec.chat.acknowledgment.emoji"
        text = check.string(emoji_value, path)
        if text is None:
            return None
        if not text or ":" in text or any(c.isspace() for c in text) or len(text) > EMOJI_MAX_LENGTH:
            check.error(
                path,
                f"must be a bare reaction name such as eyes, without colons or spaces (got {_show(text)})",
            )
            return None
        emoji = text
    return ChatSpec(
        thread_replies=thread_replies,
        acknowledgment=AcknowledgmentSpec(enabled=enabled, emoji=emoji),
        progress=progress,
    )


def _read_interactions(check: _Checker, value: Any) -> InteractionsSpec | None:
    section = check.mapping(value, "spec.interactions", INTERACTIONS_FIELDS)
    if section is None:
        return None
    ask_user = check.boolean(_get(section, "askUser"), "spec.interactions.askUser", DEFAULT_ASK_USER)
    tool_approvals = check.boolean(
        _get(section, "toolApprovals"), "spec.interactions.toolApprovals", DEFAULT_TOOL_APPROVALS
    )
    timeout = check.duration(
        _get(section, "timeout"), "spec.interactions.timeout", DEFAULT_INTERACTION_TIMEOUT
    )
    groups_value = _get(section, "approverGroups")
    groups: tuple[str, ...] = ()
    if groups_value is not _MISSING:
        path = "spec.interactions.approverGroups"
        read = _read_groups(check, groups_value, path)
        if read is None:
            return None
        groups = read
        if groups_value and _get(section, "toolApprovals") is not True:
            check.error(path, "approver groups need toolApprovals: true")
    deny_reasons = check.boolean(_get(section, "denyReasons"), "spec.interactions.denyReasons", False)
    if deny_reasons and _get(section, "toolApprovals") is not True:
        check.error("spec.interactions.denyReasons", "a reason with a denial needs toolApprovals: true")
    remind_before = _read_remind_before(check, section, timeout)
    separate_approver = check.boolean(
        _get(section, "separateApprover"), "spec.interactions.separateApprover", DEFAULT_SEPARATE_APPROVER
    )
    if separate_approver and _get(section, "toolApprovals") is not True:
        check.error("spec.interactions.separateApprover", "separateApprover needs toolApprovals: true")
    tools = _read_tool_rules(check, _get(section, "tools"))
    if tools is None:
        return None
    if tools and _get(section, "toolApprovals") is not True:
        check.error("spec.interactions.tools", "tool rules need toolApprovals: true")
    return InteractionsSpec(
        ask_user=ask_user,
        tool_approvals=tool_approvals,
        approver_groups=groups,
        timeout=timeout,
        separate_approver=separate_approver,
        tools=tools,
        deny_reasons=deny_reasons,
        remind_before=remind_before,
    )


def _read_remind_before(check: _Checker, section: dict[str, Any], timeout: timedelta) -> timedelta | None:
    value = _get(section, "remindBefore")
    if value is _MISSING:
        return None
    path = "spec.interactions.remindBefore"
    remind_before = check.duration(value, path, timedelta(0))  # refused: the zero is never used
    if _get(section, "toolApprovals") is not True:
        check.error(path, "a reminder needs toolApprovals: true")
    elif remind_before >= timeout:
        check.error(
            path,
            f"must be shorter than spec.interactions.timeout ({format_duration(timeout)}) (got {_show(value)})",
        )
    return remind_before


def _read_groups(check: _Checker, value: Any, path: str) -> tuple[str, ...] | None:
    if isinstance(value, list) and len(value) > MAX_APPROVER_GROUPS:
        check.error(path, f"at most {MAX_APPROVER_GROUPS} entries are allowed (got {len(value)})")
    read = check.id_list(value, path, USER_GROUP_ID_RE, "user group", "S0123456789")
    return None if read is None else tuple(group for _, group in read)


def _read_tool_rules(check: _Checker, value: Any) -> tuple[ToolRule, ...] | None:
    """``spec.interactions.tools``: each rule a mapping with a ``match``; refused whole on any fault."""
    path = "spec.interactions.tools"
    if value is _MISSING:
        return ()
    if not isinstance(value, list):
        check.error(
            path,
            f"must be a list of rules such as {{match: db_*, separateApprover: true}} (got {_show(value)})",
        )
        return None
    if len(value) > MAX_TOOL_RULES:
        check.error(path, f"at most {MAX_TOOL_RULES} rules are allowed (got {len(value)})")
    rules: list[ToolRule] = []
    errors = len(check.errors)
    for index, entry in enumerate(value):
        rule_path = f"{path}[{index}]"
        section = check.mapping(entry, rule_path, TOOL_RULE_FIELDS)
        if section is None:
            continue
        match_value = _get(section, "match")
        match = None
        if check.required(match_value, f"{rule_path}.match"):
            match = check.string(match_value, f"{rule_path}.match")
        if match is not None and (not match.strip() or len(match) > TOOL_MATCH_MAX_LENGTH):
            check.error(
                f"{rule_path}.match",
                f"must be a tool name or a glob such as db_*, at most {TOOL_MATCH_MAX_LENGTH} characters "
                f"(got {_show(match)})",
            )
            match = None
        groups_value = _get(section, "approverGroups")
        groups = None
        if groups_value is not _MISSING:
            groups = _read_groups(check, groups_value, f"{rule_path}.approverGroups")
        separate_value = _get(section, "separateApprover")
        separate = (
            None
            if separate_value is _MISSING
            else check.boolean(separate_value, f"{rule_path}.separateApprover", DEFAULT_SEPARATE_APPROVER)
        )
        unattended = check.choice(
            _get(section, "unattended"), f"{rule_path}.unattended", Unattended, DEFAULT_UNATTENDED
        )
        if match is not None:
            rules.append(ToolRule(match, groups, separate, unattended))
    return tuple(rules) if len(check.errors) == errors else None


def binding_warnings(spec: BindingSpec) -> list[ManifestWarning]:
    """What is accepted but deserves the operator's attention."""
    warnings = []
    if spec.interactions.tool_approvals and not spec.interactions.approver_groups:
        warnings.append(
            ManifestWarning(
                subject_for(Kind.BINDING.value, spec.name),
                "spec.interactions.toolApprovals",
                "spec.interactions.toolApprovals is true but approverGroups is empty: "
                "any non-bot member of the channel may decide approvals",
            )
        )
    direct_messages = spec.direct_messages
    if direct_messages is not None and direct_messages.open_to_everyone:
        warnings.append(
            ManifestWarning(
                subject_for(Kind.BINDING.value, spec.name),
                "spec.directMessages",
                "spec.directMessages has no allowedUsers and no allowedGroups: "
                "every member of the workspace may talk to the agent in private",
            )
        )
    return warnings


def validate(
    documents: Sequence[Document],
    *,
    connections: Iterable[str] = (),
    bound_channels: Mapping[tuple[str, str], str] | None = None,
    direct_message_bindings: Mapping[str, str] | None = None,
) -> Validation:
    """Validate documents, each alone and then against each other and the existing state.

    ``connections`` are the names of the Connections that exist. ``bound_channels`` maps
    (connection name, channel ID) to the name of the Binding that has it, ``direct_message_bindings``
    a connection name to the name of the Binding that takes its direct messages. A Binding in ``documents``
    replaces the existing Binding of that name, so the channels that one holds are free for it.
    Refusals come in document order, and in field order within a document.
    """
    reads = [_read_document(document) for document in documents]

    defined: dict[tuple[Kind, str], _Read] = {}
    for read in reads:
        if read.kind is None or read.name is None:
            continue
        first = defined.setdefault((read.kind, read.name), read)
        if first is not read:
            where = f" (first in {first.document.location})" if first.document.location else ""
            read.error("metadata.name", f"is defined more than once{where}")

    known_connections = set(connections) | {
        read.name for read in reads if read.kind is Kind.CONNECTION and read.name is not None
    }
    redefined = {read.name for read in reads if read.kind is Kind.BINDING}
    claims = {key: owner for key, owner in (bound_channels or {}).items() if owner not in redefined}
    dm_claims = {
        connection: owner
        for connection, owner in (direct_message_bindings or {}).items()
        if owner not in redefined
    }
    for read in reads:
        if read.kind is not Kind.BINDING or read.connection is None:
            continue
        if read.connection not in known_connections:
            read.error("spec.connection", f'unknown Connection "{read.connection}"')
            continue
        if read.name is None:
            continue
        if read.direct_messages:
            owner = dm_claims.setdefault(read.connection, read.name)
            if owner != read.name:
                read.error(
                    "spec.directMessages",
                    f'Connection "{read.connection}" already has its direct messages taken by Binding "{owner}"'
                    " (at most one Binding per Connection)",
                )
        for i, channel in read.channels:
            owner = claims.setdefault((read.connection, channel), read.name)
            if owner != read.name:
                read.error(
                    f"spec.channels[{i}]",
                    f'channel {channel} is already bound to Binding "{owner}" on Connection "{read.connection}"',
                )

    result = Validation()
    for read in reads:
        result.errors.extend(sorted(read.errors, key=_field_order))
        if read.errors:
            continue
        if isinstance(read.spec, ConnectionSpec):
            result.connections.append(read.spec)
        elif isinstance(read.spec, BindingSpec):
            result.bindings.append(read.spec)
            result.warnings.extend(binding_warnings(read.spec))
    return result


_FIELD_ORDER = [
    "apiVersion", "kind", "metadata", "spec.connection", "spec.channels", "spec.agent.url", "spec.agent.kagent", "spec.agent.dialect",
    "spec.agent.protocolVersion", "spec.agent.headers", "spec.agent.userIdentity", "spec.output", "spec.chat", "spec.interactions.askUser",
    "spec.interactions.toolApprovals", "spec.interactions.approverGroups", "spec.interactions.timeout",
    "spec.interactions.separateApprover", "spec.interactions.tools", "spec.interactions.denyReasons", "spec.interactions.remindBefore",
    "spec.session", "spec.triggers", "spec.replies", "spec.budget", "spec.feedback", "spec.directMessages", "spec.botToken", "spec.signingSecret", "spec.appToken", "spec",
]  # fmt: skip


def _field_order(problem: Problem) -> int:
    """Refusals of a document in the order its fields are written (a stable sort keeps the rest)."""
    for position, prefix in enumerate(_FIELD_ORDER):
        if problem.path == prefix or problem.path.startswith((f"{prefix}.", f"{prefix}[")):
            return position
    return -1


# --- Serializing back --------------------------------------------------------------------------------


def connection_manifest(spec: ConnectionSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "botToken": _Flow(fromEnv=spec.bot_token_env),
        "signingSecret": _Flow(fromEnv=spec.signing_secret_env),
    }
    if spec.app_token_env:
        body["appToken"] = _Flow(fromEnv=spec.app_token_env)
    return {
        "apiVersion": API_VERSION,
        "kind": Kind.CONNECTION.value,
        "metadata": _Flow(name=spec.name),
        "spec": body,
    }


def binding_manifest(spec: BindingSpec) -> dict[str, Any]:
    """Every field, defaults included: the export is the whole configuration, readable without the spec."""
    agent: dict[str, Any]
    if spec.agent.kagent is not None:
        # By name: applying it again finds the agent again (the address is the controller's to say).
        kagent = spec.agent.kagent
        agent = {
            "kagent": _Flow(controller=kagent.controller, namespace=kagent.namespace, name=kagent.name),
            "dialect": spec.agent.dialect.value,
        }
    else:
        agent = {
            "url": spec.agent.url,
            "dialect": spec.agent.dialect.value,
            "protocolVersion": spec.agent.protocol_version.value,
        }
    if spec.agent.headers:
        agent["headers"] = {header: _Flow(fromEnv=env) for header, env in spec.agent.headers}
    agent["userIdentity"] = spec.agent.user_identity.value
    ack = spec.chat.acknowledgment
    interactions = spec.interactions
    where: dict[str, Any] = (
        {"directMessages": _direct_messages_manifest(spec.direct_messages)}
        if spec.direct_messages is not None
        else {"channels": _FlowList(spec.channels)}
    )
    return {
        "apiVersion": API_VERSION,
        "kind": Kind.BINDING.value,
        "metadata": _Flow(name=spec.name),
        "spec": {
            "connection": spec.connection,
            **where,
            "agent": agent,
            "output": spec.output.value,
            "chat": {
                "threadReplies": spec.chat.thread_replies.value,
                "acknowledgment": _Flow(enabled=ack.enabled, emoji=ack.emoji),
                "progress": spec.chat.progress.value,
            },
            "interactions": {
                "askUser": interactions.ask_user,
                "toolApprovals": interactions.tool_approvals,
                "approverGroups": _FlowList(interactions.approver_groups),
                "timeout": format_duration(interactions.timeout),
                # Opt-in fields beyond the spec are written only when set: an export stays as it was.
                **({"separateApprover": True} if interactions.separate_approver else {}),
                **(
                    {"tools": [tool_rule_manifest(rule) for rule in interactions.tools]}
                    if interactions.tools
                    else {}
                ),
                **({"denyReasons": True} if interactions.deny_reasons else {}),
                **(
                    {"remindBefore": format_duration(interactions.remind_before)}
                    if interactions.remind_before is not None
                    else {}
                ),
            },
            "session": {"threadTTL": format_duration(spec.session.thread_ttl)},
            "triggers": [_trigger_manifest(trigger) for trigger in spec.triggers],
            "replies": _Flow(
                allowMentions=spec.replies.allow_mentions.value, maxMessages=spec.replies.max_messages
            ),
            **(
                {"budget": {"dailyTokensPerChannel": spec.budget.daily_tokens_per_channel}}
                if spec.budget.daily_tokens_per_channel is not None
                else {}
            ),
            **({"feedback": True} if spec.feedback else {}),
        },
    }


def _direct_messages_manifest(direct_messages: DirectMessagesSpec) -> dict[str, Any] | bool:
    if direct_messages == DirectMessagesSpec():
        return True
    body: dict[str, Any] = {}
    if direct_messages.allowed_users:
        body["allowedUsers"] = _FlowList(direct_messages.allowed_users)
    if direct_messages.allowed_groups:
        body["allowedGroups"] = _FlowList(direct_messages.allowed_groups)
    if direct_messages.suggested_prompts:
        body["suggestedPrompts"] = [
            _Flow(title=prompt.title, message=prompt.message) for prompt in direct_messages.suggested_prompts
        ]
    if direct_messages.approvals_channel is not None:
        body["approvalsChannel"] = direct_messages.approvals_channel
    return body


# The approval rules of ``spec.interactions``, by manifest name: a change of any, through apply or the
# admin, is audited field by field (``bindings.services.save_binding``). A rule added to the manifest
# is audited once its name is listed here; a name the manifest does not write yet is passed over.
APPROVAL_RULE_FIELDS = (
    "toolApprovals", "approverGroups", "separateApprover", "tools", "timeout", "remindBefore", "denyReasons",
)  # fmt: skip


def approval_rules(spec: BindingSpec) -> dict[str, Any]:
    """A Binding's approval rules as its manifest writes them, as plain JSON values: a secret appears
    only as the name of its variable (``fromEnv``), never resolved."""
    interactions = binding_manifest(spec)["spec"]["interactions"]
    return {
        name: json.loads(json.dumps(interactions[name]))
        for name in APPROVAL_RULE_FIELDS
        if name in interactions
    }


def tool_rule_manifest(rule: ToolRule) -> dict[str, Any]:
    """A tool rule as written: its match, and only the fields it sets."""
    body: dict[str, Any] = {"match": rule.match}
    if rule.approver_groups is not None:
        body["approverGroups"] = _FlowList(rule.approver_groups)
    if rule.separate_approver is not None:
        body["separateApprover"] = rule.separate_approver
    if rule.unattended is not DEFAULT_UNATTENDED:
        body["unattended"] = rule.unattended.value
    return _Flow(**body)


def tool_rule_rows(rules: Iterable[ToolRule]) -> list[dict[str, Any]]:
    """Tool rules in their manifest form, as plain data (a Binding row stores them so)."""
    return [
        {
            key: list(value) if isinstance(value, list) else value
            for key, value in tool_rule_manifest(rule).items()
        }
        for rule in rules
    ]


def tool_rules(rows: Iterable[Mapping[str, Any]]) -> tuple[ToolRule, ...]:
    """Tool rules from their manifest form (as a Binding row stores them)."""
    return tuple(
        ToolRule(
            match=row["match"],
            approver_groups=tuple(row["approverGroups"]) if "approverGroups" in row else None,
            separate_approver=row.get("separateApprover"),
            unattended=Unattended(row.get("unattended", DEFAULT_UNATTENDED)),
        )
        for row in rows
    )


def _trigger_manifest(trigger: TriggerSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": trigger.name,
        "kind": trigger.kind.value,
        "token": _Flow(fromEnv=trigger.token_env),
    }
    if trigger.channel is not None:
        body["channel"] = trigger.channel
    if trigger.kind is TriggerKind.ALERTMANAGER and trigger.thread_per is not DEFAULT_THREAD_PER:
        body["threadPer"] = trigger.thread_per.value
    if trigger.max_threads_per_hour != DEFAULT_MAX_THREADS_PER_HOUR:
        body["maxThreadsPerHour"] = trigger.max_threads_per_hour
    return body


def manifest(spec: Spec) -> dict[str, Any]:
    return connection_manifest(spec) if isinstance(spec, ConnectionSpec) else binding_manifest(spec)


def dump_manifests(specs: Iterable[Spec]) -> str:
    """YAML documents separated by ``---``, in the order given."""
    return yaml.dump_all(
        [manifest(spec) for spec in specs],
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )


def changed_fields(old: Spec, new: Spec) -> list[str]:
    """The manifest paths whose values differ between two specs of one resource, in manifest order.

    A kagent agent by name whose controller now serves it elsewhere (another line, another address)
    changes ``spec.agent.kagent``, though its manifest reads the same.
    """
    before, after = _flatten(manifest(old)), _flatten(manifest(new))
    for spec, flat in ((old, before), (new, after)):
        if isinstance(spec, BindingSpec) and spec.agent.kagent is not None:
            flat["spec.agent.kagent"] = (spec.agent.url, spec.agent.protocol_version.value)
    return [path for path in dict.fromkeys([*before, *after]) if before.get(path) != after.get(path)]


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value and set(value) != {"fromEnv"}:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, _join(path, key)))
        return flat
    if isinstance(value, list):
        return {path: tuple(value)}
    if isinstance(value, dict):
        return {path: tuple(value.items())}
    return {path: value}


class _Flow(dict[str, Any]):
    """A mapping written inline: ``{fromEnv: SLACK_BOT_TOKEN}``."""

    def __init__(self, **items: Any) -> None:
        super().__init__(items)


class _FlowList(list[Any]):
    """A list written inline: ``[C0123456789]``."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _Flow, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True)
)
_Dumper.add_representer(
    _FlowList, lambda dumper, data: dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)
)
