"""Manifests the binding tests share: the issue's example, and ways to vary one field of it."""

from __future__ import annotations

import copy
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
