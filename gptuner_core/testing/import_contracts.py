"""An import-linter contract that no module of a package sits in an import circle (issue 42).

import-linter's own ``acyclic_siblings`` compares sibling *packages*: ``engine`` and ``config`` import
each other as packages and are allowed to (they are one layer), while a circle between two modules,
such as ``knobs`` -> ``routes`` -> ``knobs``, is what must not come back. This contract walks grimp's
module graph (imports inside functions and ``TYPE_CHECKING`` blocks included: a lazy circle is still
a circle) and reports every group of modules that reach each other, with the import lines::

    [importlinter:contract:no-cycles]
    name = No import circle between modules
    type = no_cycles
    containers = gptuner_core

Registered in ``pyproject.toml`` under ``contract_types`` (``no_cycles: gptuner_core.testing.
import_contracts.NoCyclesContract``); only ``lint-imports`` imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from importlinter import Contract
from importlinter import ContractCheck
from importlinter import fields
from importlinter import output


if TYPE_CHECKING:
    import grimp


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of two or more modules that all reach each other (Tarjan, iterative), each sorted,
    in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


class NoCyclesContract(Contract):
    """Kept when no two modules inside ``containers`` import each other, directly or round about."""

    type_name = "no_cycles"
    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        inside = {m for c in self.containers for m in graph.modules  # type: ignore[attr-defined]
                  if m == c or m.startswith(c + ".")}
        edges = {m: set(graph.find_modules_directly_imported_by(m)) & inside for m in inside}
        groups = strongly_connected(edges)
        circles = []
        for group in groups:
            members = set(group)
            lines = []
            for importer in group:
                for imported in sorted(edges[importer] & members):
                    where = graph.get_import_details(importer=importer, imported=imported)
                    at = ", ".join(str(d["line_number"]) for d in where)
                    lines.append(f"{importer} -> {imported} (l. {at})")
            circles.append({"modules": group, "imports": lines})
        return ContractCheck(kept=not circles, metadata={"circles": circles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        circles = check.metadata["circles"]
        output.print_error(f"{len(circles)} import circle(s) between modules:", bold=True)
        output.new_line()
        for circle in circles:
            output.print_error(" <-> ".join(circle["modules"]), bold=False)
            for line in circle["imports"]:
                output.indent_cursor()
                output.print_error(line, bold=False)
            output.new_line()
