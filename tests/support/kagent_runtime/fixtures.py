"""pytest fixtures for the real kagent runtimes (registered as a plugin by tests/conftest.py).

- ``kagent_line``: the kagent line a test runs against. Every test that starts a runtime runs once per
  line of lines.py (test ids ``[0.10.4]``, ``[1.0.0a17]``); ``-k 0.10.4`` runs one line.
- ``kagent_runtime_python`` (per line, once a session): the line's python, its virtualenv built on
  first use (minutes cold, then cached between runs; build.py).
- ``start_kagent_runtime(script, traces_to="")``: starts a runtime of the test's line whose model plays
  ``script`` (sending its own spans to an OTLP receiver's URL when given);
  every runtime a test started is stopped after it.

The timeout of a test that uses ``start_kagent_runtime`` covers the test body only (``func_only``): the
first build, in its set-up, is bounded by build.py's own timeouts instead. (Two xdist workers that
both need a runtime while it is being built wait for the one build.) The terminal summary says, per
line, whether the runtime was built by this run, and how long that took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.kagent_runtime.build import DONE_MARKER, runtime_dir, runtime_python
from tests.support.kagent_runtime.lines import LINES, RuntimeLine
from tests.support.kagent_runtime.runtime import KagentRuntime
from tests.support.kagent_runtime.script import Script

StartRuntime = Callable[..., KagentRuntime]

RUNTIME_FIXTURE = "start_kagent_runtime"
TEST_TIMEOUT_SECONDS = 120
_SUMMARY_KEY = "kagent_runtime"
_build_notes: list[str] = []
_pythons: dict[str, Path] = {}


@pytest.fixture(params=LINES, ids=[line.name for line in LINES])
def kagent_line(request: pytest.FixtureRequest) -> RuntimeLine:
    return request.param


@pytest.fixture
def kagent_runtime_python(kagent_line: RuntimeLine) -> Path:
    if kagent_line.name not in _pythons:
        target = runtime_dir(kagent_line)
        cached = (target / DONE_MARKER).exists()
        started = time.monotonic()
        _pythons[kagent_line.name] = runtime_python(kagent_line)
        if cached:
            _build_notes.append(f"{kagent_line} runtime: cached at {target}")
        else:
            took = time.monotonic() - started
            _build_notes.append(f"{kagent_line} runtime: ready in {took:.0f} s at {target}")
    return _pythons[kagent_line.name]


@pytest.fixture
def start_kagent_runtime(
    kagent_line: RuntimeLine, kagent_runtime_python: Path, tmp_path: Path
) -> Iterator[StartRuntime]:
    runtimes: list[KagentRuntime] = []

    def start(script: Script, *, traces_to: str = "") -> KagentRuntime:
        runtime = KagentRuntime(
            kagent_line, kagent_runtime_python, tmp_path / f"kagent-runtime-{len(runtimes)}"
        )
        runtimes.append(runtime)
        return runtime.start(script, traces_to=traces_to)

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
