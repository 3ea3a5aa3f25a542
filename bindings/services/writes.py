"""Writing Connections and Bindings: every write goes through ``save_connection`` / ``save_binding``
after ``bindings.manifest.validate`` has accepted the spec, and a Binding's changes are audited."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from audit import services as audit
from bindings import agent_route, manifest
from bindings.manifest import BindingSpec, ConnectionSpec, audited_rules
from bindings.models import Binding, BindingChannel, Connection, direct_messages_row, trigger_rows
from bindings.services.actors import actor_kind
from bindings.services.row_specs import binding_spec

_CONNECTION_FIELDS = [
    "name",
    "bot_token_env",
    "signing_secret_env",
    "app_token_env",
    "slash_command",
    "agent_sessions",
]


def connection_fields(spec: ConnectionSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "bot_token_env": spec.bot_token_env,
        "signing_secret_env": spec.signing_secret_env,
        "app_token_env": spec.app_token_env or "",
        "slash_command": spec.slash_command,
        "agent_sessions": spec.agent_sessions,
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
        "thread_context_enabled": spec.chat.thread_context.enabled,
        "thread_context_max_messages": spec.chat.thread_context.max_messages,
        "thread_context_max_characters": spec.chat.thread_context.max_characters,
        "files_types": list(spec.chat.files.types),
        "files_max_file_bytes": spec.chat.files.max_file_bytes,
        "files_max_turn_bytes": spec.chat.files.max_turn_bytes,
        "files_max_out": spec.chat.files.max_files_out,
        "files_from_urls": list(spec.chat.files.from_urls),
        "allow_mentions": spec.replies.allow_mentions.value,
        "max_messages": spec.replies.max_messages,
        "ask_user": spec.interactions.ask_user,
        "tool_approvals": spec.interactions.tool_approvals,
        "approver_groups": list(spec.interactions.approver_groups),
        "interaction_timeout": spec.interactions.timeout,
        "deny_reasons": spec.interactions.deny_reasons,
        "feedback": spec.feedback,
        "stop_by": spec.stop_by.value,
        "remind_before": spec.interactions.remind_before,
        "separate_approver": spec.interactions.separate_approver,
        "tool_rules": manifest.tool_rule_rows(spec.interactions.tools),
        "allow_for_thread": spec.interactions.allow_for_thread,
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
            actor_kind=actor_kind(actor),
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
    release_channels(binding, spec.channels)
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
    old = audited_rules.approval_rules(before) if before is not None else {}
    new = audited_rules.approval_rules(after)
    for name in audited_rules.APPROVAL_RULE_FIELDS:
        if (name in old or name in new) and (before is None or old.get(name) != new.get(name)):
            audit.record(
                APPROVAL_RULE_CHANGED,
                binding_name=after.name,
                actor_id=actor,
                actor_kind=actor_kind(actor),
                subject=f"binding:{after.name}",
                details={"field": f"spec.interactions.{name}", "old": old.get(name), "new": new.get(name)},
            )


def release_channels(binding: Binding, keep: Sequence[str]) -> None:
    """Delete the Binding's channels that ``keep`` drops, or that belong to another Connection."""
    binding.channels.exclude(connection_id=binding.connection_id, channel_id__in=list(keep)).delete()
