"""A secret reference: where a Connection's token, a trigger's token or an agent header's value is
found. ``{fromEnv: NAME}`` reads an environment variable; ``{fromFile: /path}`` reads a file, such as
a mounted Kubernetes Secret or one a Vault agent writes (issue 34, point 3). Pure: no I/O.

A reference is kept as one string (the spec's ``*_env`` fields, the rows' columns): a variable's name,
or an absolute path, which no variable name can be (a name never holds "/").
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

FROM_ENV = "fromEnv"
FROM_FILE = "fromFile"
SOURCES = (FROM_ENV, FROM_FILE)


def is_file(reference: str) -> bool:
    """Whether the reference names a file (an absolute path) rather than a variable."""
    return reference.startswith("/")


def source(reference: str) -> str:
    """The manifest key the reference is written under: ``fromEnv`` or ``fromFile``."""
    return FROM_FILE if is_file(reference) else FROM_ENV


def as_manifest(reference: str) -> dict[str, str]:
    """``{fromEnv: NAME}`` or ``{fromFile: /path}``."""
    return {source(reference): reference}


def file_path_problem(path: str) -> str | None:
    """Why ``path`` is not a secret file's path a manifest may name, or None."""
    if not path.startswith("/"):
        return "must be an absolute path such as /var/run/secrets/kourier/bot-token"
    if "\x00" in path or posixpath.normpath(path) != path or path.endswith("/"):
        return "must be a plain absolute path to a file: no '..', '.', '//' or trailing '/'"
    return None


def within(path: str, directories: Sequence[str]) -> bool:
    """Whether ``path`` lies inside one of ``directories`` (not the directory itself)."""
    return any(path.startswith(directory.rstrip("/") + "/") for directory in directories)
