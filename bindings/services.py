"""Writing and reading Connections and Bindings: manifests in and out, the admin's checks, and lookups.

Every write of a Connection or Binding goes through ``save_connection`` / ``save_binding`` after
``bindings.manifest.validate`` has accepted it: ``apply_manifests`` (``manage.py apply``) and the admin
share the validator and the write path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, transaction

from audit import services as audit
from bindings import agent_route, manifest, secret_variables
from bindings.manifest import (
    BindingSpec,
    ConnectionSpec,
    Document,
    ManifestWarning,
    Problem,
    Validation,
)
from bindings.models import (
    Binding,
    BindingChannel,
    Connection,
    MissingSecret,
    direct_messages_row,
    secret_variables_elsewhere,
    trigger_rows,
    trigger_specs,
)
from bindings.secret_variables import SERVICE_SECRET_VARIABLES
from kourier.a2a.factory import agent_card_problem
from kourier.a2a.kagent_agents import KagentAgentNotFound, find_kagent_agent, line_of
from kourier.slack.clients import SlackError, call_outcome, connection_workspace, error_name
from kourier.slack.identity import token_identity


class Action(StrEnum):
    """What applying does to one resource."""

    CREATED = "created"
    CONFIGURED = "configured"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Applied:
    """What applying did (or, in a dry run, would do) to one resource, as kubectl reports it."""

    kind: str
    name: str
    action: Action
    changes: tuple[str, ...] = ()  # the manifest paths that a "configured" changes
    dry_run: bool = False
    found: str = ""  # for a kagent agent by name: which line serves it, and where

    def __str__(self) -> str:
        text = f"{self.kind.lower()}/{self.name} {self.action}"
        if self.dry_run:
            text += " (dry run)"
        if self.changes:
            text += ": " + ", ".join(self.changes)
        if self.found:
            text += f" [{self.found}]"
        return text


@dataclass
class ApplyResult:
    dry_run: bool = False
    resources: list[Applied] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    warnings: list[ManifestWarning] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def changed(self) -> bool:
        return any(applied.action != Action.UNCHANGED for applied in self.resources)

    def summary(self) -> str:
        if self.errors:
            count = len(self.errors)
            return f"Refused: {count} error{'s' if count != 1 else ''}; nothing was written."
        counts = dict.fromkeys(Action, 0)
        for applied in self.resources:
            counts[applied.action] += 1
        if self.dry_run:
            return (
                f"Dry run, nothing was written: {counts[Action.CREATED]} to create, "
                f"{counts[Action.CONFIGURED]} to configure, {counts[Action.UNCHANGED]} unchanged."
            )
        if not self.changed:
            return f"Nothing changed: {counts[Action.UNCHANGED]} unchanged."
        return f"Applied: {counts[Action.CREATED]} created, {counts[Action.CONFIGURED]} configured, {counts[Action.UNCHANGED]} unchanged."


# --- Lookups -----------------------------------------------------------------------------------------


def connection_spec(connection: Connection) -> ConnectionSpec:
    return ConnectionSpec(
        name=connection.name,
        bot_token_env=connection.bot_token_env,
        signing_secret_env=connection.signing_secret_env,
        app_token_env=connection.app_token_env or None,
    )


def binding_spec(binding: Binding) -> BindingSpec:
    """The spec a Binding row holds (reads its channels, so prefetch them when reading many)."""
    return BindingSpec(
        name=binding.name,
        connection=binding.connection.name,
        channels=tuple(sorted(channel.channel_id for channel in binding.channels.all())),
        agent=manifest.AgentSpec(
            url=binding.agent_url,
            dialect=manifest.Dialect(binding.dialect),
            protocol_version=manifest.ProtocolVersion(binding.protocol_version),
            headers=manifest.sort_headers(binding.agent_headers.items()),
            kagent=binding.kagent_ref(),
            user_identity=manifest.UserIdentity(binding.user_identity),
        ),
        output=manifest.Output(binding.output),
        chat=manifest.ChatSpec(
            thread_replies=manifest.ThreadReplies(binding.thread_replies),
            acknowledgment=manifest.AcknowledgmentSpec(
                enabled=binding.acknowledgment_enabled, emoji=binding.acknowledgment_emoji
            ),
            progress=manifest.ProgressMode(binding.progress),
        ),
        interactions=manifest.InteractionsSpec(
            ask_user=binding.ask_user,
            tool_approvals=binding.tool_approvals,
            approver_groups=tuple(binding.approver_groups),
            timeout=binding.interaction_timeout,
            deny_reasons=binding.deny_reasons,
            remind_before=binding.remind_before,
            separate_approver=binding.separate_approver,
            tools=binding.tool_rule_specs(),
        ),
        session=manifest.SessionSpec(thread_ttl=binding.thread_ttl),
        triggers=trigger_specs(binding.triggers),
        replies=manifest.RepliesSpec(
            allow_mentions=manifest.Mentions(binding.allow_mentions), max_messages=binding.max_messages
        ),
        budget=manifest.BudgetSpec(daily_tokens_per_channel=binding.daily_token_budget),
        feedback=binding.feedback,
        direct_messages=binding.direct_messages_spec(),
    )


def binding_warnings(binding: Binding) -> list[ManifestWarning]:
    """What the Binding's change page warns of: the manifest's warnings and unset variables (no
    network: the agent card is fetched when the Binding is saved)."""
    spec = binding_spec(binding)
    return [*manifest.binding_warnings(spec), *unset_variable_warnings(Validation(bindings=[spec]))]


def connection_warnings(connection: Connection) -> list[ManifestWarning]:
    return unset_variable_warnings(Validation(connections=[connection_spec(connection)]))


# --- Validation against the database -----------------------------------------------------------------


def existing_state(*, exclude_binding: int | None = None) -> dict[str, Any]:
    """What the validator needs to know of the database, as plain data (see ``manifest.validate``)."""
    channels = BindingChannel.objects.values_list("connection__name", "channel_id", "binding__name")
    if exclude_binding is not None:
        channels = channels.exclude(binding_id=exclude_binding)
    direct = Binding.objects.filter(direct_messages__isnull=False)
    if exclude_binding is not None:
        direct = direct.exclude(pk=exclude_binding)
    return {
        "connections": set(Connection.objects.values_list("name", flat=True)),
        "bound_channels": {(connection, channel): owner for connection, channel, owner in channels},
        "direct_message_bindings": dict(direct.values_list("connection__name", "name")),
    }


def refuse_unfit_secret_variables(validation: Validation) -> Validation:
    """Refuses every Connection and trigger whose secret reads a variable it may not
    (``bindings.secret_variables``): a public one, the service's own, an agent header's, another kind's."""
    connection_secrets, trigger_tokens = secret_variables_elsewhere(
        connections={spec.name for spec in validation.connections},
        bindings={spec.name for spec in validation.bindings},
    )
    return secret_variables.refuse_unfit(
        validation, connection_secrets=connection_secrets, trigger_tokens=trigger_tokens
    )


def refuse_unlisted_header_variables(validation: Validation) -> Validation:
    """Refuses every Binding whose agent headers read a variable AGENT_HEADER_VARIABLES does not
    list, a service secret, or a Connection's secret (apply and the admin; the rest is unchanged)."""
    connection_secrets = {
        name
        for names in Connection.objects.values_list("bot_token_env", "signing_secret_env", "app_token_env")
        for name in names
        if name
    } | {
        name
        for spec in validation.connections
        for name in (spec.bot_token_env, spec.signing_secret_env, spec.app_token_env)
        if name
    }
    refused = set()
    for spec in validation.bindings:
        for header, variable in spec.agent.headers:
            if variable in SERVICE_SECRET_VARIABLES or variable in connection_secrets:
                why = "is one of the service's own secrets, which no agent header may send"
            elif not manifest.header_variable_allowed(variable, settings.AGENT_HEADER_VARIABLES):
                why = "is not a variable agent headers may read: list it in AGENT_HEADER_VARIABLES"
            else:
                continue
            refused.add(spec.name)
            validation.errors.append(
                Problem(
                    manifest.subject_for("Binding", spec.name),
                    f"spec.agent.headers.{header}.fromEnv",
                    f"{variable} {why}",
                )
            )
    validation.bindings = [spec for spec in validation.bindings if spec.name not in refused]
    return validation


def check_connection(document: Mapping[str, Any]) -> Validation:
    """Validate one Connection manifest (as a dict) the way ``apply`` would: the admin form's check."""
    validation = refuse_unfit_secret_variables(manifest.validate([Document(data=document)]))
    if validation.ok:
        validation.warnings += unset_variable_warnings(validation)
    return validation


def check_binding(
    document: Mapping[str, Any], *, binding: Binding | None = None, may_change_agent: bool = True
) -> Validation:
    """Validate one Binding manifest (as a dict) the way ``apply`` would: the admin form's check.

    ``binding`` is the row being edited, whose own channels do not count as taken. Without
    ``may_change_agent`` a change of where its turns go is refused before anything is fetched.
    """
    exclude = binding.pk if binding is not None and binding.pk else None
    validation = refuse_unfit_secret_variables(
        refuse_unlisted_header_variables(
            manifest.validate([Document(data=document)], **existing_state(exclude_binding=exclude))
        )
    )
    if validation.ok and not may_change_agent:
        before = binding_spec(binding) if binding is not None and exclude is not None else None
        validation.errors += [p for spec in validation.bindings for p in agent_route.refusals(before, spec)]
    if validation.ok:
        find_kagent_agents(validation)
    if validation.ok:
        validation.warnings += operator_warnings(validation)
    return validation


# --- What this process can tell the operator before it is too late --------------------------------


def unset_variable_warnings(validation: Validation) -> list[ManifestWarning]:
    """A warning per ``fromEnv`` whose variable is not set (or empty) in this process: accepted, since
    the service's processes may have it, but a process without it fails where it reads it."""
    named: list[tuple[str, str, str]] = []  # (subject, path, variable)
    for connection in validation.connections:
        subject = manifest.subject_for(manifest.Kind.CONNECTION.value, connection.name)
        named += [
            (subject, "spec.botToken.fromEnv", connection.bot_token_env),
            (subject, "spec.signingSecret.fromEnv", connection.signing_secret_env),
        ]
        if connection.app_token_env:
            named.append((subject, "spec.appToken.fromEnv", connection.app_token_env))
    for binding in validation.bindings:
        subject = manifest.subject_for(manifest.Kind.BINDING.value, binding.name)
        named += [
            (subject, f"spec.agent.headers.{header}.fromEnv", variable)
            for header, variable in binding.agent.headers
        ]
        named += [
            (subject, f"spec.triggers[{index}].token.fromEnv", trigger.token_env)
            for index, trigger in enumerate(binding.triggers)
        ]
    return [
        ManifestWarning(subject, path, f"{path}: {variable} is not set in this process")
        for subject, path, variable in named
        if not os.environ.get(variable)
    ]


def agent_card_warnings(validation: Validation) -> list[ManifestWarning]:
    """A warning per Binding whose agent card cannot be fetched now (network I/O, a few seconds at
    most each): accepted, since the agent may come up later, but its turns fail until it does. A
    kagent agent by name was found through its card already."""
    warnings = []
    for binding in validation.bindings:
        if binding.agent.kagent is not None or not binding.agent.url:
            continue
        problem = async_to_sync(agent_card_problem)(binding.agent.url, headers=_lookup_headers(binding.agent))
        if problem is not None:
            subject = manifest.subject_for(manifest.Kind.BINDING.value, binding.name)
            message = f"spec.agent.url: the agent card cannot be fetched ({problem}); turns fail until it can"
            warnings.append(ManifestWarning(subject, "spec.agent.url", message))
    return warnings


def operator_warnings(validation: Validation) -> list[ManifestWarning]:
    return [*unset_variable_warnings(validation), *agent_card_warnings(validation)]


# --- kagent agents by name --------------------------------------------------------------------------


def describe_agent(agent: manifest.AgentSpec) -> str:
    """How a Binding reaches its agent, for the admin and ``apply``: the kagent line and address found
    for a kagent agent by name, else the URL."""
    if agent.kagent is None:
        return agent.url
    return f"kagent agent {agent.kagent}: {line_of(agent.protocol_version.value)} at {agent.url} (A2A {agent.protocol_version.value})"


def find_kagent_agents(validation: Validation) -> None:
    """Finds every kagent agent named by the validated Bindings on its controller (network I/O), and
    fills in the address and A2A version found. One not found is a refusal at ``spec.agent.kagent``."""
    for index, spec in enumerate(validation.bindings):
        if not spec.agent.needs_lookup:
            continue
        assert spec.agent.kagent is not None
        kagent = spec.agent.kagent
        try:
            found = async_to_sync(find_kagent_agent)(
                kagent.controller, kagent.namespace, kagent.name, headers=_lookup_headers(spec.agent)
            )
        except KagentAgentNotFound as exc:
            subject = manifest.subject_for(manifest.Kind.BINDING.value, spec.name)
            validation.errors.append(Problem(subject, "spec.agent.kagent", str(exc)))
            continue
        agent = replace(
            spec.agent, url=found.url, protocol_version=manifest.ProtocolVersion(found.protocol_version)
        )
        validation.bindings[index] = replace(spec, agent=agent)


def _lookup_headers(agent: manifest.AgentSpec) -> dict[str, str]:
    """The Binding's headers whose variables are set here: a controller behind an auth proxy wants
    the Binding's credential for the card too."""
    return {header: os.environ[variable] for header, variable in agent.headers if os.environ.get(variable)}


# --- Writes ------------------------------------------------------------------------------------------

_CONNECTION_FIELDS = ["name", "bot_token_env", "signing_secret_env", "app_token_env"]


def connection_fields(spec: ConnectionSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "bot_token_env": spec.bot_token_env,
        "signing_secret_env": spec.signing_secret_env,
        "app_token_env": spec.app_token_env or "",
    }


def binding_fields(spec: BindingSpec) -> dict[str, Any]:
    """The Binding row's values for a spec (its connection and channels aside)."""
    return {
        "name": spec.name,
        "agent_url": spec.agent.url,
        "dialect": spec.agent.dialect.value,
        "protocol_version": spec.agent.protocol_version.value,
        "agent_headers": dict(spec.agent.headers),
        "user_identity": spec.agent.user_identity.value,
        "kagent_controller": spec.agent.kagent.controller if spec.agent.kagent else "",
        "kagent_namespace": spec.agent.kagent.namespace if spec.agent.kagent else "",
        "kagent_name": spec.agent.kagent.name if spec.agent.kagent else "",
        "output": spec.output.value,
        "thread_replies": spec.chat.thread_replies.value,
        "acknowledgment_enabled": spec.chat.acknowledgment.enabled,
        "acknowledgment_emoji": spec.chat.acknowledgment.emoji,
        "progress": spec.chat.progress.value,
        "allow_mentions": spec.replies.allow_mentions.value,
        "max_messages": spec.replies.max_messages,
        "ask_user": spec.interactions.ask_user,
        "tool_approvals": spec.interactions.tool_approvals,
        "approver_groups": list(spec.interactions.approver_groups),
        "interaction_timeout": spec.interactions.timeout,
        "deny_reasons": spec.interactions.deny_reasons,
        "feedback": spec.feedback,
        "remind_before": spec.interactions.remind_before,
        "separate_approver": spec.interactions.separate_approver,
        "tool_rules": manifest.tool_rule_rows(spec.interactions.tools),
        "thread_ttl": spec.session.thread_ttl,
        "triggers": trigger_rows(spec.triggers),
        "direct_messages": direct_messages_row(spec.direct_messages),
        "daily_token_budget": spec.budget.daily_tokens_per_channel,
    }


@transaction.atomic
def save_connection(spec: ConnectionSpec, connection: Connection | None = None) -> Connection:
    """Write a validated spec to ``connection`` (a new row when None). Runtime fields are left alone."""
    connection = connection if connection is not None else Connection()
    for name, value in connection_fields(spec).items():
        setattr(connection, name, value)
    if connection.pk is None:
        connection.save()
    else:
        connection.save(update_fields=[*_CONNECTION_FIELDS, "updated_at"])
    return connection


@transaction.atomic
def save_binding(
    spec: BindingSpec, binding: Binding | None = None, *, actor: str = "", may_change_agent: bool = True
) -> Binding:
    """Write a validated spec to ``binding`` (a new row when None), channels included.

    Audited with who made the change (``actor``: ``admin:<user>``, or ``apply:<operating-system
    user>``): a change of where its turns go (the agent's address, kagent agent, dialect or headers,
    ``bindings.agent_route``), which decides where the Binding's service identity is sent; and each
    approval rule that changes, with its old and new value. Without ``may_change_agent`` such a
    change raises ``AgentChangeRefused`` and nothing is written.
    """
    before = binding_spec(binding) if binding is not None and binding.pk else None
    if not may_change_agent and agent_route.refusals(before, spec):
        raise agent_route.AgentChangeRefused(agent_route.REFUSED)
    _audit_approval_rules(before, spec, actor)
    if agent_route.route_changes(before, spec):
        audit.record(
            "binding.agent_changed",
            binding_name=spec.name,
            actor_id=actor,
            actor_kind=_actor_kind(actor),
            subject=f"binding:{spec.name}",
            details=agent_route.audit_details(before, spec),
        )
    binding = binding if binding is not None else Binding()
    values = binding_fields(spec)
    for name, value in values.items():
        setattr(binding, name, value)
    binding.connection = Connection.objects.get(name=spec.connection)
    if binding.pk is None:
        binding.save()
    else:
        binding.save(update_fields=[*values, "connection", "updated_at"])
    _release_channels(binding, spec.channels)
    held = set(binding.channels.values_list("channel_id", flat=True))
    BindingChannel.objects.bulk_create(
        BindingChannel(binding=binding, connection_id=binding.connection_id, channel_id=channel)
        for channel in spec.channels
        if channel not in held
    )
    return binding


APPROVAL_RULE_CHANGED = "binding.approval_rule_changed"


def _audit_approval_rules(before: BindingSpec | None, after: BindingSpec, actor: str) -> None:
    """One row per approval rule whose value changes; a new Binding's rules change from None, and a
    rule its manifest leaves out when unset changes to or from None."""
    old = manifest.approval_rules(before) if before is not None else {}
    new = manifest.approval_rules(after)
    for name in manifest.APPROVAL_RULE_FIELDS:
        if (name in old or name in new) and (before is None or old.get(name) != new.get(name)):
            audit.record(
                APPROVAL_RULE_CHANGED,
                binding_name=after.name,
                actor_id=actor,
                actor_kind=_actor_kind(actor),
                subject=f"binding:{after.name}",
                details={"field": f"spec.interactions.{name}", "old": old.get(name), "new": new.get(name)},
            )


def _release_channels(binding: Binding, keep: Sequence[str]) -> None:
    """Delete the Binding's channels that ``keep`` drops, or that belong to another Connection."""
    binding.channels.exclude(connection_id=binding.connection_id, channel_id__in=list(keep)).delete()


# --- Manifests ---------------------------------------------------------------------------------------


def apply_manifests(
    text: str | Sequence[Document], dry_run: bool = False, *, actor: str | None = None
) -> ApplyResult:
    """Apply manifests (YAML text, or documents already parsed): all of them, or nothing. ``actor``:
    who the audit names (``apply:<login>``, the operating-system user, unless told).

    Everything is validated first; a single refusal means nothing is written. Connections are
    written before Bindings. A resource that the input leaves as it is is reported unchanged and not
    written, so applying the same input twice changes nothing. Resources the input does not name are
    left alone (there is no pruning).
    """
    if isinstance(text, str):
        documents, errors = manifest.parse_documents(text)
        if errors:
            return ApplyResult(dry_run=dry_run, errors=errors)
    else:
        documents = list(text)
    if not documents:
        return ApplyResult(dry_run=dry_run, errors=[Problem("input", "", "there are no manifests to apply")])

    # The controllers of kagent agents by name are asked before the transaction: no row is held while
    # the network answers. What they said is put into the validation made inside it.
    found = refuse_unfit_secret_variables(
        refuse_unlisted_header_variables(manifest.validate(documents, **existing_state()))
    )
    if found.ok:
        find_kagent_agents(found)
    if not found.ok:
        return ApplyResult(dry_run=dry_run, errors=found.errors, warnings=found.warnings)
    # Warned of, not refused: with --dry-run too, before anything is written.
    warnings = operator_warnings(found)
    addresses = {spec.name: spec.agent for spec in found.bindings}
    try:
        with transaction.atomic():
            validation = refuse_unfit_secret_variables(
                refuse_unlisted_header_variables(manifest.validate(documents, **existing_state()))
            )
            validation.bindings = [
                replace(spec, agent=addresses[spec.name]) if spec.agent.needs_lookup else spec
                for spec in validation.bindings
            ]
            result = ApplyResult(
                dry_run=dry_run, errors=validation.errors, warnings=[*validation.warnings, *warnings]
            )
            if validation.ok:
                result.resources = _apply(validation, dry_run, actor or apply_actor())
    except IntegrityError as exc:
        message = (
            f"the database refused the change, perhaps because of another change made at the same time: {exc}"
        )
        return ApplyResult(dry_run=dry_run, errors=[Problem("input", "", f"{message}; nothing was written")])
    return result


def _apply(validation: Validation, dry_run: bool, actor: str) -> list[Applied]:
    resources = []
    connections = Connection.objects.in_bulk(
        [spec.name for spec in validation.connections], field_name="name"
    )
    connection_plan = []
    for conn_spec in validation.connections:
        existing = connections.get(conn_spec.name)
        applied = _applied("Connection", conn_spec, connection_spec(existing) if existing else None, dry_run)
        resources.append(applied)
        connection_plan.append((conn_spec, existing, applied))

    bindings = {
        binding.name: binding
        for binding in Binding.objects.select_related("connection")
        .prefetch_related("channels")
        .filter(name__in=[spec.name for spec in validation.bindings])
    }
    binding_plan = []
    for spec in validation.bindings:
        existing_binding = bindings.get(spec.name)
        applied = _applied(
            "Binding", spec, binding_spec(existing_binding) if existing_binding else None, dry_run
        )
        resources.append(applied)
        binding_plan.append((spec, existing_binding, applied))

    if dry_run:
        return resources
    for conn_spec, existing, applied in connection_plan:
        if applied.action != Action.UNCHANGED:
            save_connection(conn_spec, existing)
    # A channel may move between two Bindings of this input: free every channel given up first.
    for spec, existing_binding, applied in binding_plan:
        if existing_binding is not None and applied.action != Action.UNCHANGED:
            existing_binding.connection = Connection.objects.get(name=spec.connection)
            _release_channels(existing_binding, spec.channels)
    for spec, existing_binding, applied in binding_plan:
        if applied.action != Action.UNCHANGED:
            save_binding(spec, existing_binding, actor=actor)
    return resources


def _actor_kind(actor: str) -> str | None:
    """The audit's kind of actor for a change: a Django user in the admin (``admin:<user>``), an
    operator running apply (``apply:<login>``); None lets the audit decide (a Slack user, or the system)."""
    if actor.startswith("admin:"):
        return audit.DJANGO_USER
    if actor.startswith("apply:"):
        return audit.OPERATOR
    return None


def apply_actor() -> str:
    """Who applies, for the audit: the operating-system user running ``manage.py apply``."""
    return f"apply:{audit.operating_system_user()}"


def _applied(
    kind: str,
    spec: ConnectionSpec | BindingSpec,
    existing: ConnectionSpec | BindingSpec | None,
    dry_run: bool,
) -> Applied:
    found = describe_agent(spec.agent) if isinstance(spec, BindingSpec) and spec.agent.kagent else ""
    if existing is None:
        return Applied(kind, spec.name, Action.CREATED, dry_run=dry_run, found=found)
    if existing == spec:
        return Applied(kind, spec.name, Action.UNCHANGED, dry_run=dry_run, found=found)
    changes = tuple(manifest.changed_fields(existing, spec))
    return Applied(kind, spec.name, Action.CONFIGURED, changes, dry_run=dry_run, found=found)


def export_manifests() -> str:
    """Every Connection, then every Binding, as manifests that ``apply_manifests`` takes back unchanged."""
    specs: list[ConnectionSpec | BindingSpec] = [
        connection_spec(c) for c in Connection.objects.order_by("name")
    ]
    bindings = Binding.objects.select_related("connection").prefetch_related("channels").order_by("name")
    specs.extend(binding_spec(binding) for binding in bindings)
    return manifest.dump_manifests(specs) if specs else ""


# What this process last wrote for each Connection: ingress calls note_slack_identity for every event,
# and the identity changes only when a Connection's token does.
_identities_noted: dict[int, tuple[str, str]] = {}


def note_slack_identity(connection_id: int, *, team_id: str, bot_user_id: str) -> None:
    """Keeps the workspace and bot user that Slack's auth.test named for a Connection's token."""
    if not (team_id and bot_user_id) or _identities_noted.get(connection_id) == (team_id, bot_user_id):
        return
    Connection.objects.filter(pk=connection_id).exclude(team_id=team_id, bot_user_id=bot_user_id).update(
        team_id=team_id, bot_user_id=bot_user_id
    )
    _identities_noted[connection_id] = (team_id, bot_user_id)


@dataclass(frozen=True)
class TokenTest:
    """What Slack said of a Connection's bot token: its workspace and bot user, or why not."""

    ok: bool
    team: str = ""
    team_id: str = ""
    bot_user_id: str = ""
    error: str = ""

    def __str__(self) -> str:
        if self.ok:
            return (
                f"The bot token works: workspace {self.team} ({self.team_id}), bot user {self.bot_user_id}."
            )
        return f"The bot token does not work: {self.error}."


def try_bot_token(connection: Connection, *, actor: str = "") -> TokenTest:
    """Asks Slack (``auth.test``) whom the Connection's bot token belongs to, keeps the workspace and
    bot user it names, and audits the test with its outcome (never the token)."""
    try:
        identity = async_to_sync(token_identity)(
            connection.bot_token(), workspace=connection_workspace(connection.pk)
        )
    except MissingSecret as exc:
        tested = TokenTest(ok=False, error=f"{exc.variable} is not set in this process")
    except SlackError as exc:
        tested = TokenTest(ok=False, error=f"Slack answered {error_name(exc) or call_outcome(exc)}")
    else:
        tested = TokenTest(True, identity.team, identity.team_id, identity.bot_user_id)
        note_slack_identity(connection.pk, team_id=identity.team_id, bot_user_id=identity.bot_user_id)
    audit.record(
        "connection.token_tested",
        actor_id=actor,
        actor_kind=_actor_kind(actor),
        subject=connection.subject,
        details={"ok": tested.ok, "team_id": tested.team_id, "error": tested.error},
    )
    return tested


def forget_noted_identities() -> None:
    """Makes the next note_slack_identity of each Connection write (for tests; a restart does the same)."""
    _identities_noted.clear()
