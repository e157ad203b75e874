"""No import cycles in the packages: every import counts, module-level, in a function or under TYPE_CHECKING.

import-linter's ``acyclic_siblings`` contract looks for cycles between the children of a package
only, so it misses one that runs through a package's own ``__init__`` (``agentenvs`` ->
``agentenvs.core`` -> ``agentenvs.core.groups`` -> ``agentenvs`` was one); this test searches the
whole module graph (grimp's, as import-linter builds it) for strongly connected modules and names
one cycle of each, with the lines that import.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import grimp
import pytest

PACKAGES = ("agentenvs", "wrappers", "agents")


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The sets of two or more modules that import each other, directly or through others (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        # Iterative depth-first search: (module, the modules it imports still to visit).
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            child = next(imported, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def describe_cycle(graph: grimp.ImportGraph, component: list[str]) -> str:
    """One cycle through ``component``'s first module, each step with the line that imports."""
    start = component[0]
    inside = set(component)
    step = next(m for m in sorted(graph.find_modules_directly_imported_by(start)) if m in inside)
    chain = graph.find_shortest_chain(importer=step, imported=start) or (step, start)
    cycle = [start, *chain]
    lines = []
    for importer, imported in zip(cycle, cycle[1:], strict=False):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = f"line {details[0]['line_number']}: {details[0]['line_contents']}" if details else "?"
        lines.append(f"  {importer} -> {imported}  ({where})")
    return "\n".join(lines)


def import_cycles(*packages: str) -> list[str]:
    """A description of one cycle per set of mutually importing modules in ``packages``."""
    graph = grimp.build_graph(*packages, include_external_packages=False, cache_dir=None)
    return [describe_cycle(graph, component) for component in strongly_connected(graph)]


def test_the_packages_have_no_import_cycles():
    cycles = import_cycles(*PACKAGES)
    assert not cycles, "import cycles:\n" + "\n\n".join(cycles)


def test_a_cycle_behind_a_function_level_import_is_found_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    package = tmp_path / "cyclic_example"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text("from cyclic_example.translator import translate\n")
    (package / "translator.py").write_text(
        textwrap.dedent(
            """
            def translate():
                from cyclic_example.engine import run  # lazy, still a cycle
            """
        )
    )
    (package / "leaf.py").write_text("import cyclic_example.engine\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    [cycle] = import_cycles("cyclic_example")
    assert "cyclic_example.engine -> cyclic_example.translator  (line 1:" in cycle
    assert "cyclic_example.translator -> cyclic_example.engine  (line 3:" in cycle
    assert "leaf" not in cycle


def test_strongly_connected_sets_are_whole_and_acyclic_chains_are_not_reported():
    class Graph:  # the two grimp queries the search uses, over a hand-made graph
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}}
        modules = set(edges)

        def find_modules_directly_imported_by(self, module: str) -> set[str]:
            return self.edges[module]

    assert strongly_connected(Graph()) == [["a", "b", "c"]]  # type: ignore[arg-type]
