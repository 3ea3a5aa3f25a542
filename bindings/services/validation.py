"""Validation against the database: what the manifest's validator is told of the rows, the refusals
only this process can make (agent headers reading its secrets), and the admin forms' checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from bindings import agent_route, manifest, secret_variables
from bindings.manifest import Document, Problem, Validation, secret_refs
from bindings.models import Binding, BindingChannel, Connection, secret_variables_elsewhere
from bindings.secret_variables import SERVICE_SECRET_VARIABLES
from bindings.services.agents import find_kagent_agents
from bindings.services.operator_warnings import operator_warnings, unset_variable_warnings
from bindings.services.row_specs import binding_spec


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
            why: str | None
            if variable in SERVICE_SECRET_VARIABLES or variable in connection_secrets:
                why = "is one of the service's own secrets, which no agent header may send"
            elif secret_refs.is_file(variable):
                why = secret_variables.why_unfit_header_file(variable)
                if why is None:
                    continue
            elif not manifest.header_variable_allowed(variable, settings.AGENT_HEADER_VARIABLES):
                why = "is not a variable agent headers may read: list it in AGENT_HEADER_VARIABLES"
            else:
                continue
            refused.add(spec.name)
            validation.errors.append(
                Problem(
                    manifest.subject_for("Binding", spec.name),
                    f"spec.agent.headers.{header}.{secret_refs.source(variable)}",
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
