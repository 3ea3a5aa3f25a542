"""Specs written back as manifests: every field, defaults included (the export is the whole
configuration, readable without the spec), in the one order and style ``apply`` takes back unchanged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from .durations import format_duration
from .secret_refs import as_manifest
from .specs import (
    API_VERSION,
    DEFAULT_MAX_THREADS_PER_HOUR,
    DEFAULT_SLASH_COMMAND,
    DEFAULT_THREAD_PER,
    DEFAULT_UNATTENDED,
    BindingSpec,
    ConnectionSpec,
    DirectMessagesSpec,
    FilesSpec,
    Kind,
    Spec,
    StopBy,
    ThreadContextSpec,
    ToolRule,
    TriggerKind,
    TriggerSpec,
    Unattended,
)


def connection_manifest(spec: ConnectionSpec) -> dict[str, Any]:
    body: dict[str, Any] = {
        "botToken": _secret(spec.bot_token_env),
        "signingSecret": _secret(spec.signing_secret_env),
    }
    if spec.app_token_env:
        body["appToken"] = _secret(spec.app_token_env)
    if spec.slash_command != DEFAULT_SLASH_COMMAND:  # beyond the spec: written only when set
        body["slashCommand"] = spec.slash_command
    if spec.agent_sessions:
        body["agentSessions"] = True
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
        agent["headers"] = {header: _secret(env) for header, env in spec.agent.headers}
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
                **_thread_context_manifest(spec.chat.thread_context),
                **_files_manifest(spec.chat.files),
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
                **({"allowForThread": True} if interactions.allow_for_thread else {}),
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
            **({"stopBy": spec.stop_by.value} if spec.stop_by is not StopBy.MEMBERS else {}),
        },
    }


def _thread_context_manifest(thread_context: ThreadContextSpec) -> dict[str, Any]:
    """Beyond the spec: written only when it differs from the default, so an export stays as it was."""
    if thread_context == ThreadContextSpec():
        return {}
    return {
        "threadContext": _Flow(
            enabled=thread_context.enabled,
            maxMessages=thread_context.max_messages,
            maxCharacters=thread_context.max_characters,
        )
    }


def _files_manifest(files: FilesSpec) -> dict[str, Any]:
    """Written only when it differs from the default, so an export stays as it was."""
    if files == FilesSpec():
        return {}
    return {
        "files": {
            "types": _FlowList(files.types),
            "maxFileBytes": files.max_file_bytes,
            "maxTurnBytes": files.max_turn_bytes,
            "maxFilesOut": files.max_files_out,
            **({"fromUrls": _FlowList(files.from_urls)} if files.from_urls else {}),
        }
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
        "token": _secret(trigger.token_env),
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


class _Flow(dict[str, Any]):
    """A mapping written inline: ``{fromEnv: SLACK_BOT_TOKEN}``."""

    def __init__(self, **items: Any) -> None:
        super().__init__(items)


def _secret(reference: str) -> _Flow:
    """``{fromEnv: NAME}`` or ``{fromFile: /path}``."""
    return _Flow(**as_manifest(reference))


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
