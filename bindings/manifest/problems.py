"""What validation produces: refusals, warnings, and the specs of the documents it accepted."""

from __future__ import annotations

from dataclasses import dataclass, field

from .specs import BindingSpec, ConnectionSpec


@dataclass(frozen=True)
class Problem:
    """A refusal: which resource, which field, and what is wrong."""

    subject: str  # Binding "ops", Connection "acme", or where the document is when it has no usable name
    path: str  # spec.interactions.approverGroups[2]; empty for a problem with the document as a whole
    message: str

    def __str__(self) -> str:
        return (
            f"{self.subject}: {self.path}: {self.message}" if self.path else f"{self.subject}: {self.message}"
        )


@dataclass(frozen=True)
class ManifestWarning:
    """Accepted, but the operator should know. ``message`` names the field itself."""

    subject: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.message}"


@dataclass
class Validation:
    """The outcome of validating some documents: the specs are usable only when ``errors`` is empty."""

    connections: list[ConnectionSpec] = field(default_factory=list)
    bindings: list[BindingSpec] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    warnings: list[ManifestWarning] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def subject_for(kind: str, name: str) -> str:
    return f'{kind} "{name}"'
