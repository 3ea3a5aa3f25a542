"""The kagent runtimes' cache: built once per line and lock file, never taken half-built, one build at a time.

The real build steps (venv, pip, the server's import check) are replaced by one quick command that
records each build; the kagent tests themselves use the real ones.
"""

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.kagent_runtime import build
from tests.support.kagent_runtime.lines import KAGENT_0_10, KAGENT_1_0

LINE = KAGENT_1_0


@pytest.fixture
def builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache; each build appends a line to the returned file."""
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path / "cache"))
    log = tmp_path / "builds.log"

    def quick_steps(line, target: Path) -> list[tuple[list[str], float]]:
        record = f"import pathlib; pathlib.Path({str(target / 'bin')!r}).mkdir(parents=True); "
        record += f"open({str(log)!r}, 'a').write('built\\n')"
        return [([sys.executable, "-c", record], 60)]

    monkeypatch.setattr(build, "build_steps", quick_steps)
    return log


def times_built(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_runtime_is_built_once_then_reused(builds: Path):
    first = build.runtime_python(LINE)
    second = build.runtime_python(LINE)

    assert first == second == build.runtime_dir(LINE) / "bin" / "python"
    assert times_built(builds) == 1
    assert build.runtime_dir(LINE).name.startswith("kagent-runtime-")


def test_a_build_that_died_before_its_marker_is_built_again(builds: Path):
    half_built = build.runtime_dir(LINE)
    (half_built / "lib").mkdir(parents=True)
    (half_built / "lib" / "leftover").write_text("from the build that died")

    build.runtime_python(LINE)

    assert times_built(builds) == 1
    assert not (half_built / "lib" / "leftover").exists()
    assert (half_built / build.DONE_MARKER).exists()


def test_a_failed_step_fails_the_build_and_the_next_run_builds_again(
    builds: Path, monkeypatch: pytest.MonkeyPatch
):
    working_steps = build.build_steps

    def failing_steps(line, target: Path) -> list[tuple[list[str], float]]:
        return [([sys.executable, "-c", "print('no matching distribution'); raise SystemExit(3)"], 60)]

    monkeypatch.setattr(build, "build_steps", failing_steps)
    with pytest.raises(build.BuildFailed, match="no matching distribution"):
        build.runtime_python(LINE)
    assert not (build.runtime_dir(LINE) / build.DONE_MARKER).exists()

    monkeypatch.setattr(build, "build_steps", working_steps)
    build.runtime_python(LINE)
    assert times_built(builds) == 1


def test_two_builders_at_once_build_once(builds: Path):
    both_started = threading.Barrier(2)

    def builder() -> Path:
        both_started.wait(timeout=30)
        return build.runtime_python(LINE)

    with ThreadPoolExecutor(max_workers=2) as pool:
        pythons = list(pool.map(lambda _: builder(), range(2)))

    assert pythons[0] == pythons[1]
    assert times_built(builds) == 1


def test_each_line_has_a_runtime_of_its_own(builds: Path):
    newest = build.runtime_python(KAGENT_1_0)
    stable = build.runtime_python(KAGENT_0_10)

    assert newest != stable
    assert times_built(builds) == 2
    assert build.runtime_dir(KAGENT_0_10).name.startswith("kagent-runtime-0.10.4-")
    assert build.runtime_dir(KAGENT_1_0).name.startswith("kagent-runtime-1.0.0a17-")
