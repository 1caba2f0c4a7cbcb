"""The algorithm families (issue #41 item 3): every method of ``METHODS`` is in exactly one family
(subpackage of ``dpminimax.algorithms``), and no family imports another; all may import the
shared driver at the top (``base``, ``params``, ``problem_method``), which imports no family."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

import dpminimax.algorithms as algorithms
from dpminimax.algorithms import FAMILIES, METHODS

ROOT = Path(algorithms.__file__).parent
PACKAGE = "dpminimax.algorithms"


def _imported(path: Path) -> set[str]:
    """The absolute module names ``path`` imports (``from pkg import name`` adds ``pkg.name``:
    the name may be a submodule)."""
    module = ".".join((PACKAGE, *path.relative_to(ROOT).with_suffix("").parts))
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module[:-9]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[:len(package.split(".")) - node.level + 1],
                                 *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _family_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == PACKAGE.split(".") and len(parts) > 2 and parts[2] in FAMILIES:
        return parts[2]
    return None


def test_every_method_is_in_exactly_one_family():
    counts = Counter(name for names in FAMILIES.values() for name in names)
    assert sorted(counts) == sorted(METHODS)
    assert [name for name, count in counts.items() if count != 1] == []


def test_the_families_are_the_subpackages_and_hold_their_methods():
    assert sorted(FAMILIES) == sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))
    misplaced = [(family, name) for family, names in FAMILIES.items() for name in names
                 if _family_of(METHODS[name].__module__) != family]
    assert misplaced == []


@pytest.mark.parametrize("path", sorted(set(ROOT.rglob("*.py")) - {ROOT / "__init__.py"}),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_family_imports_another(path):
    """A family's modules import only their own family and the driver; the driver (the top-level
    modules but ``__init__.py``, which assembles :data:`METHODS` from every family) imports none."""
    own = path.parent.name if path.parent != ROOT else None
    foreign = sorted(module for module in _imported(path)
                     if _family_of(module) not in (None, own))
    assert foreign == []


def test_a_method_names_its_paper_folder_and_cites_its_source():
    """``paper`` is the id of a ``papers/<id>/`` folder (issue #41: it was a paper id in 7
    classes and a citation in 10), ``source`` the algorithm as published; a derived twin or
    control cites its private method's source and says what it removed."""
    from dpminimax.algorithms import CONTROLS, DIAGNOSTICS

    papers = {path.name for path in (ROOT.parents[2] / "papers").iterdir() if path.is_dir()}
    methods = {**METHODS, **DIAGNOSTICS, **CONTROLS}
    assert {name: cls.paper for name, cls in methods.items() if cls.paper not in papers} == {}
    assert {cls.paper for cls in METHODS.values()} == papers
    assert all(cls.source.strip() for cls in methods.values())
    assert METHODS["dp_sgd_nonprivate"].source == "Abadi et al. 2016, Alg. 1, without privacy"
    assert CONTROLS["racodp_noise_off"].source == "paper 000 (RaCO-DP), Alg. 1, noise off"
