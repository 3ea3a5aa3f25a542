"""Reaching a Binding's agent from apply and the admin: kagent agents found by name on their
controller, how a Binding reaches its agent, and the headers a lookup sends."""

from __future__ import annotations

import os
from dataclasses import replace

from asgiref.sync import async_to_sync

from bindings import manifest
from bindings.manifest import Problem, Validation
from kourier.a2a.kagent_agents import KagentAgentNotFound, find_kagent_agent, line_of
from kourier.credentials import without_credentials


def describe_agent(agent: manifest.AgentSpec) -> str:
    """How a Binding reaches its agent, for the admin and ``apply``: the kagent line and address found
    for a kagent agent by name, else the URL."""
    if agent.kagent is None:
        return without_credentials(agent.url)  # shown to staff and in apply's output: never a password
    return without_credentials(
        f"kagent agent {agent.kagent}: {line_of(agent.protocol_version.value)} at {agent.url} (A2A {agent.protocol_version.value})"
    )


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
                kagent.controller, kagent.namespace, kagent.name, headers=lookup_headers(spec.agent)
            )
        except KagentAgentNotFound as exc:
            subject = manifest.subject_for(manifest.Kind.BINDING.value, spec.name)
            validation.errors.append(Problem(subject, "spec.agent.kagent", str(exc)))
            continue
        agent = replace(
            spec.agent, url=found.url, protocol_version=manifest.ProtocolVersion(found.protocol_version)
        )
        validation.bindings[index] = replace(spec, agent=agent)


def lookup_headers(agent: manifest.AgentSpec) -> dict[str, str]:
    """The Binding's headers whose variables are set here: a controller behind an auth proxy wants
    the Binding's credential for the card too."""
    return {header: os.environ[variable] for header, variable in agent.headers if os.environ.get(variable)}
