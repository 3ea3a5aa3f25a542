"""Manifests, the operator's format for Connections and Bindings: parse, validate, serialize.

Pure: no ORM and no I/O. The loader (``manage.py apply``) and the admin forms both validate through
``validate()``, so a rule and its wording live here once. Every refusal names the resource and the
field path, as ``Binding "ops": spec.interactions.approverGroups: at most 10 entries are allowed (got 11)``.

Rules that span documents (a channel bound twice, an unknown connection) are checked against plain data
that the caller passes in: the names of the Connections that exist and the channels already bound.

A field set to null is treated as omitted, and an omitted field takes the spec's default.

The parts, each importable from here (``from bindings.manifest import validate``):

- ``specs``: the dataclasses a manifest reads into, their choices and defaults;
- ``limits``: the lengths, counts and shapes values are held to; ``durations``: ``1h30m`` and back;
- ``documents``: YAML text into documents; ``problems``: refusals, warnings, ``Validation``;
- ``reading``: documents into specs, alone and against each other (``validate``), with ``checker``
  (one field's checks and wording) and a reader per large section (``reading_agent``,
  ``reading_interactions``, ``reading_triggers``, ``reading_direct_messages``);
- ``writing``: specs back into manifests (``dump_manifests``); ``changes``: which paths differ;
- ``audited_rules``: which fields are approval rules, audited field by field. Imported as the module
  (``from bindings.manifest import audited_rules``): its list is the one place a rule is named.

docs/architecture.md ("Adding a manifest field") says which of these a new field touches.
"""

from .changes import (
    changed_fields,
)
from .documents import (
    Document,
    parse_documents,
)
from .durations import (
    format_duration,
    parse_duration,
)
from .limits import (
    CHANNEL_ID_RE,
    EMOJI_MAX_LENGTH,
    ENV_NAME_MAX_LENGTH,
    ENV_NAME_RE,
    HEADER_NAME_RE,
    KUBERNETES_NAME_RE,
    KUBERNETES_NAMESPACE_RE,
    MAX_ALLOWED_GROUPS,
    MAX_ALLOWED_USERS,
    MAX_APPROVER_GROUPS,
    MAX_DAILY_TOKENS,
    MAX_DURATION,
    MAX_MAX_MESSAGES,
    MAX_SUGGESTED_PROMPTS,
    MAX_THREADS_PER_HOUR_LIMIT,
    MAX_TOOL_RULES,
    MAX_TRIGGERS,
    NAME_MAX_LENGTH,
    NAME_RE,
    PUBLIC_OR_PRIVATE_CHANNEL_ID_RE,
    SLACK_ID_MAX_LENGTH,
    SUGGESTED_PROMPT_MAX_LENGTH,
    TOOL_MATCH_MAX_LENGTH,
    URL_MAX_LENGTH,
    USER_GROUP_ID_RE,
    USER_ID_RE,
)
from .problems import (
    ManifestWarning,
    Problem,
    Validation,
    subject_for,
)
from .reading import (
    binding_warnings,
    validate,
)
from .reading_agent import (
    header_variable_allowed,
)
from .specs import (
    API_VERSION,
    DEFAULT_ACKNOWLEDGMENT_EMOJI,
    DEFAULT_ACKNOWLEDGMENT_ENABLED,
    DEFAULT_ALLOW_MENTIONS,
    DEFAULT_ASK_USER,
    DEFAULT_DIALECT,
    DEFAULT_INTERACTION_TIMEOUT,
    DEFAULT_MAX_MESSAGES,
    DEFAULT_MAX_THREADS_PER_HOUR,
    DEFAULT_OUTPUT,
    DEFAULT_PROGRESS,
    DEFAULT_PROTOCOL_VERSION,
    DEFAULT_SEPARATE_APPROVER,
    DEFAULT_SLASH_COMMAND,
    DEFAULT_THREAD_PER,
    DEFAULT_THREAD_REPLIES,
    DEFAULT_THREAD_TTL,
    DEFAULT_TOOL_APPROVALS,
    DEFAULT_UNATTENDED,
    DEFAULT_USER_IDENTITY,
    AcknowledgmentSpec,
    AgentSpec,
    BindingSpec,
    BudgetSpec,
    ChatSpec,
    ConnectionSpec,
    Dialect,
    DirectMessagesSpec,
    InteractionsSpec,
    KagentRef,
    Kind,
    Mentions,
    Output,
    ProgressMode,
    ProtocolVersion,
    RepliesSpec,
    SessionSpec,
    Spec,
    SuggestedPrompt,
    ThreadPer,
    ThreadReplies,
    ToolRule,
    TriggerKind,
    TriggerSpec,
    Unattended,
    UserIdentity,
    sort_headers,
)
from .writing import (
    binding_manifest,
    connection_manifest,
    dump_manifests,
    manifest,
    tool_rule_manifest,
    tool_rule_rows,
    tool_rules,
)

__all__ = [
    "API_VERSION",
    "CHANNEL_ID_RE",
    "DEFAULT_ACKNOWLEDGMENT_EMOJI",
    "DEFAULT_ACKNOWLEDGMENT_ENABLED",
    "DEFAULT_ALLOW_MENTIONS",
    "DEFAULT_ASK_USER",
    "DEFAULT_DIALECT",
    "DEFAULT_INTERACTION_TIMEOUT",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_THREADS_PER_HOUR",
    "DEFAULT_OUTPUT",
    "DEFAULT_PROGRESS",
    "DEFAULT_PROTOCOL_VERSION",
    "DEFAULT_SEPARATE_APPROVER",
    "DEFAULT_SLASH_COMMAND",
    "DEFAULT_THREAD_PER",
    "DEFAULT_THREAD_REPLIES",
    "DEFAULT_THREAD_TTL",
    "DEFAULT_TOOL_APPROVALS",
    "DEFAULT_UNATTENDED",
    "DEFAULT_USER_IDENTITY",
    "EMOJI_MAX_LENGTH",
    "ENV_NAME_MAX_LENGTH",
    "ENV_NAME_RE",
    "HEADER_NAME_RE",
    "KUBERNETES_NAMESPACE_RE",
    "KUBERNETES_NAME_RE",
    "MAX_ALLOWED_GROUPS",
    "MAX_ALLOWED_USERS",
    "MAX_APPROVER_GROUPS",
    "MAX_DAILY_TOKENS",
    "MAX_DURATION",
    "MAX_MAX_MESSAGES",
    "MAX_SUGGESTED_PROMPTS",
    "MAX_THREADS_PER_HOUR_LIMIT",
    "MAX_TOOL_RULES",
    "MAX_TRIGGERS",
    "NAME_MAX_LENGTH",
    "NAME_RE",
    "PUBLIC_OR_PRIVATE_CHANNEL_ID_RE",
    "SLACK_ID_MAX_LENGTH",
    "SUGGESTED_PROMPT_MAX_LENGTH",
    "TOOL_MATCH_MAX_LENGTH",
    "URL_MAX_LENGTH",
    "USER_GROUP_ID_RE",
    "USER_ID_RE",
    "AcknowledgmentSpec",
    "AgentSpec",
    "BindingSpec",
    "BudgetSpec",
    "ChatSpec",
    "ConnectionSpec",
    "Dialect",
    "DirectMessagesSpec",
    "Document",
    "InteractionsSpec",
    "KagentRef",
    "Kind",
    "ManifestWarning",
    "Mentions",
    "Output",
    "Problem",
    "ProgressMode",
    "ProtocolVersion",
    "RepliesSpec",
    "SessionSpec",
    "Spec",
    "SuggestedPrompt",
    "ThreadPer",
    "ThreadReplies",
    "ToolRule",
    "TriggerKind",
    "TriggerSpec",
    "Unattended",
    "UserIdentity",
    "Validation",
    "binding_manifest",
    "binding_warnings",
    "changed_fields",
    "connection_manifest",
    "dump_manifests",
    "format_duration",
    "header_variable_allowed",
    "manifest",
    "parse_documents",
    "parse_duration",
    "sort_headers",
    "subject_for",
    "tool_rule_manifest",
    "tool_rule_rows",
    "tool_rules",
    "validate",
]
