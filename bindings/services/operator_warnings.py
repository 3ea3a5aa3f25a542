"""What this process can tell the operator before it is too late: variables it does not have, agent
cards it cannot fetch; and what a Connection's or Binding's change page warns of."""

from __future__ import annotations

import os

from asgiref.sync import async_to_sync

from bindings import manifest
from bindings.manifest import ManifestWarning, Validation, secret_refs
from bindings.models import Binding, Connection
from bindings.secret_files import read_secret_file
from bindings.services.agents import lookup_headers
from bindings.services.row_specs import binding_spec, connection_spec
from kourier.a2a.factory import agent_card_problem


def unset_variable_warnings(validation: Validation) -> list[ManifestWarning]:
    """A warning per ``fromEnv`` whose variable is not set (or empty) in this process, and per
    ``fromFile`` whose file it cannot read: accepted, since the service's processes may have it (a
    Secret mounted in their pods only), but a process without it fails where it reads it."""
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
    warnings = []
    for subject, path, variable in named:
        if not secret_refs.is_file(variable) and not os.environ.get(variable):
            warnings.append(ManifestWarning(subject, path, f"{path}: {variable} is not set in this process"))
        elif secret_refs.is_file(variable) and not read_secret_file(variable):
            path = path.removesuffix(secret_refs.FROM_ENV) + secret_refs.FROM_FILE
            warnings.append(
                ManifestWarning(subject, path, f"{path}: {variable} is missing or empty in this process")
            )
    return warnings


def agent_card_warnings(validation: Validation) -> list[ManifestWarning]:
    """A warning per Binding whose agent card cannot be fetched now (network I/O, a few seconds at
    most each): accepted, since the agent may come up later, but its turns fail until it does. A
    kagent agent by name was found through its card already."""
    warnings = []
    for binding in validation.bindings:
        if binding.agent.kagent is not None or not binding.agent.url:
            continue
        problem = async_to_sync(agent_card_problem)(binding.agent.url, headers=lookup_headers(binding.agent))
        if problem is not None:
            subject = manifest.subject_for(manifest.Kind.BINDING.value, binding.name)
            message = f"spec.agent.url: the agent card cannot be fetched ({problem}); turns fail until it can"
            warnings.append(ManifestWarning(subject, "spec.agent.url", message))
    return warnings


def operator_warnings(validation: Validation) -> list[ManifestWarning]:
    return [*unset_variable_warnings(validation), *agent_card_warnings(validation)]


def binding_warnings(binding: Binding) -> list[ManifestWarning]:
    """What the Binding's change page warns of: the manifest's warnings and unset variables (no
    network: the agent card is fetched when the Binding is saved)."""
    spec = binding_spec(binding)
    return [*manifest.binding_warnings(spec), *unset_variable_warnings(Validation(bindings=[spec]))]


def connection_warnings(connection: Connection) -> list[ManifestWarning]:
    return unset_variable_warnings(Validation(connections=[connection_spec(connection)]))
