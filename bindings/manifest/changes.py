"""What applying changes in a resource: the manifest paths whose values differ between two specs."""

from __future__ import annotations

from typing import Any

from .checker import join_path
from .secret_refs import SOURCES
from .specs import BindingSpec, Spec
from .writing import manifest


def changed_fields(old: Spec, new: Spec) -> list[str]:
    """The manifest paths whose values differ between two specs of one resource, in manifest order.

    A kagent agent by name whose controller now serves it elsewhere (another line, another address)
    changes ``spec.agent.kagent``, though its manifest reads the same.
    """
    before, after = _flatten(manifest(old)), _flatten(manifest(new))
    for spec, flat in ((old, before), (new, after)):
        if isinstance(spec, BindingSpec) and spec.agent.kagent is not None:
            flat["spec.agent.kagent"] = (spec.agent.url, spec.agent.protocol_version.value)
    return [path for path in dict.fromkeys([*before, *after]) if before.get(path) != after.get(path)]


def _flatten(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value and not (len(value) == 1 and set(value) <= set(SOURCES)):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, join_path(path, key)))
        return flat
    if isinstance(value, list):
        return {path: tuple(value)}
    if isinstance(value, dict):
        return {path: tuple(value.items())}
    return {path: value}
