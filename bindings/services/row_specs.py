"""The spec a Connection's or a Binding's row holds: what export writes, apply compares a manifest
with, and the admin's forms start from."""

from __future__ import annotations

from bindings import manifest
from bindings.manifest import BindingSpec, ConnectionSpec
from bindings.models import Binding, Connection, trigger_specs


def connection_spec(connection: Connection) -> ConnectionSpec:
    return ConnectionSpec(
        name=connection.name,
        bot_token_env=connection.bot_token_env,
        signing_secret_env=connection.signing_secret_env,
        app_token_env=connection.app_token_env or None,
        slash_command=connection.slash_command,
        agent_sessions=connection.agent_sessions,
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
            thread_context=manifest.ThreadContextSpec(
                enabled=binding.thread_context_enabled,
                max_messages=binding.thread_context_max_messages,
                max_characters=binding.thread_context_max_characters,
            ),
            files=binding.files_spec(),
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
            allow_for_thread=binding.allow_for_thread,
        ),
        session=manifest.SessionSpec(thread_ttl=binding.thread_ttl),
        triggers=trigger_specs(binding.triggers),
        replies=manifest.RepliesSpec(
            allow_mentions=manifest.Mentions(binding.allow_mentions), max_messages=binding.max_messages
        ),
        budget=manifest.BudgetSpec(daily_tokens_per_channel=binding.daily_token_budget),
        feedback=binding.feedback,
        stop_by=manifest.StopBy(binding.stop_by),
        direct_messages=binding.direct_messages_spec(),
    )
