"""Imports run one way (issue 32): no module of the package imports, at its top or in a
function, one that imports it back. There were three circles: analyses/registry.py ->
report/promfile.py -> result.py -> registry; errors.py <-> store.py; and report/render.py,
which dispatched to markdown.py, html.py and table.py and was the helper library they called
back into. The helpers the formats share are now below them (report/view.py), the formats
are records (report/formats.py), the report's own metrics are declared in the registry and
DuckDB's memory setting is its own module's (limits.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Every module of the package and the package's modules it imports anywhere in it."""
    files = {}
    for p in (root / "auditor").rglob("*.py"):
        parts = p.relative_to(root).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in files}
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                for a in node.names:
                    deps.add(f"{module}.{a.name}" if f"{module}.{a.name}" in files else module)
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other (through any chain), each sorted."""
    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for d in graph[todo.pop()] - seen:
                seen.add(d)
                todo.append(d)
        return seen

    reaches = {m: reach(m) for m in graph}
    groups = {frozenset({m, *(o for o in reaches[m] if m in reaches[o])}) for m in graph if m in reaches[m]}
    return sorted(sorted(g) for g in groups)


def test_no_module_imports_one_that_imports_it_back():
    assert circles(import_graph()) == []


def test_the_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_the_formats_are_above_what_they_share():
    graph = import_graph()
    formats = {f"auditor.report.{m}" for m in ("table", "markdown", "html")}
    assert not graph["auditor.report.view"] & (formats | {"auditor.report.render"})
    assert not any("auditor.report.render" in graph[f] for f in formats)
    assert graph["auditor.report.formats"] == set()          # the CLI reads it at start-up
