"""The no_cycles contract finds every cycle among the packages it watches, and only those."""

import grimp
import pytest

from lint.import_cycles import NoCyclesContract


def graph_of(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="import x")
    return graph


def check(graph: grimp.ImportGraph, packages=("app",)):
    # Made without import-linter's option checks, which trip over an attribute a test plugin adds.
    contract = NoCyclesContract.__new__(NoCyclesContract)
    contract.packages = list(packages)  # type: ignore[assignment]
    return contract.check(graph, verbose=False)


def test_a_graph_without_cycles_keeps_the_contract():
    result = check(graph_of(("app.a", "app.b"), ("app.b", "app.c"), ("app.a", "app.c")))
    assert result.kept
    assert result.metadata["cycles"] == []


def test_two_modules_that_import_each_other_break_it():
    result = check(graph_of(("app.a", "app.b"), ("app.b", "app.a"), ("app.c", "app.a")))
    assert not result.kept
    assert result.metadata["cycles"] == [["app.a", "app.b"]]


def test_a_long_cycle_across_packages_is_one_finding():
    result = check(
        graph_of(("app.a", "lib.x"), ("lib.x", "other.y"), ("other.y", "app.a"), ("app.a", "app.z")),
        packages=("app", "lib", "other"),
    )
    assert result.metadata["cycles"] == [["app.a", "lib.x", "other.y"]]


def test_a_module_that_imports_itself_breaks_it():
    assert check(graph_of(("app.a", "app.a"))).metadata["cycles"] == [["app.a"]]


@pytest.mark.parametrize("outside", ["vendor.lib", "appendix.a"])
def test_cycles_outside_the_watched_packages_are_not_counted(outside):
    result = check(graph_of(("app.a", outside), (outside, "app.a")))
    assert result.kept
