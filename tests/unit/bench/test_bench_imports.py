"""Nothing in the library imports the benchmarks: only dpminimax.bench itself and the CLI do."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dpminimax

PACKAGE = Path(dpminimax.__file__).parent


def imported_modules(source: str, module: Path) -> set[str]:
    """Absolute names of every module (or name) imported by ``source``, the text of ``module``
    (a path inside the package; relative imports are resolved against it)."""
    package = ["dpminimax", *module.parent.parts]
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join([*parts, *([node.module] if node.module else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def imports_bench(source: str, module: Path) -> bool:
    return any(name == "dpminimax.bench" or name.startswith("dpminimax.bench.")
               for name in imported_modules(source, module))


def test_no_library_module_imports_the_benchmarks():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE)
        if module.parts[0] not in ("bench", "cli.py") and imports_bench(path.read_text(), module):
            offenders.append(str(module))
    assert offenders == []


@pytest.mark.parametrize("source", [
    "import dpminimax.bench.racodp", "from dpminimax import bench",
    "from dpminimax.bench.kernels import run_kernel_benchmarks",
    "from ..bench.common import interleaved_medians", "from .. import bench",
    "def f():\n    from dpminimax.bench import racodp",
])
def test_every_import_form_is_seen(source):
    assert imports_bench(source, Path("report/figures.py"))


@pytest.mark.parametrize("source", ["from dpminimax import api", "from . import benchmarks",
                                    "import dpminimax.benchmarking"])
def test_other_imports_are_not_flagged(source):
    assert not imports_bench(source, Path("report/figures.py"))
