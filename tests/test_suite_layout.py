"""The suite's own rules: test modules share helpers only through helper modules (tests/e2e/helpers.py,
tests/support/, tests/fakes/, tests/factories.py and the like), never by importing one another or a
conftest, so that a test module says what it checks and moving one breaks nothing else."""

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def is_test_module_or_conftest(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, lazy imports included, relative ones made absolute."""
    package = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return found


def imports_of_test_modules(path: Path) -> list[str]:
    return sorted(
        {
            name
            for name in imported_modules(path)
            if name.startswith("tests.")
            and is_test_module_or_conftest(name)
            and (TESTS.parent / (name.replace(".", "/") + ".py")).exists()
        }
    )


@pytest.mark.parametrize(
    ("dotted", "expected"),
    [
        ("tests.e2e.test_threads", True),
        ("tests.e2e.conftest", True),
        ("tests.e2e.helpers", False),
        ("tests.support.stack", False),
    ],
)
def test_a_test_module_or_a_conftest_is_told_from_a_helper_module(dotted, expected):
    assert is_test_module_or_conftest(dotted) is expected


def test_a_module_that_imports_a_test_module_is_found(tmp_path, monkeypatch):
    package = tmp_path / "tests" / "e2e"
    package.mkdir(parents=True)
    (package / "test_threads.py").write_text("WAIT = 1\n")
    (package / "test_other.py").write_text("from .test_threads import WAIT\nfrom tests.e2e import conftest\n")
    (package / "conftest.py").write_text("")
    monkeypatch.setattr(__import__(__name__, fromlist=["TESTS"]), "TESTS", tmp_path / "tests")
    assert imports_of_test_modules(package / "test_other.py") == [
        "tests.e2e.conftest",
        "tests.e2e.test_threads",
    ]


def test_no_test_module_imports_another_test_module_or_a_conftest():
    offenders = {
        str(path.relative_to(TESTS.parent)): imported
        for path in sorted(TESTS.rglob("*.py"))
        if (imported := imports_of_test_modules(path))
    }
    assert offenders == {}
