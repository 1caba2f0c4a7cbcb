"""A canonical-format CelebA sample on an offline search path, pinned in the registry by its
md5s (everything else the production path), and its attribute and partition files read back."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from dpminimax.data import get_dataset_spec, registry, write_canonical_sample
from dpminimax.data.checksum import file_digest


def pinned_sample(tmp_path: Path, monkeypatch, names: tuple[str, ...], n_images: int,
                  seed: int) -> Path:
    """Write ``n_images`` images with ``names[-1]``'s writer into ``<tmp>/celeba`` on
    DPMINIMAX_DATA (offline, private cache) and pin every dataset of ``names`` to them."""
    for var, value in {"DPMINIMAX_DATA_RAW": tmp_path / "raw", "DPMINIMAX_DATA": tmp_path,
                       "DPMINIMAX_CACHE": tmp_path / "cache", "DPMINIMAX_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, str(value))
    paths = write_canonical_sample(names[-1], tmp_path / "celeba", n_images, seed=seed)
    md5 = {p.name: file_digest(p, "md5") for p in paths}
    for name in names:
        spec = get_dataset_spec(name)
        files = tuple(dataclasses.replace(f, md5=md5[f.filename]) for f in spec.files)
        monkeypatch.setitem(registry.DATASETS, name, dataclasses.replace(spec, files=files))
    return tmp_path / "celeba"


def attributes(directory: Path) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    """Image number -> (attribute row of -1/1 values, official partition) from the text files."""
    rows = (directory / "list_attr_celeba.txt").read_text().splitlines()[2:]
    attr = {int(r.split()[0][:6]): np.array(r.split()[1:], dtype=int) for r in rows}
    parts = dict(line.split() for line in (directory / "list_eval_partition.txt").read_text()
                 .splitlines())
    return attr, {int(name[:6]): int(p) for name, p in parts.items()}
