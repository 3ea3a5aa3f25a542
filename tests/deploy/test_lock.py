"""requirements.lock (`make lock`) against pyproject.toml and the environment the tests run in: it pins
every runtime dependency within its range, everything they need is pinned too, and `make` installed
exactly it, so what the tests exercise is what the container image gets."""

import re
import tomllib
from collections import deque
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCK = REPO_ROOT / "requirements.lock"
RELOCK = "run `make lock` (and `make` to install it)"


@dataclass(frozen=True)
class Pin:
    version: str
    marker: Marker | None
    hashes: int

    def applies_here(self) -> bool:
        return self.marker is None or self.marker.evaluate()


def read_lock(text: str) -> dict[NormalizedName, Pin]:
    pins: dict[NormalizedName, Pin] = {}
    for entry in re.sub(r"\\\n", " ", text).splitlines():
        entry = entry.split(" #", 1)[0].strip()
        if not entry or entry.startswith("#"):
            continue
        requirement_text, *options = re.split(r"\s+(?=--)", entry)
        requirement = Requirement(requirement_text)
        [specifier] = requirement.specifier
        assert specifier.operator == "==", f"{requirement_text}: a lock pins one version"
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{name} is locked twice"
        pins[name] = Pin(specifier.version, requirement.marker, sum(o.startswith("--hash=") for o in options))
    return pins


LOCKED = read_lock(LOCK.read_text())
RUNTIME = [
    Requirement(text)
    for text in tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
]


def test_the_lock_is_read_as_pins_with_hashes():
    pins = read_lock(
        "# a comment\n"
        "django==5.2.8 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n    # via agent-kourier\n"
        "colorama==0.4.6 ; sys_platform == 'win32' \\\n    --hash=sha256:cc\n"
    )

    assert pins == {
        "django": Pin("5.2.8", None, 2),
        "colorama": Pin("0.4.6", Marker("sys_platform == 'win32'"), 1),
    }


def test_every_locked_file_has_its_hash():
    assert [name for name, pin in LOCKED.items() if pin.hashes == 0] == []


@pytest.mark.parametrize("dependency", RUNTIME, ids=str)
def test_each_runtime_dependency_is_locked_within_its_range(dependency):
    pin = LOCKED.get(canonicalize_name(dependency.name))

    assert pin is not None, f"{dependency.name} is not in requirements.lock: {RELOCK}"
    assert dependency.specifier.contains(pin.version, prereleases=True), (
        f"{dependency.name} {pin.version} is outside {dependency.specifier}: {RELOCK}"
    )


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_the_tests_run_on_exactly_the_locked_versions():
    differing = {
        name: {"locked": pin.version, "installed": installed_version(name)}
        for name, pin in LOCKED.items()
        if pin.applies_here() and installed_version(name) != pin.version
    }

    assert differing == {}, "run `make` to install the lock"


def test_everything_the_runtime_needs_here_is_locked_and_nothing_else():
    """Follows the installed packages' own requirements from pyproject's, with their extras."""
    needed: set[NormalizedName] = set()
    followed: set[tuple[NormalizedName, frozenset[str]]] = set()
    unlocked: list[str] = []
    queue = deque(RUNTIME)
    while queue:
        requirement = queue.popleft()
        name = canonicalize_name(requirement.name)
        pin = LOCKED.get(name)
        if pin is None or not requirement.specifier.contains(pin.version, prereleases=True):
            unlocked.append(str(requirement))
            continue
        needed.add(name)
        extras = frozenset(requirement.extras)
        if (name, extras) in followed:
            continue
        followed.add((name, extras))
        for text in metadata.requires(name) or []:
            nested = Requirement(text)
            if nested.marker is None or any(nested.marker.evaluate({"extra": e}) for e in extras | {""}):
                queue.append(nested)

    assert unlocked == [], RELOCK
    assert {name for name, pin in LOCKED.items() if pin.applies_here()} - needed == set(), (
        f"locked but needed by nothing: {RELOCK}"
    )
