"""Where a Binding's turns go: the fields that decide it, and who may change them.

A turn is sent to the agent's URL (or, for a kagent agent by name, to the address its controller
names), spoken in the Binding's dialect, with the Binding's headers: the service's identity toward
the agent, read from the environment. Whoever changes one of these chooses who receives every turn
and, through the headers, a credential; so only a superuser (in the admin) and the operator (``apply``)
may, and nothing is fetched with the headers' values before the change is allowed (issue 32, point 2).
"""

from __future__ import annotations

from typing import Any

from bindings import manifest
from bindings.manifest import AgentSpec, BindingSpec, Problem
from kourier.credentials import without_credentials

URL = "spec.agent.url"
KAGENT = "spec.agent.kagent"
DIALECT = "spec.agent.dialect"
HEADERS = "spec.agent.headers"
ROUTE_PATHS = (URL, KAGENT, DIALECT, HEADERS)

REFUSED = (
    "only a superuser may change where a Binding's turns go (the agent's URL, its kagent controller, "
    "namespace and name, its dialect and its headers)"
)
REFUSED_NEW = "only a superuser may add a Binding: its agent decides where turns go"


class AgentChangeRefused(Exception):
    """A change of where a Binding's turns go, by someone who may not make it."""


def route_of(agent: AgentSpec) -> dict[str, Any]:
    """The route as the manifest gives it: a kagent agent by name is its reference, whatever address
    its controller named when it was last found."""
    return {
        URL: "" if agent.kagent is not None else agent.url,
        KAGENT: agent.kagent,
        DIALECT: agent.dialect,
        HEADERS: agent.headers,
    }


def route_changes(before: BindingSpec | None, after: BindingSpec) -> list[str]:
    """The route's paths that ``after`` changes (every one for a new Binding)."""
    if before is None:
        return list(ROUTE_PATHS)
    old, new = route_of(before.agent), route_of(after.agent)
    return [path for path in ROUTE_PATHS if old[path] != new[path]]


def refusals(before: BindingSpec | None, after: BindingSpec) -> list[Problem]:
    """What a change by someone who may not change the route is refused with: one problem per
    changed field, or one for a new Binding; none when the route is as it was."""
    subject = manifest.subject_for(manifest.Kind.BINDING.value, after.name)
    if before is None:
        return [Problem(subject, URL, REFUSED_NEW)]
    return [Problem(subject, path, REFUSED) for path in route_changes(before, after)]


def audit_details(before: BindingSpec | None, after: BindingSpec) -> dict[str, Any]:
    """``binding.agent_changed``'s details: what changed, the route before and after (a header by
    its variable's name, never a value)."""

    def kagent(agent: AgentSpec) -> dict[str, str] | None:
        ref = agent.kagent
        return (
            None
            if ref is None
            else {
                "controller": without_credentials(ref.controller),
                "namespace": ref.namespace,
                "name": ref.name,
            }
        )

    return {
        "changed": route_changes(before, after),
        # Masked: a row stored before such URLs were refused may still hold a password.
        "url": without_credentials(after.agent.url),
        "previous_url": without_credentials(before.agent.url) if before else None,
        "kagent": kagent(after.agent),
        "previous_kagent": kagent(before.agent) if before else None,
        "dialect": after.agent.dialect.value,
        "previous_dialect": before.agent.dialect.value if before else None,
        "header_variables": [variable for _, variable in after.agent.headers],
        "previous_header_variables": [variable for _, variable in before.agent.headers] if before else None,
    }
