"""Provenance: a fingerprint of the library code, so changed code re-runs the affected jobs."""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

from dpminimax.plugins import plugin_paths

#: The installed package's folder (this module sits at its top).
PACKAGE_ROOT = Path(__file__).resolve().parent


@cache
def code_fingerprint(*parts: str) -> str:
    """sha256 (first 16 hex digits) over the path and bytes of the package's ``.py`` files.

    ``parts`` names the sub-packages or modules a stage depends on (``"data"``, ``"privacy"``,
    ``"api/training.py"`` ...); with none, the whole package. The workflow passes each rule the
    fingerprint of what it calls as a ``param``; Snakemake re-runs a job whose params changed, so
    editing the library re-runs the jobs computed with the edited code and no others.
    """
    return fingerprint_files(PACKAGE_ROOT, parts)


def fingerprint_files(root: Path, parts: tuple[str, ...] = ()) -> str:
    """The fingerprint of ``parts`` (all of ``root`` when empty) of the source tree ``root``."""
    selected = [root / part for part in parts] or [root]
    files = set()
    for entry in selected:
        if not entry.exists():
            raise FileNotFoundError(f"code_fingerprint: no module or package {entry}")
        files.update([entry] if entry.is_file() else entry.rglob("*.py"))
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _data_module(obj: object) -> str | None:
    """``"data/<module>.py"`` of a loader or sample writer (unwrapping ``functools.partial``)."""
    module = getattr(getattr(obj, "func", obj), "__module__", "") or ""
    prefix = "dpminimax.data."
    return f"data/{module[len(prefix):]}.py" if module.startswith(prefix) else None


def _data_imports(root: Path, part: str) -> set[str]:
    """The ``data/*.py`` modules that ``part`` imports (``from dpminimax.data[.x] import ...``)."""
    imported = set()
    for node in ast.walk(ast.parse((root / part).read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("dpminimax.data."):
                imported.add(f"data/{node.module.split('.')[2]}.py")
            elif node.module == "dpminimax.data":
                imported.update(f"data/{alias.name}.py" for alias in node.names)
    return {name for name in imported if (root / name).is_file()}


def dataset_code_parts() -> tuple[dict[str, set[str]], tuple[str, ...]]:
    """Each dataset's own modules (its loader's and sample writer's, with the dataset modules
    they import) and the shared ``data/*.py`` modules (all others)."""
    from dpminimax.data.registry import get_dataset_spec, list_datasets

    root = PACKAGE_ROOT
    direct = {}
    for name in list_datasets():
        spec = get_dataset_spec(name)
        direct[name] = {m for m in (_data_module(spec.loader), _data_module(spec.sample_writer))
                        if m}
    dataset_modules = set().union(*direct.values())
    own = {}
    for name, modules in direct.items():
        todo, seen = list(modules), set()
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo += sorted(_data_imports(root, module) & dataset_modules)
        own[name] = seen
    shared = sorted(p.relative_to(root).as_posix() for p in (root / "data").glob("*.py")
                    if p.relative_to(root).as_posix() not in dataset_modules)
    return own, tuple(shared)


def training_data_parts() -> tuple[str, ...]:
    """The shared data modules training depends on: all but the catalogue (``registry.py``), so
    adding a dataset changes no training fingerprint (a dataset's own code reaches its training
    jobs through its prepared files)."""
    return tuple(part for part in dataset_code_parts()[1] if part != "data/registry.py")


def dataset_code_fingerprint(name: str, *extra: str) -> str:
    """The prepare fingerprint of dataset ``name``: the shared data code, ``extra`` parts (e.g.
    ``"atomic.py"``), the dataset's own modules and, for a declared dataset, its YAML file."""
    from dpminimax.data.registry import get_dataset_spec

    own, shared = dataset_code_parts()
    code = code_fingerprint(*sorted({*shared, *extra, *own[name]}))
    declaration = get_dataset_spec(name).declaration
    if declaration is None:
        return code
    digest = hashlib.sha256(code.encode() + b"\0" + Path(declaration).read_bytes())
    return digest.hexdigest()[:16]


def train_code_fingerprint() -> str:
    """The fingerprint of everything a training job (train + attack) runs: the workflow's
    train rule carries it as a param, and a job stamps it into its metrics as ``code_version``."""
    library = code_fingerprint(
        "algorithms", "kernels", "privacy", "models", "metrics", "tasks", *training_data_parts(),
        "attacks", "api/__init__.py", "api/columns.py", "api/training.py", "api/tuning.py",
        "api/attacks.py", "api/model_io.py", "fit_result.py", "seeding.py", "plugins.py")
    plugins = plugin_paths()
    if not plugins:
        return library
    digest = hashlib.sha256(library.encode())
    for path in plugins:  # a paper's plugin file (its folder and name, its bytes)
        digest.update(f"\0{path.parent.name}/{path.name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
