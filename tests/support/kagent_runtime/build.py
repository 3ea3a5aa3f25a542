"""Builds a kagent line's virtualenv once per lock file and hands out its python.

A runtime cannot share the product's environment (it pins another a2a-sdk line, google-adk and a
hundred more packages), so each line (lines.py) gets a virtualenv of its own, built from its lock file
in ``locks/`` with ``pip install --no-deps`` (see the lock files for why). A build takes minutes; it
is kept under the cache directory (``$KOURIER_KAGENT_CACHE``, else ``~/.cache/kourier``) in a folder
named by the line and a hash of its lock file and the interpreter, and reused until the lock changes.

A build is done only once it has been proven to start: the agent server imports everything it
serves with (``--check``), and only then is the completion marker written. A folder without the
marker is a build that died half-way; the next build removes it and starts again. Builders wait for
each other on a file lock, so two pytest-xdist workers (or two test runs) never build at once.

By hand: ``.venv/bin/python -m tests.support.kagent_runtime.build [LINE ...]`` builds (or finds) the
runtimes of the lines named (all by default) and prints their pythons.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.kagent_runtime.lines import LINES, RuntimeLine

CACHE_ENV = "KOURIER_KAGENT_CACHE"
DONE_MARKER = "kourier-build-complete"
VENV_TIMEOUT_SECONDS = 120
# A cold build downloads about 150 MB of wheels; beyond this, something is wrong with the network.
INSTALL_TIMEOUT_SECONDS = 900
# The first import of a fresh virtualenv compiles thousands of modules: minutes on a busy 2-core host.
CHECK_TIMEOUT_SECONDS = 600


class BuildFailed(RuntimeError):
    pass


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "kourier"


def runtime_dir(line: RuntimeLine) -> Path:
    """Where the line's runtime for its current lock file and this interpreter lives (built or not)."""
    key = hashlib.sha256()
    key.update(line.lock_file.read_bytes())
    key.update(f"python{sys.version_info.major}.{sys.version_info.minor}".encode())
    return cache_root() / f"kagent-runtime-{line.name}-{key.hexdigest()[:16]}"


def runtime_python(line: RuntimeLine) -> Path:
    """The python of a line's built runtime; builds it first when needed (minutes, once per lock file)."""
    target = runtime_dir(line)
    python = target / "bin" / "python"
    if (target / DONE_MARKER).exists():
        return python
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(target.with_name(target.name + ".lock")):
        if not (target / DONE_MARKER).exists():  # another builder may have finished while we waited
            _build(line, target)
    return python


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_steps(line: RuntimeLine, target: Path) -> list[tuple[list[str], float]]:
    """The commands that build the line's runtime in ``target``, each with its timeout in seconds."""
    python = str(target / "bin" / "python")
    return [
        ([sys.executable, "-m", "venv", str(target)], VENV_TIMEOUT_SECONDS),
        ([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
          "--only-binary", ":all:", "--requirement", str(line.lock_file)], INSTALL_TIMEOUT_SECONDS),
        ([python, str(line.agent_server), "--check"], CHECK_TIMEOUT_SECONDS),
    ]  # fmt: skip


def _build(line: RuntimeLine, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)  # a build that died before its marker
    log_path = target.with_name(target.name + ".build.log")
    started = time.monotonic()
    with open(log_path, "w") as log:
        for command, timeout in build_steps(line, target):
            log.write(f"$ {' '.join(command)}\n")
            log.flush()
            try:
                subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=timeout, check=True)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
                log.flush()
                tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-40:])
                raise BuildFailed(
                    f"building the {line} runtime failed ({error}); {log_path}:\n{tail}"
                ) from error
        took = f"built in {time.monotonic() - started:.0f} s\n"
        log.write(took)
    (target / DONE_MARKER).write_text(took)


if __name__ == "__main__":
    wanted = sys.argv[1:]
    for line in LINES:
        if wanted and line.name not in wanted:
            continue
        started = time.monotonic()
        python = runtime_python(line)
        print(f"{line}: {python} (ready after {time.monotonic() - started:.1f} s)")
