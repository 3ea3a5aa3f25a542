"""Applying manifests (``manage.py apply``: all of them or nothing, idempotent) and exporting them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from django.db import IntegrityError, transaction

from bindings import manifest
from bindings.manifest import BindingSpec, ConnectionSpec, Document, ManifestWarning, Problem, Validation
from bindings.models import Binding, Connection
from bindings.services.actors import apply_actor
from bindings.services.agents import describe_agent, find_kagent_agents
from bindings.services.operator_warnings import operator_warnings
from bindings.services.row_specs import binding_spec, connection_spec
from bindings.services.validation import (
    existing_state,
    refuse_unfit_secret_variables,
    refuse_unlisted_header_variables,
)
from bindings.services.writes import release_channels, save_binding, save_connection


class Action(StrEnum):
    """What applying does to one resource."""

    CREATED = "created"
    CONFIGURED = "configured"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Applied:
    """What applying did (or, in a dry run, would do) to one resource, as kubectl reports it."""

    kind: str
    name: str
    action: Action
    changes: tuple[str, ...] = ()  # the manifest paths that a "configured" changes
    dry_run: bool = False
    found: str = ""  # for a kagent agent by name: which line serves it, and where

    def __str__(self) -> str:
        text = f"{self.kind.lower()}/{self.name} {self.action}"
        if self.dry_run:
            text += " (dry run)"
        if self.changes:
            text += ": " + ", ".join(self.changes)
        if self.found:
            text += f" [{self.found}]"
        return text


@dataclass
class ApplyResult:
    dry_run: bool = False
    resources: list[Applied] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    warnings: list[ManifestWarning] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def changed(self) -> bool:
        return any(applied.action != Action.UNCHANGED for applied in self.resources)

    def summary(self) -> str:
        if self.errors:
            count = len(self.errors)
            return f"Refused: {count} error{'s' if count != 1 else ''}; nothing was written."
        counts = dict.fromkeys(Action, 0)
        for applied in self.resources:
            counts[applied.action] += 1
        if self.dry_run:
            return (
                f"Dry run, nothing was written: {counts[Action.CREATED]} to create, "
                f"{counts[Action.CONFIGURED]} to configure, {counts[Action.UNCHANGED]} unchanged."
            )
        if not self.changed:
            return f"Nothing changed: {counts[Action.UNCHANGED]} unchanged."
        return f"Applied: {counts[Action.CREATED]} created, {counts[Action.CONFIGURED]} configured, {counts[Action.UNCHANGED]} unchanged."


def apply_manifests(
    text: str | Sequence[Document], dry_run: bool = False, *, actor: str | None = None
) -> ApplyResult:
    """Apply manifests (YAML text, or documents already parsed): all of them, or nothing. ``actor``:
    who the audit names (``apply:<login>``, the operating-system user, unless told).

    Everything is validated first; a single refusal means nothing is written. Connections are
    written before Bindings. A resource that the input leaves as it is is reported unchanged and not
    written, so applying the same input twice changes nothing. Resources the input does not name are
    left alone (there is no pruning).
    """
    if isinstance(text, str):
        documents, errors = manifest.parse_documents(text)
        if errors:
            return ApplyResult(dry_run=dry_run, errors=errors)
    else:
        documents = list(text)
    if not documents:
        return ApplyResult(dry_run=dry_run, errors=[Problem("input", "", "there are no manifests to apply")])

    # The controllers of kagent agents by name are asked before the transaction: no row is held while
    # the network answers. What they said is put into the validation made inside it.
    found = refuse_unfit_secret_variables(
        refuse_unlisted_header_variables(manifest.validate(documents, **existing_state()))
    )
    if found.ok:
        find_kagent_agents(found)
    if not found.ok:
        return ApplyResult(dry_run=dry_run, errors=found.errors, warnings=found.warnings)
    # Warned of, not refused: with --dry-run too, before anything is written.
    warnings = operator_warnings(found)
    addresses = {spec.name: spec.agent for spec in found.bindings}
    try:
        with transaction.atomic():
            validation = refuse_unfit_secret_variables(
                refuse_unlisted_header_variables(manifest.validate(documents, **existing_state()))
            )
            validation.bindings = [
                replace(spec, agent=addresses[spec.name]) if spec.agent.needs_lookup else spec
                for spec in validation.bindings
            ]
            result = ApplyResult(
                dry_run=dry_run, errors=validation.errors, warnings=[*validation.warnings, *warnings]
            )
            if validation.ok:
                result.resources = _apply(validation, dry_run, actor or apply_actor())
    except IntegrityError as exc:
        message = (
            f"the database refused the change, perhaps because of another change made at the same time: {exc}"
        )
        return ApplyResult(dry_run=dry_run, errors=[Problem("input", "", f"{message}; nothing was written")])
    return result


def _apply(validation: Validation, dry_run: bool, actor: str) -> list[Applied]:
    resources = []
    connections = Connection.objects.in_bulk(
        [spec.name for spec in validation.connections], field_name="name"
    )
    connection_plan = []
    for conn_spec in validation.connections:
        existing = connections.get(conn_spec.name)
        applied = _applied("Connection", conn_spec, connection_spec(existing) if existing else None, dry_run)
        resources.append(applied)
        connection_plan.append((conn_spec, existing, applied))

    bindings = {
        binding.name: binding
        for binding in Binding.objects.select_related("connection")
        .prefetch_related("channels")
        .filter(name__in=[spec.name for spec in validation.bindings])
    }
    binding_plan = []
    for spec in validation.bindings:
        existing_binding = bindings.get(spec.name)
        applied = _applied(
            "Binding", spec, binding_spec(existing_binding) if existing_binding else None, dry_run
        )
        resources.append(applied)
        binding_plan.append((spec, existing_binding, applied))

    if dry_run:
        return resources
    for conn_spec, existing, applied in connection_plan:
        if applied.action != Action.UNCHANGED:
            save_connection(conn_spec, existing)
    # A channel may move between two Bindings of this input: free every channel given up first.
    for spec, existing_binding, applied in binding_plan:
        if existing_binding is not None and applied.action != Action.UNCHANGED:
            existing_binding.connection = Connection.objects.get(name=spec.connection)
            release_channels(existing_binding, spec.channels)
    for spec, existing_binding, applied in binding_plan:
        if applied.action != Action.UNCHANGED:
            save_binding(spec, existing_binding, actor=actor)
    return resources


def _applied(
    kind: str,
    spec: ConnectionSpec | BindingSpec,
    existing: ConnectionSpec | BindingSpec | None,
    dry_run: bool,
) -> Applied:
    found = describe_agent(spec.agent) if isinstance(spec, BindingSpec) and spec.agent.kagent else ""
    if existing is None:
        return Applied(kind, spec.name, Action.CREATED, dry_run=dry_run, found=found)
    if existing == spec:
        return Applied(kind, spec.name, Action.UNCHANGED, dry_run=dry_run, found=found)
    changes = tuple(manifest.changed_fields(existing, spec))
    return Applied(kind, spec.name, Action.CONFIGURED, changes, dry_run=dry_run, found=found)


def export_manifests() -> str:
    """Every Connection, then every Binding, as manifests that ``apply_manifests`` takes back unchanged."""
    specs: list[ConnectionSpec | BindingSpec] = [
        connection_spec(c) for c in Connection.objects.order_by("name")
    ]
    bindings = Binding.objects.select_related("connection").prefetch_related("channels").order_by("name")
    specs.extend(binding_spec(binding) for binding in bindings)
    return manifest.dump_manifests(specs) if specs else ""
