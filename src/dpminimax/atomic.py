"""Atomic writes: a killed job never leaves a file, or a set of files, that looks complete.

A file is written to a temporary file in the destination directory and moved into place with
``os.replace`` (atomic on POSIX within one file system); a job's whole output directory is
written under a temporary name and renamed into place at the end (:func:`atomic_directory`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it onto ``path`` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; follow the umask instead
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``path``; if the block succeeds it replaces
    ``path`` whole (the old directory, if any, is removed only after the new one is complete),
    otherwise it is removed and ``path`` is left as it was. Leftovers of killed writers
    (``.<name>.tmp-*`` directories, ``.*.part`` files) are removed first."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    if target.is_dir():
        for stale in target.glob(".*.part"):
            stale.unlink(missing_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
            os.replace(target, old / target.name)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_parquet(table, path: str | os.PathLike) -> None:
    """Write a DataFrame to ``path`` as Parquet, atomically."""
    with atomic_path(path) as tmp:
        table.to_parquet(tmp, index=False)
