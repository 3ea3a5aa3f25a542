"""No product module is over 600 lines unless docs/architecture.md says why, under "Long modules": a
long module is split along its seams, or the one job that needs the length is named there."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = Path("docs/architecture.md")
SECTION = "## Long modules"
# The product, and the two programs of the other side of the wire that ship with it; not the tests,
# not bench/.
PRODUCT = ("bindings", "sessions", "interactions", "audit", "alerts", "kourier", "simulator", "demo_agent")
MOST_LINES = 600


def long_modules(root: Path, most_lines: int) -> dict[str, int]:
    """Each product module over ``most_lines`` lines, by its path in the repository, with its lines."""
    lengths = {
        path.relative_to(root).as_posix(): len(path.read_text().splitlines())
        for package in PRODUCT
        for path in sorted((root / package).rglob("*.py"))
    }
    return {path: lines for path, lines in lengths.items() if lines > most_lines}


def explained_modules(root: Path) -> set[str]:
    """The modules the "Long modules" section of docs/architecture.md explains: each item of its list
    begins with one, in backquotes (``- `simulator/fake.py`: why``)."""
    text = (root / ARCHITECTURE).read_text()
    if SECTION not in text:
        return set()
    section = text[text.index(SECTION) + len(SECTION) :].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([^`]+\.py)`", section, re.MULTILINE))


def unexplained(root: Path, most_lines: int = MOST_LINES) -> dict[str, int]:
    named = explained_modules(root)
    return {path: lines for path, lines in long_modules(root, most_lines).items() if path not in named}


def test_every_product_module_over_600_lines_is_explained_in_the_architecture():
    assert unexplained(ROOT) == {}, (
        f"split these along their seams, or say in {ARCHITECTURE}, under {SECTION!r}, why one job "
        "needs the length"
    )


def test_the_section_names_only_modules_that_exist_and_are_long():
    named = explained_modules(ROOT)
    assert named, f"{ARCHITECTURE} has no {SECTION!r} section naming a module"
    assert named <= set(long_modules(ROOT, MOST_LINES)), "a module named there is gone or no longer long"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_long_module_the_section_does_not_name_is_caught(tmp_path):
    write(tmp_path / "kourier/long.py", "x = 1\n" * 4)
    write(tmp_path / "kourier/short.py", "x = 1\n" * 3)
    write(tmp_path / "simulator/explained.py", "x = 1\n" * 4)
    write(
        tmp_path / ARCHITECTURE,
        f"# Architecture\n\n{SECTION}\n\n- `simulator/explained.py`: why.\n\n## Next\n",
    )

    assert unexplained(tmp_path, most_lines=3) == {"kourier/long.py": 4}


def test_a_module_named_outside_the_section_is_not_explained(tmp_path):
    write(tmp_path / "kourier/long.py", "x = 1\n" * 4)
    write(tmp_path / ARCHITECTURE, f"# Architecture\n\n- `kourier/long.py`: why.\n\n{SECTION}\n\nNone.\n")

    assert unexplained(tmp_path, most_lines=3) == {"kourier/long.py": 4}
