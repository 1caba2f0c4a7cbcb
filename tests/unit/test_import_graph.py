"""The package's import structure (issue #41 item 3): the tasks read a fit result, never the
methods, and the top-level subpackages and modules of ``dpminimax`` import one another without
a cycle. Every import counts, also one under ``TYPE_CHECKING`` or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "dpminimax"


def imported_modules(path: Path) -> set[str]:
    """The ``dpminimax`` modules (dotted) that the file ``path`` imports anywhere in it."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    package = parts if path.name == "__init__.py" else parts[:-1]
    package = package[:-1] if parts[-1] == "__init__" else package
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the file's package, level - 1 up
                above = package[:len(package) - node.level + 1]
                base = ".".join([*above, *([base] if base else [])])
            # ``from dpminimax import tasks`` imports the subpackage tasks
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names
                              if base == "dpminimax")}
    return {name for name in found if name.split(".")[0] == "dpminimax"}


def unit(module: str) -> str | None:
    """The top-level subpackage or module of ``dpminimax`` a dotted name is in (None: the
    package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def package_graph() -> dict[str, set[str]]:
    """Top-level unit -> the other units it imports (the package's own ``__init__``, which
    only loads the estimator lazily, is no unit)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = unit(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        if source == "__init__":
            continue
        targets = {unit(name) for name in imported_modules(path)} - {None, source}
        graph.setdefault(source, set()).update(targets)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one unit (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_tasks_never_import_the_algorithms():
    offending = {str(path.relative_to(PACKAGE)): sorted(
        name for name in imported_modules(path) if unit(name) == "algorithms")
        for path in sorted((PACKAGE / "tasks").rglob("*.py"))}
    assert {path: names for path, names in offending.items() if names} == {}


def test_package_import_graph_has_no_cycle():
    """No package imports one that imports it back (issue #41 item 3): the KL-DRO objective
    and Table 2's attack metrics sit in :mod:`dpminimax.metrics`, below the tasks and the
    methods that use them."""
    assert cycles(package_graph()) == []


def test_the_checks_see_a_cycle_and_a_type_checking_import(tmp_path, monkeypatch):
    """The checks can fail: a TYPE_CHECKING import closes a planted cycle a -> b -> a."""
    for name, text in {"a/__init__.py": "from dpminimax.b import x\n",
                       "b/__init__.py": "from typing import TYPE_CHECKING\n"
                                        "if TYPE_CHECKING:\n    from ..a import y\n",
                       "c.py": "import dpminimax.a\n"}.items():
        (tmp_path / "dpminimax" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "dpminimax" / name).write_text(text)
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path / "dpminimax")
    graph = package_graph()
    assert graph == {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert cycles(graph) == [["a", "b"]]


