"""The admin's forms: each turns what the operator typed into a manifest and validates it like ``apply``.

Field types are deliberately loose (text, selects, checkboxes), so that every refusal comes from
``bindings.manifest`` with the same wording as the loader's, and lands on the field it is about.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django import forms
from django.utils.html import escape

from bindings import manifest, services
from bindings.allow_for_thread_form import AllowForThreadFields
from bindings.files_form import FILES_FIELD_PATHS, FilesFields, files_section, files_values
from bindings.form_fields import HeadersField, ToolRulesField, TriggersField, split_list, tool_rules_text
from bindings.manifest import BindingSpec, ConnectionSpec, ManifestWarning, Problem, secret_refs
from bindings.models import Binding, Connection
from bindings.reply_extras_form import ReplyExtrasFields
from bindings.thread_context_form import THREAD_CONTEXT_FIELD_PATHS as THREAD_CONTEXT_PATHS
from bindings.thread_context_form import ThreadContextFields, thread_context_section, thread_context_values
from kourier.credentials import MASK, kept_credentials, without_credentials

CONNECTION_FIELD_PATHS = {
    "metadata.name": "name",
    "spec.botToken": "bot_token_env",
    "spec.signingSecret": "signing_secret_env",
    "spec.appToken": "app_token_env",
    "spec.slashCommand": "slash_command",
    "spec.agentSessions": "agent_sessions",
}

BINDING_FIELD_PATHS = {
    "metadata.name": "name",
    "spec.connection": "connection",
    "spec.channels": "channels",
    "spec.agent.url": "agent_url",
    "spec.agent.kagent.controller": "kagent_controller",
    "spec.agent.kagent.namespace": "kagent_namespace",
    "spec.agent.kagent.name": "kagent_name",
    "spec.agent.kagent": "kagent_controller",
    "spec.agent.dialect": "dialect",
    "spec.agent.protocolVersion": "protocol_version",
    "spec.agent.headers": "agent_headers",
    "spec.agent.userIdentity": "user_identity",
    "spec.output": "output",
    "spec.chat.threadReplies": "thread_replies",
    "spec.chat.acknowledgment.enabled": "acknowledgment_enabled",
    "spec.chat.acknowledgment.emoji": "acknowledgment_emoji",
    "spec.chat.progress": "progress",
    **THREAD_CONTEXT_PATHS,
    **FILES_FIELD_PATHS,
    "spec.interactions.askUser": "ask_user",
    "spec.interactions.toolApprovals": "tool_approvals",
    "spec.interactions.approverGroups": "approver_groups",
    "spec.interactions.timeout": "interaction_timeout",
    "spec.interactions.denyReasons": "deny_reasons",
    "spec.feedback": "feedback",
    "spec.stopBy": "stop_by",
    "spec.interactions.remindBefore": "remind_before",
    "spec.interactions.separateApprover": "separate_approver",
    "spec.interactions.tools": "tool_rules",
    "spec.interactions.allowForThread": "allow_for_thread",
    "spec.session.threadTTL": "thread_ttl",
    "spec.triggers": "triggers",
    "spec.replies.allowMentions": "allow_mentions",
    "spec.replies.maxMessages": "max_messages",
    "spec.budget.dailyTokensPerChannel": "daily_token_budget",
}


def field_for(path: str, field_paths: dict[str, str]) -> str | None:
    """The form field a manifest path belongs to (``spec.channels[2]`` → ``channels``), if any."""
    for prefix, name in field_paths.items():
        if path == prefix or path.startswith((f"{prefix}.", f"{prefix}[")):
            return name
    return None


def _choices(enum: type[StrEnum]) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


def _env_field(label: str, help_text: str) -> forms.CharField:
    return forms.CharField(label=label, required=False, help_text=help_text)


def _select(label: str, choices: list[tuple[str, str]], initial: str, help_text: str = "") -> forms.CharField:
    # A text field shown as a select: a value outside the list is refused by the manifest's validator.
    return forms.CharField(
        label=label,
        required=False,
        initial=initial,
        help_text=help_text,
        widget=forms.Select(choices=choices),
    )


class ManifestForm(forms.ModelForm):
    """A form checked by converting it to a manifest and validating that (``check()``)."""

    field_paths: dict[str, str] = {}
    spec: ConnectionSpec | BindingSpec | None = None
    warnings: list[ManifestWarning]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned_data = self.cleaned_data
        validation = self.check(cleaned_data)
        self.warnings = validation.warnings
        for problem in validation.errors:
            self.add_problem(problem)
        specs: list[ConnectionSpec | BindingSpec] = [*validation.connections, *validation.bindings]
        self.spec = specs[0] if validation.ok and specs else None
        return cleaned_data

    def check(self, cleaned_data: dict[str, Any]) -> manifest.Validation:
        raise NotImplementedError

    def add_problem(self, problem: Problem) -> None:
        field = field_for(problem.path, self.field_paths)
        self.add_error(field if field in self.fields else None, str(problem))


class ConnectionForm(ManifestForm):
    field_paths = CONNECTION_FIELD_PATHS

    name = forms.CharField(
        required=False, help_text="metadata.name: letters, digits, hyphens and underscores."
    )
    bot_token_env = _env_field(
        "Bot token variable",
        "spec.botToken: the NAME of the environment variable that holds the bot token, ending in _TOKEN or "
        "_SECRET (such as SLACK_BOT_TOKEN), or the path of a file inside SECRET_FILE_DIRECTORIES.",
    )
    signing_secret_env = _env_field(
        "Signing secret variable",
        "spec.signingSecret: the NAME of the environment variable that holds the signing secret, ending in "
        "_TOKEN or _SECRET (such as SLACK_SIGNING_SECRET), or the path of a file inside SECRET_FILE_DIRECTORIES.",
    )
    app_token_env = _env_field(
        "App token variable",
        "spec.appToken (optional, Socket Mode): the NAME of the environment variable that holds the "
        "app-level token.",
    )
    slash_command = forms.CharField(
        required=False,
        help_text=f"spec.slashCommand: the Slack app's slash command (empty: {manifest.DEFAULT_SLASH_COMMAND}).",
    )
    agent_sessions = forms.BooleanField(
        label="Slack agent sessions",
        required=False,
        help_text="spec.agentSessions: each turn shows as a Slack agent session, whose own stop control "
        "stops it (the Slack app subscribes to agent_session_stopped). Off: the Working… card's Stop button.",
    )

    class Meta:
        model = Connection
        fields = ["name"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            for name in (
                "bot_token_env",
                "signing_secret_env",
                "app_token_env",
                "slash_command",
                "agent_sessions",
            ):
                self.initial.setdefault(name, getattr(self.instance, name))

    def check(self, cleaned_data: dict[str, Any]) -> manifest.Validation:
        spec: dict[str, Any] = {}
        for key, name in (
            ("botToken", "bot_token_env"),
            ("signingSecret", "signing_secret_env"),
            ("appToken", "app_token_env"),
        ):
            if cleaned_data.get(name):
                spec[key] = secret_refs.as_manifest(cleaned_data[name])
        if cleaned_data.get("slash_command"):
            spec["slashCommand"] = cleaned_data["slash_command"]
        if cleaned_data.get("agent_sessions"):
            spec["agentSessions"] = True
        return services.check_connection(_document(manifest.Kind.CONNECTION, cleaned_data.get("name"), spec))


# A URL whose masked credentials were kept with another host or path: the form cannot know them.
CREDENTIALS_NOT_SHOWN = (
    f"The credentials of this URL are not shown ({MASK}): type them again, or leave the URL as it was."
)


class BindingForm(ThreadContextFields, FilesFields, ReplyExtrasFields, AllowForThreadFields, ManifestForm):
    field_paths = BINDING_FIELD_PATHS
    # Whether this form's user may change where the Binding's turns go (the admin: superusers only).
    may_change_agent = True

    name = forms.CharField(
        required=False, help_text="metadata.name: letters, digits, hyphens and underscores."
    )
    connection = _select("Connection", [], "", "spec.connection")
    channels = forms.CharField(
        required=False, help_text="spec.channels: Slack channel IDs, comma-separated, such as C0123456789."
    )
    agent_url = forms.CharField(
        label="Agent URL",
        required=False,
        help_text="spec.agent.url. Leave it empty for a kagent agent by name (below): its controller says.",
    )
    kagent_controller = forms.CharField(
        label="kagent controller",
        required=False,
        help_text="spec.agent.kagent.controller: the kagent controller's URL, to reach a kagent agent by name "
        "(kagent 1.0 or 0.10; the line and the A2A version are read from the agent card when you save).",
    )
    kagent_namespace = forms.CharField(
        label="kagent namespace", required=False, help_text="spec.agent.kagent.namespace"
    )
    kagent_name = forms.CharField(
        label="kagent agent name", required=False, help_text="spec.agent.kagent.name"
    )
    dialect = _select("Dialect", _choices(manifest.Dialect), manifest.DEFAULT_DIALECT, "spec.agent.dialect")
    protocol_version = _select(
        "Protocol version",
        _choices(manifest.ProtocolVersion),
        manifest.DEFAULT_PROTOCOL_VERSION,
        "spec.agent.protocolVersion: auto reads it from the agent card.",
    )
    agent_headers = HeadersField(
        label="Agent headers",
        required=False,
        help_text="spec.agent.headers: one per line, as Header-Name: ENV_VAR_NAME. The value is read from "
        "that environment variable when the agent is called; it is never stored.",
    )
    user_identity = _select(
        "User identity",
        _choices(manifest.UserIdentity),
        manifest.DEFAULT_USER_IDENTITY,
        "spec.agent.userIdentity: what a turn sends the agent as the person behind it (the X-User-Id "
        "header): none, the Slack user ID, or the person's email (needs the users:read.email scope).",
    )
    output = _select("Output", _choices(manifest.Output), manifest.DEFAULT_OUTPUT, "spec.output")
    thread_replies = _select(
        "Thread replies",
        _choices(manifest.ThreadReplies),
        manifest.DEFAULT_THREAD_REPLIES,
        "spec.chat.threadReplies",
    )
    acknowledgment_enabled = forms.BooleanField(
        label="Acknowledgment reaction",
        required=False,
        initial=manifest.DEFAULT_ACKNOWLEDGMENT_ENABLED,
        help_text="spec.chat.acknowledgment.enabled",
    )
    acknowledgment_emoji = forms.CharField(
        label="Acknowledgment emoji",
        required=False,
        initial=manifest.DEFAULT_ACKNOWLEDGMENT_EMOJI,
        help_text="spec.chat.acknowledgment.emoji: a bare reaction name such as eyes (no colons).",
    )
    progress = _select(
        "Progress", _choices(manifest.ProgressMode), manifest.DEFAULT_PROGRESS, "spec.chat.progress"
    )
    ask_user = forms.BooleanField(
        label="Ask user",
        required=False,
        initial=manifest.DEFAULT_ASK_USER,
        help_text="spec.interactions.askUser",
    )
    tool_approvals = forms.BooleanField(
        label="Tool approvals",
        required=False,
        initial=manifest.DEFAULT_TOOL_APPROVALS,
        help_text="spec.interactions.toolApprovals: kagent-v1 dialect only.",
    )
    approver_groups = forms.CharField(
        required=False,
        help_text="spec.interactions.approverGroups: Slack user group IDs, comma-separated, such as "
        f"S0123456789; at most {manifest.MAX_APPROVER_GROUPS}. Empty: any non-bot channel member may decide.",
    )
    deny_reasons = forms.BooleanField(
        label="Ask a reason with a denial",
        required=False,
        help_text="spec.interactions.denyReasons: Deny opens a modal for the reason the model reads.",
    )
    interaction_timeout = forms.CharField(
        required=False,
        initial=manifest.format_duration(manifest.DEFAULT_INTERACTION_TIMEOUT),
        help_text="spec.interactions.timeout: such as 45s, 30m, 1h30m or 90d.",
    )
    remind_before = forms.CharField(
        required=False,
        help_text="spec.interactions.remindBefore: remind the approvers this long before an approval's "
        "deadline, such as 10m; shorter than the timeout. Empty: no reminder.",
    )
    separate_approver = forms.BooleanField(
        label="Separate approver",
        required=False,
        initial=manifest.DEFAULT_SEPARATE_APPROVER,
        help_text="spec.interactions.separateApprover: the person whose message started the turn may deny "
        "a tool but not approve it (four eyes).",
    )
    tool_rules = ToolRulesField(
        label="Tool rules",
        required=False,
        help_text="spec.interactions.tools: one rule per line, as MATCH [approverGroups=S1,S2] "
        "[separateApprover=true] [unattended=deny], such as db_* separateApprover=true. MATCH is a tool name "
        "or a glob; the first rule that matches a tool wins; a field left out, and a tool no rule matches, "
        "take the Binding's own.",
    )
    thread_ttl = forms.CharField(
        label="Thread TTL",
        required=False,
        initial=manifest.format_duration(manifest.DEFAULT_THREAD_TTL),
        help_text="spec.session.threadTTL: such as 90d.",
    )

    allow_mentions = _select(
        "Allow mentions",
        _choices(manifest.Mentions),
        manifest.DEFAULT_ALLOW_MENTIONS,
        "spec.replies.allowMentions: users lets the agent's answer mention people; a channel or a group never.",
    )
    max_messages = forms.IntegerField(
        label="Most messages per answer",
        required=False,
        initial=manifest.DEFAULT_MAX_MESSAGES,
        help_text="spec.replies.maxMessages: past it the rest of an answer is not posted and the reply says so.",
    )
    daily_token_budget = forms.CharField(
        label="Daily token budget per channel",
        required=False,
        help_text="spec.budget.dailyTokensPerChannel: model tokens (in and out) a channel may use per UTC day, "
        "as the agent reports them; past it a new message is not sent and the thread is told when it resets. "
        "Empty: no budget.",
    )
    triggers = TriggersField(
        required=False,
        # Escaped: the admin shows help texts as HTML, where <binding> and <name> would be tags.
        help_text=escape(
            "spec.triggers: one per line, as NAME KIND TOKEN_ENV_VAR [CHANNEL], such as "
            "prometheus alertmanager OPS_TRIGGER_TOKEN (the variable's name ends in _TOKEN or _SECRET). "
            "KIND is alertmanager or generic; each is served at "
            "POST /triggers/<binding>/<name> with the token as a bearer token."
        ),
    )

    class Meta:
        model = Binding
        fields = ["name"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = list(Connection.objects.order_by("name").values_list("name", flat=True))
        self.fields["connection"].widget.choices = [("", "---------"), *((name, name) for name in names)]
        if self.instance.pk:
            self.initial.update(form_values(services.binding_spec(self.instance)))

    def check(self, cleaned_data: dict[str, Any]) -> manifest.Validation:
        def given(name: str) -> Any:
            value = cleaned_data.get(name)
            return None if value == "" else value  # null: the validator's "omitted"

        if self.instance.pk:
            # A URL sent back as the form showed it (credentials masked) keeps the stored credentials.
            stored = form_values(services.binding_spec(self.instance), masked=False)
            for name in ("agent_url", "kagent_controller"):
                cleaned_data[name] = kept_credentials(cleaned_data.get(name) or "", stored[name])
        for name in ("agent_url", "kagent_controller"):
            if f"://{MASK}@" in (cleaned_data.get(name) or ""):
                self.add_error(name, CREDENTIALS_NOT_SHOWN)

        where: dict[str, Any] = {"channels": split_list(cleaned_data.get("channels", ""))}
        if self.instance.pk and self.instance.direct_messages is not None and not where["channels"]:
            # The admin does not edit directMessages (apply does): a Binding taking them keeps them.
            exported = manifest.binding_manifest(services.binding_spec(self.instance))
            where = {"directMessages": exported["spec"]["directMessages"]}
        document = _document(
            manifest.Kind.BINDING,
            cleaned_data.get("name"),
            {
                "connection": given("connection"),
                **where,
                "agent": {
                    "url": given("agent_url"),
                    "kagent": _kagent_section(cleaned_data),
                    "dialect": given("dialect"),
                    "protocolVersion": given("protocol_version"),
                    "headers": {
                        header: secret_refs.as_manifest(variable)
                        for header, variable in (cleaned_data.get("agent_headers") or {}).items()
                    },
                    "userIdentity": given("user_identity"),
                },
                "output": given("output"),
                "chat": {
                    "threadReplies": given("thread_replies"),
                    "acknowledgment": {
                        "enabled": cleaned_data.get("acknowledgment_enabled", False),
                        "emoji": given("acknowledgment_emoji"),
                    },
                    "progress": given("progress"),
                    "threadContext": thread_context_section(cleaned_data),
                    "files": files_section(cleaned_data),
                },
                "interactions": {
                    "askUser": cleaned_data.get("ask_user", False),
                    "toolApprovals": cleaned_data.get("tool_approvals", False),
                    "approverGroups": split_list(cleaned_data.get("approver_groups", "")),
                    "timeout": given("interaction_timeout"),
                    "denyReasons": cleaned_data.get("deny_reasons", False),
                    "remindBefore": given("remind_before"),
                    "separateApprover": cleaned_data.get("separate_approver", False),
                    "tools": cleaned_data.get("tool_rules") or [],
                    "allowForThread": cleaned_data.get("allow_for_thread", False),
                },
                "session": {"threadTTL": given("thread_ttl")},
                "triggers": cleaned_data.get("triggers") or [],
                "replies": {
                    "allowMentions": given("allow_mentions"),
                    "maxMessages": given("max_messages"),
                },
                "budget": {"dailyTokensPerChannel": _whole_number(given("daily_token_budget"))},
                "feedback": cleaned_data.get("feedback", False),
                "stopBy": given("stop_by"),
            },
        )
        return services.check_binding(document, binding=self.instance, may_change_agent=self.may_change_agent)


def _whole_number(text: Any) -> Any:
    """``"500000"`` → 500000; anything else as typed, for the validator to refuse in its words."""
    if isinstance(text, str) and text.strip().isdigit():
        return int(text.strip())
    return text


def _kagent_section(cleaned_data: dict[str, Any]) -> dict[str, Any] | None:
    """spec.agent.kagent when any of its fields is filled in (the validator names what is missing)."""
    fields = {"controller": "kagent_controller", "namespace": "kagent_namespace", "name": "kagent_name"}
    section = {key: cleaned_data.get(name) or None for key, name in fields.items()}
    return section if any(section.values()) else None


def _document(kind: manifest.Kind, name: Any, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": manifest.API_VERSION,
        "kind": kind.value,
        "metadata": {"name": name or None},
        "spec": spec,
    }


def form_values(spec: BindingSpec, *, masked: bool = True) -> dict[str, Any]:
    """A Binding's spec as the form shows it (``masked``: its URLs without their credentials)."""
    shown = without_credentials if masked else str
    return {
        "name": spec.name,
        "connection": spec.connection,
        "channels": ", ".join(spec.channels),
        # Shown without their credentials (https://***@host); check() keeps the stored ones.
        "agent_url": "" if spec.agent.kagent else shown(spec.agent.url),
        "kagent_controller": shown(spec.agent.kagent.controller) if spec.agent.kagent else "",
        "kagent_namespace": spec.agent.kagent.namespace if spec.agent.kagent else "",
        "kagent_name": spec.agent.kagent.name if spec.agent.kagent else "",
        "dialect": spec.agent.dialect.value,
        # A kagent agent's version is read from its card at every save.
        "protocol_version": manifest.ProtocolVersion.AUTO.value
        if spec.agent.kagent
        else spec.agent.protocol_version.value,
        "agent_headers": "\n".join(f"{header}: {variable}" for header, variable in spec.agent.headers),
        "user_identity": spec.agent.user_identity.value,
        "output": spec.output.value,
        "thread_replies": spec.chat.thread_replies.value,
        "acknowledgment_enabled": spec.chat.acknowledgment.enabled,
        "acknowledgment_emoji": spec.chat.acknowledgment.emoji,
        "progress": spec.chat.progress.value,
        **thread_context_values(spec),
        **files_values(spec),
        "ask_user": spec.interactions.ask_user,
        "tool_approvals": spec.interactions.tool_approvals,
        "approver_groups": ", ".join(spec.interactions.approver_groups),
        "interaction_timeout": manifest.format_duration(spec.interactions.timeout),
        "deny_reasons": spec.interactions.deny_reasons,
        "feedback": spec.feedback,
        "stop_by": spec.stop_by.value,
        "remind_before": ""
        if spec.interactions.remind_before is None
        else manifest.format_duration(spec.interactions.remind_before),
        "separate_approver": spec.interactions.separate_approver,
        "tool_rules": tool_rules_text(spec.interactions.tools),
        "allow_for_thread": spec.interactions.allow_for_thread,
        "thread_ttl": manifest.format_duration(spec.session.thread_ttl),
        "allow_mentions": spec.replies.allow_mentions.value,
        "max_messages": spec.replies.max_messages,
        "daily_token_budget": ""
        if spec.budget.daily_tokens_per_channel is None
        else str(spec.budget.daily_tokens_per_channel),
        "triggers": "\n".join(
            " ".join([t.name, t.kind.value, t.token_env, *([t.channel] if t.channel else []), *_options(t)])
            for t in spec.triggers
        ),
    }


def _options(trigger: manifest.TriggerSpec) -> list[str]:
    """A trigger's options the admin writes back: those that are not their defaults."""
    options = []
    if (
        trigger.kind is manifest.TriggerKind.ALERTMANAGER
        and trigger.thread_per is not manifest.DEFAULT_THREAD_PER
    ):
        options.append(f"threadPer={trigger.thread_per.value}")
    if trigger.max_threads_per_hour != manifest.DEFAULT_MAX_THREADS_PER_HOUR:
        options.append(f"maxThreadsPerHour={trigger.max_threads_per_hour}")
    return options
