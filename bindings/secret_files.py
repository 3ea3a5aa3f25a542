"""Reading a secret from a file (``{fromFile: /path}``), again whenever the file changes.

Kubernetes rotates a mounted Secret by pointing the volume's ``..data`` link at a new directory, and a
Vault agent rewrites its file in place: either way the path's inode, size or modification time
changes. A file is read once and its value kept until one of those does, so each use costs a stat, and
a rotated bot token is used from the next call on, without a restart.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class _Read:
    identity: tuple[int, int, int, int]  # (device, inode, size, mtime in ns)
    value: str


_reads: dict[str, _Read] = {}
_lock = threading.Lock()


def read_secret_file(path: str) -> str:
    """The file's contents without surrounding whitespace (a trailing newline is usual); "" when the
    file is missing or unreadable, which the caller reports as not set."""
    try:
        stat = os.stat(path)
    except OSError:
        return ""
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    kept = _reads.get(path)
    if kept is not None and kept.identity == identity:
        return kept.value
    try:
        with open(path, encoding="utf-8") as file:
            value = file.read().strip()
    except (OSError, UnicodeDecodeError):
        return ""
    with _lock:
        _reads[path] = _Read(identity, value)
    return value
