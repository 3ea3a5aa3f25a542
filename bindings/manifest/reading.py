"""Reading documents into specs (``validate``): each document alone, then against each other and the
existing state the caller passes in as plain data. The large sections have readers of their own
(``reading_*.py``); the small ones (chat, replies, budget) are read here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .checker import MISSING, Checker, show, value_at
from .documents import Document
from .limits import (
    CHANNEL_ID_RE,
    EMOJI_MAX_LENGTH,
    MAX_DAILY_TOKENS,
    MAX_MAX_MESSAGES,
    NAME_MAX_LENGTH,
    NAME_RE,
)
from .problems import ManifestWarning, Problem, Validation, subject_for
from .reading_agent import dialect_of, read_agent
from .reading_direct_messages import read_direct_messages
from .reading_files import read_files
from .reading_interactions import read_interactions
from .reading_thread_context import read_thread_context
from .reading_triggers import read_triggers
from .specs import (
    API_VERSION,
    DEFAULT_ACKNOWLEDGMENT_EMOJI,
    DEFAULT_ACKNOWLEDGMENT_ENABLED,
    DEFAULT_ALLOW_MENTIONS,
    DEFAULT_OUTPUT,
    DEFAULT_PROGRESS,
    DEFAULT_SLASH_COMMAND,
    DEFAULT_THREAD_REPLIES,
    DEFAULT_THREAD_TTL,
    AcknowledgmentSpec,
    BindingSpec,
    BudgetSpec,
    ChatSpec,
    ConnectionSpec,
    Dialect,
    Kind,
    Mentions,
    Output,
    ProgressMode,
    RepliesSpec,
    SessionSpec,
    Spec,
    StopBy,
    ThreadReplies,
)

CONNECTION_FIELDS = ("botToken", "signingSecret", "appToken", "slashCommand", "agentSessions")
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
    "stopBy",
    "directMessages",
)
BUDGET_FIELDS = ("dailyTokensPerChannel",)
CHAT_FIELDS = ("threadReplies", "acknowledgment", "progress", "threadContext", "files")
ACKNOWLEDGMENT_FIELDS = ("enabled", "emoji")
SESSION_FIELDS = ("threadTTL",)
REPLIES_FIELDS = ("allowMentions", "maxMessages")
DOCUMENT_FIELDS = ("apiVersion", "kind", "metadata", "spec")
METADATA_FIELDS = ("name",)


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
        read.error("", f"must be a mapping with {', '.join(DOCUMENT_FIELDS)} (got {show(data)})")
        return read

    kind_value = value_at(data, "kind")
    kind = Kind(kind_value) if isinstance(kind_value, str) and kind_value in set(Kind) else None
    metadata = value_at(data, "metadata")
    name_value = value_at(metadata, "name") if isinstance(metadata, dict) else MISSING
    name: str | None = None
    if isinstance(name_value, str) and NAME_RE.fullmatch(name_value) and len(name_value) <= NAME_MAX_LENGTH:
        name = name_value
    if kind is not None and name is not None:
        subject = subject_for(kind.value, name)
    elif kind is not None:
        subject = f"{kind.value} in {location}" if location else kind.value
    else:
        subject = location or "document"

    check = Checker(subject)
    check.mapping(data, "", DOCUMENT_FIELDS)
    api_version = value_at(data, "apiVersion")
    if check.required(api_version, "apiVersion") and api_version != API_VERSION:
        check.error("apiVersion", f"must be {API_VERSION} (got {show(api_version)})")
    if check.required(kind_value, "kind") and kind is None:
        check.error("kind", f"must be one of {', '.join(k.value for k in Kind)} (got {show(kind_value)})")
    if check.required(metadata, "metadata"):
        section = check.mapping(metadata, "metadata", METADATA_FIELDS)
        if section is not None and check.required(name_value, "metadata.name") and name is None:
            check.error(
                "metadata.name",
                "must be a name of letters, digits, hyphens and underscores, "
                f"at most {NAME_MAX_LENGTH} characters (got {show(name_value)})",
            )
    read = _Read(document, kind, name, subject)
    spec_value = value_at(data, "spec")
    if kind is Kind.CONNECTION:
        spec: Spec | None = _read_connection(check, name, spec_value)
    elif kind is Kind.BINDING:
        spec = _read_binding(check, name, spec_value, read)
    else:
        spec = None
    read.spec = spec
    read.errors = check.errors
    return read


def _read_connection(check: Checker, name: str | None, value: Any) -> ConnectionSpec | None:
    if not check.required(value, "spec"):
        return None
    spec = check.mapping(value, "spec", CONNECTION_FIELDS)
    if spec is None:
        return None
    bot_token = value_at(spec, "botToken")
    signing_secret = value_at(spec, "signingSecret")
    app_token = value_at(spec, "appToken")
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
    app_token_env = None if app_token is MISSING else check.env_reference(app_token, "spec.appToken")
    slash_command = _slash_command(check, value_at(spec, "slashCommand"))
    agent_sessions = check.boolean(value_at(spec, "agentSessions"), "spec.agentSessions", False)
    if name is None or bot_token_env is None or signing_secret_env is None or slash_command is None:
        return None
    return ConnectionSpec(
        name, bot_token_env, signing_secret_env, app_token_env, slash_command, agent_sessions=agent_sessions
    )


# Slack's own rule for a command's name: a slash, then lowercase letters, digits, - and _, 32 at most.
_SLASH_COMMAND = re.compile(r"^/[a-z0-9_-]{1,31}$")


def _slash_command(check: Checker, value: Any) -> str | None:
    if value is MISSING:
        return DEFAULT_SLASH_COMMAND
    command = check.string(value, "spec.slashCommand")
    if command is None:
        return None
    if not _SLASH_COMMAND.match(command):
        check.error(
            "spec.slashCommand",
            f"must be a slash and up to 31 lowercase letters, digits, - or _, as Slack names commands (got {show(command)})",
        )
        return None
    return command


def _read_binding(check: Checker, name: str | None, value: Any, read: _Read) -> BindingSpec | None:
    if not check.required(value, "spec"):
        return None
    spec = check.mapping(value, "spec", BINDING_FIELDS)
    if spec is None:
        return None

    connection_value = value_at(spec, "connection")
    if check.required(connection_value, "spec.connection"):
        read.connection = check.string(connection_value, "spec.connection")

    direct_messages_value = value_at(spec, "directMessages")
    direct_messages = None
    channels_value = value_at(spec, "channels")
    if direct_messages_value is not MISSING:
        direct_messages = read_direct_messages(check, direct_messages_value)
        read.direct_messages = direct_messages is not None
        if channels_value is not MISSING:
            check.error("spec.directMessages", "a Binding takes channels or directMessages, not both")
    elif check.required(channels_value, "spec.channels"):
        channels = check.id_list(channels_value, "spec.channels", CHANNEL_ID_RE, "channel", "C0123456789")
        if channels is not None:
            read.channels = channels
            if not channels_value:
                check.error("spec.channels", "must list at least one channel")

    agent = read_agent(check, value_at(spec, "agent"))
    output = check.choice(value_at(spec, "output"), "spec.output", Output, DEFAULT_OUTPUT)
    chat = _read_chat(check, value_at(spec, "chat"))
    interactions = read_interactions(check, value_at(spec, "interactions"))
    session_section = check.mapping(value_at(spec, "session"), "spec.session", SESSION_FIELDS)
    thread_ttl = check.duration(
        value_at(session_section, "threadTTL"), "spec.session.threadTTL", DEFAULT_THREAD_TTL
    )
    replies = _read_replies(check, value_at(spec, "replies"))

    dialect = agent.dialect if agent is not None else dialect_of(spec)
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
    triggers = read_triggers(check, value_at(spec, "triggers"), read.channels)
    budget = _read_budget(check, value_at(spec, "budget"))
    feedback = check.boolean(value_at(spec, "feedback"), "spec.feedback", False)
    stop_by = check.choice(value_at(spec, "stopBy"), "spec.stopBy", StopBy, StopBy.MEMBERS)
    if (
        (direct_messages_value is not MISSING and direct_messages is None)
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
        stop_by=stop_by,
        direct_messages=direct_messages,
    )


def _read_replies(check: Checker, value: Any) -> RepliesSpec | None:
    section = check.mapping(value, "spec.replies", REPLIES_FIELDS)
    if section is None:
        return None
    mentions = check.choice(
        value_at(section, "allowMentions"), "spec.replies.allowMentions", Mentions, DEFAULT_ALLOW_MENTIONS
    )
    count = value_at(section, "maxMessages")
    if count is MISSING:
        return RepliesSpec(allow_mentions=mentions)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_MAX_MESSAGES:
        check.error(
            "spec.replies.maxMessages",
            f"must be a whole number from 1 to {MAX_MAX_MESSAGES} (got {show(count)})",
        )
        return None
    return RepliesSpec(allow_mentions=mentions, max_messages=count)


def _read_budget(check: Checker, value: Any) -> BudgetSpec | None:
    section = check.mapping(value, "spec.budget", BUDGET_FIELDS)
    if section is None:
        return None
    tokens = value_at(section, "dailyTokensPerChannel")
    if tokens is MISSING:
        return BudgetSpec()
    path = "spec.budget.dailyTokensPerChannel"
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens <= MAX_DAILY_TOKENS:
        check.error(
            path, f"must be a whole number of tokens from 1 to {MAX_DAILY_TOKENS} (got {show(tokens)})"
        )
        return None
    return BudgetSpec(daily_tokens_per_channel=tokens)


def _read_chat(check: Checker, value: Any) -> ChatSpec | None:
    chat = check.mapping(value, "spec.chat", CHAT_FIELDS)
    if chat is None:
        return None
    thread_replies = check.choice(
        value_at(chat, "threadReplies"), "spec.chat.threadReplies", ThreadReplies, DEFAULT_THREAD_REPLIES
    )
    progress = check.choice(value_at(chat, "progress"), "spec.chat.progress", ProgressMode, DEFAULT_PROGRESS)
    ack = check.mapping(value_at(chat, "acknowledgment"), "spec.chat.acknowledgment", ACKNOWLEDGMENT_FIELDS)
    if ack is None:
        return None
    enabled = check.boolean(
        value_at(ack, "enabled"), "spec.chat.acknowledgment.enabled", DEFAULT_ACKNOWLEDGMENT_ENABLED
    )
    emoji_value = value_at(ack, "emoji")
    emoji = DEFAULT_ACKNOWLEDGMENT_EMOJI
    if emoji_value is not MISSING:
        path = "spec.chat.acknowledgment.emoji"
        text = check.string(emoji_value, path)
        if text is None:
            return None
        if not text or ":" in text or any(c.isspace() for c in text) or len(text) > EMOJI_MAX_LENGTH:
            check.error(
                path,
                f"must be a bare reaction name such as eyes, without colons or spaces (got {show(text)})",
            )
            return None
        emoji = text
    thread_context = read_thread_context(check, value_at(chat, "threadContext"))
    files = read_files(check, value_at(chat, "files"))
    if thread_context is None or files is None:
        return None
    return ChatSpec(
        thread_replies=thread_replies,
        acknowledgment=AcknowledgmentSpec(enabled=enabled, emoji=emoji),
        progress=progress,
        thread_context=thread_context,
        files=files,
    )


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
    "spec.interactions.allowForThread",
    "spec.session", "spec.triggers", "spec.replies", "spec.budget", "spec.feedback", "spec.stopBy", "spec.directMessages", "spec.botToken", "spec.signingSecret", "spec.appToken", "spec.slashCommand", "spec.agentSessions", "spec",
]  # fmt: skip


def _field_order(problem: Problem) -> int:
    """Refusals of a document in the order its fields are written (a stable sort keeps the rest)."""
    for position, prefix in enumerate(_FIELD_ORDER):
        if problem.path == prefix or problem.path.startswith((f"{prefix}.", f"{prefix}[")):
            return position
    return -1
