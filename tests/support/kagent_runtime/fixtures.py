"""pytest fixtures for the real kagent 1.0 runtime (registered as a plugin by tests/conftest.py).

- ``kagent_runtime_python`` (session): the runtime's python, its virtualenv built on first use (minutes
  cold, then cached between runs; build.py).
- ``start_kagent_runtime(script)``: starts a runtime whose model plays ``script``; every runtime a test
  started is stopped after it.

The timeout of a test that uses ``start_kagent_runtime`` covers the test body only (``func_only``): the
first build, in its set-up, is bounded by build.py's own timeouts instead. (Two xdist workers that
both need the runtime while it is being built wait for the one build.) The terminal summary
says whether the runtime was built by this run, and how long that took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.kagent_runtime.build import DONE_MARKER, runtime_dir, runtime_python
from tests.support.kagent_runtime.runtime import KagentRuntime
from tests.support.kagent_runtime.script import Script

StartRuntime = Callable[[Script], KagentRuntime]

RUNTIME_FIXTURE = "start_kagent_runtime"
TEST_TIMEOUT_SECONDS = 120
_SUMMARY_KEY = "kagent_runtime"
_build_notes: list[str] = []


@pytest.fixture(scope="session")
def kagent_runtime_python() -> Path:
    cached = (runtime_dir() / DONE_MARKER).exists()
    started = time.monotonic()
    python = runtime_python()
    if cached:
        _build_notes.append(f"kagent runtime: cached at {runtime_dir()}")
    else:
        _build_notes.append(f"kagent runtime: ready in {time.monotonic() - started:.0f} s at {runtime_dir()}")
    return python


@pytest.fixture
def start_kagent_runtime(kagent_runtime_python: Path, tmp_path: Path) -> Iterator[StartRuntime]:
    runtimes: list[KagentRuntime] = []

    def start(script: Script) -> KagentRuntime:
        runtime = KagentRuntime(kagent_runtime_python, tmp_path / f"kagent-runtime-{len(runtimes)}")
        runtimes.append(runtime)
        return runtime.start(script)

    yield start

    for runtime in runtimes:
        runtime.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if RUNTIME_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_SECONDS, func_only=True))


def pytest_sessionfinish(session: pytest.Session) -> None:
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None and _build_notes:
        worker_output[_SUMMARY_KEY] = _build_notes


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    _build_notes.extend(getattr(node, "workeroutput", {}).get(_SUMMARY_KEY, ()))


def pytest_terminal_summary(terminalreporter) -> None:
    for note in _build_notes:
        terminalreporter.write_line(note)
