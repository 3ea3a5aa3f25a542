"""An import-linter contract type: no import cycle anywhere among the given packages' modules.

import-linter's own ``acyclic_siblings`` looks at siblings of one package at a time; a cycle that
crosses packages (an adapter importing an app that imports the adapter) is what we most want to catch.
grimp reads every import statement, so imports inside functions (lazy imports) count too.
"""

from __future__ import annotations

from importlinter import Contract, ContractCheck, fields, output


class NoCyclesContract(Contract):
    type_name = "no_cycles"

    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose: bool) -> ContractCheck:
        packages: list[str] = self.packages  # type: ignore[assignment]  # the field, parsed
        modules = sorted(
            module
            for module in graph.modules
            if any(module == package or module.startswith(f"{package}.") for package in packages)
        )
        cycles = [
            sorted(component) for component in _strongly_connected(graph, modules) if len(component) > 1
        ]
        cycles += [
            [module] for module in modules if module in graph.find_modules_directly_imported_by(module)
        ]
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles, "graph": graph})

    def render_broken_contract(self, check: ContractCheck) -> None:
        graph = check.metadata["graph"]
        for cycle in check.metadata["cycles"]:
            output.print_error(f"These modules import each other: {', '.join(cycle)}")
            members = set(cycle)
            for importer in cycle:
                for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
                    for details in graph.get_import_details(importer=importer, imported=imported):
                        output.indent_cursor()
                        output.print(f"{importer} -> {imported} (l. {details['line_number']})")
            output.new_line()


def _strongly_connected(graph, modules: list[str]) -> list[set[str]]:
    """Tarjan's algorithm, iterative: the sets of modules that all reach each other."""
    inside = set(modules)
    index_of: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in modules:
        if root in index_of:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & inside)))]
        index_of[root] = lowest[root] = len(index_of)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, successors = work[-1]
            for successor in successors:
                if successor not in index_of:
                    index_of[successor] = lowest[successor] = len(index_of)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append(
                        (successor, iter(sorted(graph.find_modules_directly_imported_by(successor) & inside)))
                    )
                    break
                if successor in on_stack:
                    lowest[module] = min(lowest[module], index_of[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    lowest[parent] = min(lowest[parent], lowest[module])
                if lowest[module] == index_of[module]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == module:
                            break
                    components.append(component)
    return components
