"""Reading ``spec.agent``: an agent by URL or a kagent agent by name, its dialect and A2A version, the
headers it is sent (each from an environment variable), and who a turn says it is for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .checker import MISSING, Checker, show, value_at
from .limits import HEADER_NAME_RE, KUBERNETES_NAME_RE, KUBERNETES_NAMESPACE_RE, URL_MAX_LENGTH
from .specs import (
    DEFAULT_DIALECT,
    DEFAULT_PROTOCOL_VERSION,
    DEFAULT_USER_IDENTITY,
    AgentSpec,
    Dialect,
    KagentRef,
    ProtocolVersion,
    UserIdentity,
    sort_headers,
)

AGENT_FIELDS = ("url", "kagent", "dialect", "protocolVersion", "headers", "userIdentity")
KAGENT_FIELDS = ("controller", "namespace", "name")


def dialect_of(spec: dict[str, Any]) -> Dialect | None:
    """The dialect of a Binding whose agent section has refusals, when the dialect itself is fine."""
    agent = value_at(spec, "agent")
    value = value_at(agent, "dialect") if isinstance(agent, dict) else MISSING
    if value is MISSING:
        return DEFAULT_DIALECT
    return Dialect(value) if isinstance(value, str) and value in set(Dialect) else None


def read_agent(check: Checker, value: Any) -> AgentSpec | None:
    if not check.required(value, "spec.agent"):
        return None
    agent = check.mapping(value, "spec.agent", AGENT_FIELDS)
    if agent is None:
        return None
    url_value = value_at(agent, "url")
    kagent_value = value_at(agent, "kagent")
    url = None
    kagent = None
    if url_value is not MISSING and kagent_value is not MISSING:
        check.error("spec.agent.kagent", "give either spec.agent.url or spec.agent.kagent, not both")
    elif kagent_value is not MISSING:
        kagent = _read_kagent(check, kagent_value)
    elif url_value is MISSING:
        check.error("spec.agent.url", "is required (or name a kagent agent with spec.agent.kagent)")
    else:
        url = _http_url(check, url_value, "spec.agent.url")
    dialect = check.choice(value_at(agent, "dialect"), "spec.agent.dialect", Dialect, DEFAULT_DIALECT)
    version_value = value_at(agent, "protocolVersion")
    if isinstance(version_value, float) and str(version_value) in {v.value for v in ProtocolVersion}:
        version_value = str(version_value)  # protocolVersion: 1.0 unquoted is a YAML number
    version = check.choice(
        version_value, "spec.agent.protocolVersion", ProtocolVersion, DEFAULT_PROTOCOL_VERSION
    )
    if kagent_value is not MISSING:
        # A kagent agent speaks kagent's dialect, in the A2A version its card offers.
        if value_at(agent, "dialect") is MISSING:
            dialect = Dialect.KAGENT_V1
        elif dialect is not Dialect.KAGENT_V1:
            check.error(
                "spec.agent.dialect",
                f"a kagent agent speaks {Dialect.KAGENT_V1.value} (got {show(dialect.value)})",
            )
        if version is not ProtocolVersion.AUTO:
            check.error(
                "spec.agent.protocolVersion",
                "is read from the agent card for a kagent agent: leave it out, or set it to auto "
                f"(got {show(version.value)})",
            )
    headers = _read_headers(check, value_at(agent, "headers"))
    user_identity = check.choice(
        value_at(agent, "userIdentity"), "spec.agent.userIdentity", UserIdentity, DEFAULT_USER_IDENTITY
    )
    if headers is None or (url is None and kagent is None):
        return None
    return AgentSpec(
        url=url or "",
        dialect=dialect,
        protocol_version=version,
        headers=headers,
        kagent=kagent,
        user_identity=user_identity,
    )


def _http_url(check: Checker, value: Any, path: str) -> str | None:
    url = check.string(value, path)
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > URL_MAX_LENGTH:
        check.error(
            path,
            f"must be an http:// or https:// URL of at most {URL_MAX_LENGTH} characters (got {show(url)})",
        )
        return None
    if "@" in parts.netloc or "?" in url or "#" in url:
        # Not echoed: a user:password@ or a ?token= is a secret written where no secret goes.
        check.error(
            path,
            "must be an address without credentials (user:password@), a query (?…) or a fragment (#…): "
            "a credential goes in spec.agent.headers, read from the environment",
        )
        return None
    return url


def _read_kagent(check: Checker, value: Any) -> KagentRef | None:
    path = "spec.agent.kagent"
    section = check.mapping(value, path, KAGENT_FIELDS)
    if section is None:
        return None
    found: dict[str, str | None] = {}
    for key in KAGENT_FIELDS:
        field_value = value_at(section, key)
        found[key] = None
        if check.required(field_value, f"{path}.{key}"):
            found[key] = (
                _http_url(check, field_value, f"{path}.{key}")
                if key == "controller"
                else check.string(field_value, f"{path}.{key}")
            )
    for key, pattern, what in (
        ("namespace", KUBERNETES_NAMESPACE_RE, "a Kubernetes namespace"),
        ("name", KUBERNETES_NAME_RE, "a Kubernetes name"),
    ):
        text = found[key]
        if text is not None and not pattern.fullmatch(text):
            check.error(
                f"{path}.{key}",
                f"must be {what}: lower-case letters, digits and hyphens (got {show(text)})",
            )
            found[key] = None
    controller, namespace, name = found["controller"], found["namespace"], found["name"]
    if controller is None or namespace is None or name is None:
        return None
    return KagentRef(controller=controller, namespace=namespace, name=name)


def _read_headers(check: Checker, value: Any) -> tuple[tuple[str, str], ...] | None:
    if value is MISSING:
        return ()
    if not isinstance(value, dict):
        check.error(
            "spec.agent.headers",
            f"must be a mapping of header names to {{fromEnv: NAME}} (got {show(value)})",
        )
        return None
    headers: dict[str, str] = {}
    seen: dict[str, str] = {}
    ok = True
    for header, ref in value.items():
        path = f"spec.agent.headers.{header}"
        if not isinstance(header, str) or not HEADER_NAME_RE.fullmatch(header):
            check.error(path, f"must be an HTTP header name (got {show(header)})")
            ok = False
            continue
        if header.lower() in seen:
            check.error(
                path, f'duplicate header: HTTP header names ignore case, and "{seen[header.lower()]}" is set'
            )
            ok = False
            continue
        seen[header.lower()] = header
        env = check.env_reference(ref, path)
        if env is None:
            ok = False
        else:
            headers[header] = env
    if not ok:
        return None
    return sort_headers(headers.items())


def header_variable_allowed(name: str, allowed: Sequence[str]) -> bool:
    """Whether an agent header may read variable ``name``: listed in ``allowed`` by its name, or by a
    prefix ending in "*" (AGENT_HEADER_VARIABLES)."""
    return any(name.startswith(entry[:-1]) if entry.endswith("*") else name == entry for entry in allowed)
