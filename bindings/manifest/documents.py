"""YAML text into documents: the safe loader, refusing a key written twice, and where each document
came from (for the refusals of a document with no usable name)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from .problems import Problem


@dataclass(frozen=True)
class Document:
    """One YAML document, and where it came from (for the refusals of a document with no usable name)."""

    data: Any
    source: str = ""  # a file name, "<stdin>", or "" when it came from elsewhere (the admin)
    index: int = 0  # 1-based position in its source; 0 when it has no position

    @property
    def location(self) -> str:
        if not self.index:
            return ""
        return f"document {self.index} in {self.source}" if self.source else f"document {self.index}"


class _Loader(yaml.SafeLoader):
    """The safe loader, refusing a key written twice in one mapping (PyYAML keeps the last silently)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # keys merged in with << may be overridden on purpose
        key = loader.construct_object(key_node, deep=True)
        try:
            repeated = key in seen
        except TypeError:
            continue  # unhashable: construct_mapping refuses it with its own message
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {json.dumps(str(key))}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_documents(text: str, source: str = "") -> tuple[list[Document], list[Problem]]:
    """Split YAML text into documents (empty ones skipped), or say where the YAML is broken."""
    documents: list[Document] = []
    try:
        for index, data in enumerate(yaml.load_all(text, Loader=_Loader), start=1):
            if data is not None:
                documents.append(Document(data=data, source=source, index=index))
    except yaml.YAMLError as exc:
        where = source or "input"
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f"{where}: line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc)
        return documents, [Problem(where, "", f"not valid YAML: {problem}")]
    return documents, []
