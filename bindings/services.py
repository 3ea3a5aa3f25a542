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
from bindings import manifest
from bindings.manifest import (
    BindingSpec,
    ConnectionSpec,
    Document,
    ManifestWarning,
    Problem,
    Validation,
)
from bindings.models import Binding, BindingChannel, Connection, trigger_rows, trigger_specs
from kourier.a2a.kagent_agents import KagentAgentNotFound, find_kagent_agent, line_of


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
            separate_approver=binding.separate_approver,
            tools=binding.tool_rule_specs(),
        ),
        session=manifest.SessionSpec(thread_ttl=binding.thread_ttl),
        triggers=trigger_specs(binding.triggers),
        replies=manifest.RepliesSpec(
            allow_mentions=manifest.Mentions(binding.allow_mentions), max_messages=binding.max_messages
        ),
        budget=manifest.BudgetSpec(daily_tokens_per_channel=binding.daily_token_budget),
    )


def binding_warnings(binding: Binding) -> list[ManifestWarning]:
    return manifest.binding_warnings(binding_spec(binding))


# --- Validation against the database -----------------------------------------------------------------


def existing_state(*, exclude_binding: int | None = None) -> dict[str, Any]:
    """What the validator needs to know of the database, as plain data (see ``manifest.validate``)."""
    channels = BindingChannel.objects.values_list("connection__name", "channel_id", "binding__name")
    if exclude_binding is not None:
        channels = channels.exclude(binding_id=exclude_binding)
    return {
        "connections": set(Connection.objects.values_list("name", flat=True)),
        "bound_channels": {(connection, channel): owner for connection, channel, owner in channels},
    }


# Never readable by an agent header, whatever AGENT_HEADER_VARIABLES says: the service's own secrets.
SERVICE_SECRET_VARIABLES = frozenset(
    {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "METRICS_TOKEN", "DJANGO_SUPERUSER_PASSWORD"}
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
    return manifest.validate([Document(data=document)])


def check_binding(document: Mapping[str, Any], *, binding: Binding | None = None) -> Validation:
    """Validate one Binding manifest (as a dict) the way ``apply`` would: the admin form's check.

    ``binding`` is the row being edited, whose own channels do not count as taken.
    """
    exclude = binding.pk if binding is not None and binding.pk else None
    validation = refuse_unlisted_header_variables(
        manifest.validate([Document(data=document)], **existing_state(exclude_binding=exclude))
    )
    if validation.ok:
        find_kagent_agents(validation)
    return validation


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
        "separate_approver": spec.interactions.separate_approver,
        "tool_rules": manifest.tool_rule_rows(spec.interactions.tools),
        "thread_ttl": spec.session.thread_ttl,
        "triggers": trigger_rows(spec.triggers),
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
def save_binding(spec: BindingSpec, binding: Binding | None = None, *, actor: str = "") -> Binding:
    """Write a validated spec to ``binding`` (a new row when None), channels included.

    A new agent address or new headers are audited with who made the change (``actor``: the admin
    user, or ``manage.py apply``): they decide where the Binding's service identity is sent.
    """
    before = binding_spec(binding) if binding is not None and binding.pk else None
    if before is None or (before.agent.url, before.agent.headers) != (spec.agent.url, spec.agent.headers):
        audit.record(
            "binding.agent_changed",
            binding_name=spec.name,
            actor_id=actor,
            subject=f"binding:{spec.name}",
            details={
                "url": spec.agent.url,
                "previous_url": before.agent.url if before else None,
                "header_variables": [variable for _, variable in spec.agent.headers],
            },
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


def _release_channels(binding: Binding, keep: Sequence[str]) -> None:
    """Delete the Binding's channels that ``keep`` drops, or that belong to another Connection."""
    binding.channels.exclude(connection_id=binding.connection_id, channel_id__in=list(keep)).delete()


# --- Manifests ---------------------------------------------------------------------------------------


def apply_manifests(text: str | Sequence[Document], dry_run: bool = False) -> ApplyResult:
    """Apply manifests (YAML text, or documents already parsed): all of them, or nothing.

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
    found = refuse_unlisted_header_variables(manifest.validate(documents, **existing_state()))
    if found.ok:
        find_kagent_agents(found)
    if not found.ok:
        return ApplyResult(dry_run=dry_run, errors=found.errors, warnings=found.warnings)
    addresses = {spec.name: spec.agent for spec in found.bindings}
    try:
        with transaction.atomic():
            validation = refuse_unlisted_header_variables(manifest.validate(documents, **existing_state()))
            validation.bindings = [
                replace(spec, agent=addresses[spec.name]) if spec.agent.needs_lookup else spec
                for spec in validation.bindings
            ]
            result = ApplyResult(dry_run=dry_run, errors=validation.errors, warnings=validation.warnings)
            if validation.ok:
                result.resources = _apply(validation, dry_run)
    except IntegrityError as exc:
        message = (
            f"the database refused the change, perhaps because of another change made at the same time: {exc}"
        )
        return ApplyResult(dry_run=dry_run, errors=[Problem("input", "", f"{message}; nothing was written")])
    return result


def _apply(validation: Validation, dry_run: bool) -> list[Applied]:
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
            save_binding(spec, existing_binding, actor="manage.py apply")
    return resources


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


def forget_noted_identities() -> None:
    """Makes the next note_slack_identity of each Connection write (for tests; a restart does the same)."""
    _identities_noted.clear()
