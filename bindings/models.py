"""Connections (Slack app installations) and Bindings (channels of a Connection → one agent).

Secrets are never stored: a Connection and a Binding's agent headers keep the *names* of environment
variables, and the values are read from the environment when they are needed. The operator writes
these rows with manifests (``manage.py apply``) or the admin; both go through ``bindings.services``.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from enum import StrEnum
from typing import Any

from django.db import models

from bindings import manifest, secret_variables
from bindings.manifest import secret_refs
from bindings.secret_files import read_secret_file


class MissingSecret(Exception):
    """An environment variable or file that a Connection or Binding refers to is not set (or is empty)."""

    def __init__(self, subject: str, path: str, variable: str, why: str = "") -> None:
        self.subject = subject
        self.path = path
        self.variable = variable
        if secret_refs.is_file(variable):
            super().__init__(f"{subject}: {path}: file {variable} {why or 'is missing, unreadable or empty'}")
        else:
            super().__init__(
                f"{subject}: {path}: environment variable {variable} {why or 'is not set or is empty'}"
            )


class RefusedSecret(MissingSecret):
    """A secret reference names a variable or file it may not read (``bindings.secret_variables``): a
    row written around ``apply`` and the admin, or a setting changed since. Read as not set."""


def default_file_types() -> list[str]:
    """spec.chat.files.types when the manifest names none (a callable: a list default is shared)."""
    return list(manifest.DEFAULT_FILE_TYPES)


def _read_env(subject: str, path: str, reference: str, *, secret: bool = False) -> str:
    """The value of the variable or file the reference names (``{fromEnv}`` or ``{fromFile}``); a file
    is read again when it changes. ``secret``: a Connection's or trigger's secret, read only from a
    variable or file fit to hold one; else an agent header's, read from a file only where agent headers
    may read."""
    if secret:
        why = secret_variables.why_unfit(reference)
    elif secret_refs.is_file(reference):
        why = secret_variables.why_unfit_header_file(reference)
    else:
        why = None
    if why is not None:
        raise RefusedSecret(subject, path, reference, why)
    is_file = secret_refs.is_file(reference)
    value = read_secret_file(reference) if is_file else os.environ.get(reference, "")
    if not value:
        raise MissingSecret(subject, path, reference)
    return value


def _choices(enum: type[StrEnum]) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


class Connection(models.Model):
    """One Slack app installation: where its bot token, signing secret and app-level token are found.

    ``team_id`` and ``bot_user_id`` are learned at runtime from ``auth.test``; they are not part of
    the manifest, and applying a manifest leaves them alone.
    """

    name = models.SlugField(max_length=manifest.NAME_MAX_LENGTH, unique=True)
    bot_token_env = models.CharField(
        "bot token variable",
        max_length=manifest.ENV_NAME_MAX_LENGTH,
        help_text="The name of the environment variable that holds the bot token (xoxb-…).",
    )
    signing_secret_env = models.CharField(
        "signing secret variable",
        max_length=manifest.ENV_NAME_MAX_LENGTH,
        help_text="The name of the environment variable that holds the app's signing secret.",
    )
    app_token_env = models.CharField(
        "app token variable",
        max_length=manifest.ENV_NAME_MAX_LENGTH,
        blank=True,
        help_text="The name of the environment variable that holds the app-level token (xapp-…), "
        "for Socket Mode. Empty: events arrive over HTTP.",
    )
    slash_command = models.CharField(
        max_length=32,
        default=manifest.DEFAULT_SLASH_COMMAND,
        help_text="The Slack app's slash command, as its app manifest names it (/kourier unless renamed there).",
    )
    agent_sessions = models.BooleanField(
        "Slack agent sessions",
        default=False,
        help_text="Show each turn as a Slack agent session: its status follows the turn and Slack's own "
        "stop control stops it (the app must subscribe to agent_session_stopped). Off: the Working… "
        "card's Stop button.",
    )
    team_id = models.CharField(max_length=32, blank=True)
    bot_user_id = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def subject(self) -> str:
        return manifest.subject_for(manifest.Kind.CONNECTION.value, self.name)

    @property
    def socket_mode(self) -> bool:
        return bool(self.app_token_env)

    def bot_token(self) -> str:
        return _read_env(self.subject, "spec.botToken", self.bot_token_env, secret=True)

    def signing_secret(self) -> str:
        return _read_env(self.subject, "spec.signingSecret", self.signing_secret_env, secret=True)

    def app_token(self) -> str | None:
        """The app-level token, or None when the Connection does not use Socket Mode."""
        if not self.app_token_env:
            return None
        return _read_env(self.subject, "spec.appToken", self.app_token_env, secret=True)


class Binding(models.Model):
    """One configured bridge: channels of a Connection → one agent endpoint, and how threads behave.

    The fields mirror the manifest's ``spec`` (bindings/manifest/ has the defaults and the rules).
    ``agent_headers`` maps a header name to the name of the environment variable holding its value:
    the Binding's service identity toward the agent.
    """

    Dialect = manifest.Dialect
    ProtocolVersion = manifest.ProtocolVersion
    Output = manifest.Output
    ThreadReplies = manifest.ThreadReplies
    ProgressMode = manifest.ProgressMode

    name = models.SlugField(max_length=manifest.NAME_MAX_LENGTH, unique=True)
    connection = models.ForeignKey(Connection, on_delete=models.PROTECT, related_name="bindings")
    agent_url = models.CharField(
        "agent URL",
        max_length=manifest.URL_MAX_LENGTH,
        help_text="For a kagent agent by name, the address its controller serves it at (found at apply).",
    )
    # spec.agent.kagent: a kagent agent by name (all three set) or not (all three empty).
    kagent_controller = models.CharField("kagent controller", max_length=manifest.URL_MAX_LENGTH, blank=True)
    kagent_namespace = models.CharField("kagent namespace", max_length=63, blank=True)
    kagent_name = models.CharField("kagent agent name", max_length=253, blank=True)
    dialect = models.CharField(
        max_length=16, choices=_choices(Dialect), default=manifest.DEFAULT_DIALECT.value
    )
    protocol_version = models.CharField(
        max_length=8, choices=_choices(ProtocolVersion), default=manifest.DEFAULT_PROTOCOL_VERSION.value
    )
    agent_headers = models.JSONField(default=dict, blank=True)
    user_identity = models.CharField(
        max_length=16,
        choices=_choices(manifest.UserIdentity),
        default=manifest.DEFAULT_USER_IDENTITY.value,
        help_text="What a turn sends the agent as the person behind it (X-User-Id).",
    )
    output = models.CharField(max_length=8, choices=_choices(Output), default=manifest.DEFAULT_OUTPUT.value)
    thread_replies = models.CharField(
        max_length=8, choices=_choices(ThreadReplies), default=manifest.DEFAULT_THREAD_REPLIES.value
    )
    acknowledgment_enabled = models.BooleanField(default=manifest.DEFAULT_ACKNOWLEDGMENT_ENABLED)
    acknowledgment_emoji = models.CharField(
        max_length=manifest.EMOJI_MAX_LENGTH, default=manifest.DEFAULT_ACKNOWLEDGMENT_EMOJI
    )
    progress = models.CharField(
        max_length=24, choices=_choices(ProgressMode), default=manifest.DEFAULT_PROGRESS.value
    )
    # spec.chat.threadContext (beyond the spec, on by default): a mention that starts a session in a
    # thread Kourier did not start carries the thread so far, within these bounds.
    thread_context_enabled = models.BooleanField(default=manifest.DEFAULT_THREAD_CONTEXT_ENABLED)
    thread_context_max_messages = models.PositiveIntegerField(
        default=manifest.DEFAULT_THREAD_CONTEXT_MAX_MESSAGES
    )
    thread_context_max_characters = models.PositiveIntegerField(
        default=manifest.DEFAULT_THREAD_CONTEXT_MAX_CHARACTERS
    )
    # spec.chat.files (issue 30): the files that go to the agent and come back from it.
    files_types = models.JSONField(default=default_file_types, blank=True)
    files_max_file_bytes = models.PositiveBigIntegerField(default=manifest.DEFAULT_MAX_FILE_BYTES)
    files_max_turn_bytes = models.PositiveBigIntegerField(default=manifest.DEFAULT_MAX_TURN_FILE_BYTES)
    files_max_out = models.PositiveIntegerField(default=manifest.DEFAULT_MAX_FILES_OUT)
    files_from_urls = models.JSONField(default=list, blank=True)
    ask_user = models.BooleanField(default=manifest.DEFAULT_ASK_USER)
    tool_approvals = models.BooleanField(default=manifest.DEFAULT_TOOL_APPROVALS)
    approver_groups = models.JSONField(default=list, blank=True)
    interaction_timeout = models.DurationField(default=manifest.DEFAULT_INTERACTION_TIMEOUT)
    deny_reasons = models.BooleanField(default=False)  # spec.interactions.denyReasons
    feedback = models.BooleanField(default=False)  # spec.feedback
    stop_by = models.CharField(  # spec.stopBy: who may stop a running turn (sessions/stops.py)
        max_length=16, choices=[(value, value) for value in manifest.StopBy], default=manifest.StopBy.MEMBERS
    )
    remind_before = models.DurationField(
        null=True,
        blank=True,
        help_text="spec.interactions.remindBefore: approvers are reminded this long before an approval's deadline.",
    )
    separate_approver = models.BooleanField(
        default=manifest.DEFAULT_SEPARATE_APPROVER,
        help_text="spec.interactions.separateApprover: the person who asked may deny a tool, not approve it.",
    )
    allow_for_thread = models.BooleanField(
        default=False,
        help_text="spec.interactions.allowForThread: approvers may allow a tool for the rest of the thread.",
    )
    # spec.interactions.tools, as the manifest writes each rule: [{"match", "approverGroups", ...}].
    tool_rules = models.JSONField(default=list, blank=True)
    thread_ttl = models.DurationField("thread TTL", default=manifest.DEFAULT_THREAD_TTL)
    # [{"name", "kind", "token_env", "channel"}]: the doors that start alert threads (spec.triggers).
    triggers = models.JSONField(default=list, blank=True)
    allow_mentions = models.CharField(
        max_length=8, choices=_choices(manifest.Mentions), default=manifest.DEFAULT_ALLOW_MENTIONS.value
    )
    max_messages = models.PositiveSmallIntegerField(default=manifest.DEFAULT_MAX_MESSAGES)
    daily_token_budget = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="spec.budget.dailyTokensPerChannel: model tokens a channel may use per UTC day; empty: no budget.",
    )
    # spec.directMessages as stored (direct_messages_row): None when the Binding takes channels.
    direct_messages = models.JSONField(
        null=True,
        blank=True,
        help_text="spec.directMessages: the Binding takes its Connection's direct messages (at most one per Connection).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            # The database itself refuses a second Binding taking one Connection's direct messages.
            models.UniqueConstraint(
                fields=["connection"],
                condition=models.Q(direct_messages__isnull=False),
                name="bindings_direct_messages_once_per_connection",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def subject(self) -> str:
        return manifest.subject_for(manifest.Kind.BINDING.value, self.name)

    def direct_messages_spec(self) -> manifest.DirectMessagesSpec | None:
        return direct_messages_spec(self.direct_messages)

    def channel_ids(self) -> list[str]:
        return sorted(channel.channel_id for channel in self.channels.all())

    def trigger(self, name: str) -> manifest.TriggerSpec | None:
        """The trigger of this name, as the manifest reads it."""
        return next((trigger for trigger in trigger_specs(self.triggers) if trigger.name == name), None)

    def trigger_token(self, trigger: manifest.TriggerSpec) -> str:
        index = next(i for i, t in enumerate(trigger_specs(self.triggers)) if t.name == trigger.name)
        return _read_env(self.subject, f"spec.triggers[{index}].token", trigger.token_env, secret=True)

    def trigger_channel(self, trigger: manifest.TriggerSpec) -> str | None:
        """Where the trigger's alerts are posted: its channel, else the Binding's only one."""
        if trigger.channel is not None:
            return trigger.channel
        channels = self.channel_ids()
        return channels[0] if len(channels) == 1 else None

    def tool_rule_specs(self) -> tuple[manifest.ToolRule, ...]:
        return manifest.tool_rules(self.tool_rules)

    def files_spec(self) -> manifest.FilesSpec:
        """spec.chat.files as stored."""
        return manifest.FilesSpec(
            types=tuple(self.files_types),
            max_file_bytes=self.files_max_file_bytes,
            max_turn_bytes=self.files_max_turn_bytes,
            max_files_out=self.files_max_out,
            from_urls=tuple(self.files_from_urls),
        )

    def kagent_ref(self) -> manifest.KagentRef | None:
        if not self.kagent_controller:
            return None
        return manifest.KagentRef(self.kagent_controller, self.kagent_namespace, self.kagent_name)

    def agent_headers_resolved(self) -> dict[str, str]:
        """The headers to send to the agent, with each value read from its environment variable."""
        return {
            header: _read_env(self.subject, f"spec.agent.headers.{header}", variable)
            for header, variable in sorted(self.agent_headers.items())
        }


def trigger_specs(rows: list[dict[str, Any]]) -> tuple[manifest.TriggerSpec, ...]:
    """A Binding's stored triggers as specs (a row stored before threadPer and maxThreadsPerHour
    existed reads as their defaults)."""
    specs = []
    for row in rows:
        specs.append(
            manifest.TriggerSpec(
                name=row["name"],
                kind=manifest.TriggerKind(row["kind"]),
                token_env=row["token_env"],
                channel=row.get("channel") or None,
                thread_per=manifest.ThreadPer(row.get("thread_per", manifest.DEFAULT_THREAD_PER)),
                max_threads_per_hour=int(
                    row.get("max_threads_per_hour", manifest.DEFAULT_MAX_THREADS_PER_HOUR)
                ),
            )
        )
    return tuple(specs)


def trigger_rows(specs: tuple[manifest.TriggerSpec, ...]) -> list[dict[str, Any]]:
    rows = []
    for spec in specs:
        row: dict[str, Any] = {"name": spec.name, "kind": spec.kind.value, "token_env": spec.token_env}
        if spec.channel is not None:
            row["channel"] = spec.channel
        # Defaults are left out, as the manifest leaves them out.
        if (
            spec.kind is manifest.TriggerKind.ALERTMANAGER
            and spec.thread_per is not manifest.DEFAULT_THREAD_PER
        ):
            row["thread_per"] = spec.thread_per.value
        if spec.max_threads_per_hour != manifest.DEFAULT_MAX_THREADS_PER_HOUR:
            row["max_threads_per_hour"] = spec.max_threads_per_hour
        rows.append(row)
    return rows


def direct_messages_spec(row: dict[str, Any] | None) -> manifest.DirectMessagesSpec | None:
    if row is None:
        return None
    return manifest.DirectMessagesSpec(
        allowed_users=tuple(row.get("allowed_users", ())),
        allowed_groups=tuple(row.get("allowed_groups", ())),
        suggested_prompts=tuple(
            manifest.SuggestedPrompt(title=prompt["title"], message=prompt["message"])
            for prompt in row.get("suggested_prompts", ())
        ),
        approvals_channel=row.get("approvals_channel") or None,
    )


def direct_messages_row(spec: manifest.DirectMessagesSpec | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    row: dict[str, Any] = {
        "allowed_users": list(spec.allowed_users),
        "allowed_groups": list(spec.allowed_groups),
        "suggested_prompts": [{"title": p.title, "message": p.message} for p in spec.suggested_prompts],
    }
    if spec.approvals_channel is not None:
        row["approvals_channel"] = spec.approvals_channel
    return row


def secret_variables_elsewhere(
    *, connections: Collection[str] = (), bindings: Collection[str] = ()
) -> tuple[set[str], set[str]]:
    """The variables the Connections' secrets and the triggers' tokens of the database read, but
    for the Connections and Bindings named (which are being written)."""
    connection_secrets = {
        variable
        for variables in Connection.objects.exclude(name__in=connections).values_list(
            "bot_token_env", "signing_secret_env", "app_token_env"
        )
        for variable in variables
        if variable
    }
    trigger_tokens = {
        trigger["token_env"]
        for triggers in Binding.objects.exclude(name__in=bindings).values_list("triggers", flat=True)
        for trigger in triggers
    }
    return connection_secrets, trigger_tokens


class BindingChannel(models.Model):
    """A channel of a Binding. ``connection`` repeats the Binding's so the database itself refuses
    a channel bound twice on one Connection (services keep the two in step)."""

    binding = models.ForeignKey(Binding, on_delete=models.CASCADE, related_name="channels")
    connection = models.ForeignKey(Connection, on_delete=models.PROTECT, related_name="+")
    channel_id = models.CharField("channel ID", max_length=manifest.SLACK_ID_MAX_LENGTH)

    class Meta:
        ordering = ["channel_id"]
        constraints = [
            models.UniqueConstraint(fields=["connection", "channel_id"], name="bindings_channel_bound_once"),
        ]

    def __str__(self) -> str:
        return self.channel_id
