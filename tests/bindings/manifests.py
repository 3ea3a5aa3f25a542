"""Manifests the binding tests share: the issue's example, ways to vary one field of it, and manifests that
set every field (``every_field``, checked by ``unset_fields``)."""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Iterable
from typing import Any

import yaml

from bindings import manifest

EXAMPLE = """\
apiVersion: kourier/v1
kind: Connection
metadata: {name: acme}
spec:
  botToken: {fromEnv: SLACK_BOT_TOKEN}
  signingSecret: {fromEnv: SLACK_SIGNING_SECRET}
  appToken: {fromEnv: SLACK_APP_TOKEN}      # optional: Socket Mode
---
apiVersion: kourier/v1
kind: Binding
metadata: {name: ops}
spec:
  connection: acme
  channels: [C0123456789]
  agent:
    url: http://127.0.0.1:8083/
    dialect: kagent-v1                       # kagent-v1 | a2a
    protocolVersion: auto                    # auto (from the agent card) | "1.0" | "0.3"
    headers: {Authorization: {fromEnv: OPS_AGENT_TOKEN}}   # optional; the Binding's service identity
  output: live                               # live | final
  chat:
    threadReplies: all                       # all | mention
    acknowledgment: {enabled: true, emoji: hourglass_flowing_sand}
    progress: steps-and-activity             # steps | steps-and-activity | activity
  interactions: {askUser: false, toolApprovals: false, approverGroups: [], timeout: 30m}
  session: {threadTTL: 90d}
"""

CONNECTION = {
    "apiVersion": "kourier/v1",
    "kind": "Connection",
    "metadata": {"name": "acme"},
    "spec": {
        "botToken": {"fromEnv": "SLACK_BOT_TOKEN"},
        "signingSecret": {"fromEnv": "SLACK_SIGNING_SECRET"},
    },
}

MINIMAL_BINDING = {
    "apiVersion": "kourier/v1",
    "kind": "Binding",
    "metadata": {"name": "ops"},
    "spec": {"connection": "acme", "channels": ["C0123456789"], "agent": {"url": "http://127.0.0.1:8083/"}},
}

_DELETE = object()


def varied(document: dict[str, Any], path: str, value: Any = _DELETE) -> dict[str, Any]:
    """A copy of ``document`` with the field at a dotted ``path`` set to ``value`` (or removed)."""
    result = copy.deepcopy(document)
    *parents, last = path.split(".")
    node = result
    for key in parents:
        node = node.setdefault(key, {})
    if value is _DELETE:
        node.pop(last, None)
    else:
        node[last] = value
    return result


def binding(**fields: Any) -> dict[str, Any]:
    """The minimal Binding with spec fields set: ``binding(**{"interactions.timeout": "1h"})``."""
    document = MINIMAL_BINDING
    for path, value in fields.items():
        document = varied(document, f"spec.{path}", value)
    return document


def documents(*data: dict[str, Any]) -> list[manifest.Document]:
    return [manifest.Document(data=item, source="test.yaml", index=i) for i, item in enumerate(data, start=1)]


def errors_of(*data: dict[str, Any], **context: Any) -> list[str]:
    """The refusals of validating these documents (the acme Connection exists unless told otherwise)."""
    context.setdefault("connections", ["acme"])
    return [str(error) for error in manifest.validate(documents(*data), **context).errors]


def as_yaml(*data: dict[str, Any]) -> str:
    return yaml.safe_dump_all(data, sort_keys=False)


def every_field(
    *, agent_url: str = "https://ops-agent.example/", controller: str = "http://kagent.example:8083"
) -> list[dict[str, Any]]:
    """A Connection and two Bindings that set every field of their specs to other than its default,
    between them (a Binding takes channels or direct messages, an agent by URL or by name), written
    as ``manage.py export`` writes them. ``unset_fields`` says which field they leave out: a field
    added to a spec must be set here too."""
    connection = {
        "apiVersion": "kourier/v1",
        "kind": "Connection",
        "metadata": {"name": "acme"},
        "spec": {
            "botToken": {"fromEnv": "ACME_BOT_TOKEN"},
            "signingSecret": {"fromEnv": "ACME_SIGNING_SECRET"},
            "appToken": {"fromEnv": "ACME_APP_TOKEN"},
            "slashCommand": "/ask-acme",
            "agentSessions": True,
        },
    }
    in_channels = {
        "apiVersion": "kourier/v1",
        "kind": "Binding",
        "metadata": {"name": "ops"},
        "spec": {
            "connection": "acme",
            "channels": ["C0000000001", "C0000000002"],
            "agent": {
                "url": agent_url,
                "dialect": "kagent-v1",
                "protocolVersion": "1.0",
                "headers": {
                    "Authorization": {"fromEnv": "OPS_AGENT_TOKEN"},
                    "X-Tenant": {"fromEnv": "TRIAGE_TENANT"},
                },
                "userIdentity": "email",
            },
            "output": "final",
            "chat": {
                "threadReplies": "mention",
                "acknowledgment": {"enabled": False, "emoji": "eyes"},
                "progress": "activity",
                "threadContext": {"enabled": False, "maxMessages": 20, "maxCharacters": 4000},
                "files": {
                    "types": ["image/png", "text/*"],
                    "maxFileBytes": 2_000_000,
                    "maxTurnBytes": 3_000_000,
                    "maxFilesOut": 2,
                    "fromUrls": ["https://files.example.com/"],
                },
            },
            "interactions": {
                "askUser": True,
                "toolApprovals": True,
                "approverGroups": ["S0000000002", "S0000000001"],
                "timeout": "1h30m",
                "separateApprover": True,
                "tools": [
                    {
                        "match": "db_*",
                        "approverGroups": ["S0000000003"],
                        "separateApprover": False,
                        "unattended": "deny",
                    }
                ],
                "denyReasons": True,
                "remindBefore": "10m",
                "allowForThread": True,
            },
            "session": {"threadTTL": "7d"},
            "triggers": [
                {
                    "name": "prometheus",
                    "kind": "alertmanager",
                    "token": {"fromEnv": "OPS_TRIGGER_TOKEN"},
                    "channel": "C0000000002",
                    "threadPer": "alert",
                    "maxThreadsPerHour": 5,
                },
                {
                    "name": "hooks",
                    "kind": "generic",
                    "token": {"fromEnv": "HOOKS_TOKEN"},
                    "channel": "C0000000001",
                },
            ],
            "replies": {"allowMentions": "users", "maxMessages": 3},
            "budget": {"dailyTokensPerChannel": 500000},
            "feedback": True,
            "stopBy": "requester",
        },
    }
    in_private = {
        "apiVersion": "kourier/v1",
        "kind": "Binding",
        "metadata": {"name": "desk"},
        "spec": {
            "connection": "acme",
            "directMessages": {
                "allowedUsers": ["U0000000001"],
                "allowedGroups": ["S0000000004"],
                "suggestedPrompts": [{"title": "Status", "message": "What is the status of the release?"}],
                "approvalsChannel": "C0000000003",
            },
            "agent": {
                "kagent": {"controller": controller, "namespace": "ops", "name": "k8s-agent"},
                "dialect": "kagent-v1",
                "userIdentity": "slack-user-id",
            },
            "output": "live",
            "chat": {
                "threadReplies": "all",
                "acknowledgment": {"enabled": True, "emoji": "hourglass_flowing_sand"},
                "progress": "steps-and-activity",
            },
            "interactions": {
                "askUser": False,
                "toolApprovals": False,
                "approverGroups": [],
                "timeout": "30m",
            },
            "session": {"threadTTL": "90d"},
            "triggers": [],
            "replies": {"allowMentions": "none", "maxMessages": 10},
        },
    }
    return [connection, in_channels, in_private]


def unset_fields(specs: Iterable[Any]) -> list[str]:
    """The fields of the specs' dataclasses, nested ones included (``BindingSpec.agent.kagent.name``), that
    no spec given sets to other than its default (a field without a default: to something). Read
    from the dataclasses themselves, so a field added to a spec is listed until a spec sets it."""
    specs = list(specs)
    set_paths: set[str] = set()
    for spec in specs:
        set_paths |= _set_fields(spec, f"{type(spec).__name__}.")
    every = set().union(*(_field_paths(type(spec), f"{type(spec).__name__}.") for spec in specs))
    return sorted(every - set_paths)


def _field_paths(cls: type, prefix: str = "") -> set[str]:
    paths = set()
    hints = typing.get_type_hints(cls)
    for item in dataclasses.fields(cls):
        path = f"{prefix}{item.name}"
        paths.add(path)
        for nested in _dataclasses_in(hints[item.name]):
            paths |= _field_paths(nested, f"{path}.")
    return paths


def _dataclasses_in(hint: Any) -> list[type]:
    """The dataclasses a field holds: itself, ``X | None``, ``tuple[X, ...]``."""
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return [hint]
    return [found for argument in typing.get_args(hint) for found in _dataclasses_in(argument)]


def _set_fields(value: Any, prefix: str = "") -> set[str]:
    found = set()
    for item in dataclasses.fields(value):
        path, field_value = f"{prefix}{item.name}", getattr(value, item.name)
        if item.default is not dataclasses.MISSING:
            is_set = field_value != item.default
        elif item.default_factory is not dataclasses.MISSING:
            is_set = field_value != item.default_factory()
        else:
            is_set = bool(field_value)  # required: set when it holds something
        if is_set:
            found.add(path)
        for part in field_value if isinstance(field_value, tuple) else (field_value,):
            if dataclasses.is_dataclass(part):
                found |= _set_fields(part, f"{path}.")
    return found
