"""Synthetic stand-ins for datasets that are not on this machine and cannot be downloaded.

Several datasets of the reproduced papers (Parkinsons, Heart, ACSEmployment, CelebA, Retired
Adult, UTK-Face) cannot be fetched on machines without internet access. So that every rule of
the workflow still runs there, and nothing pretends to be a result, a *stand-in* replaces such a
dataset: small random files written in the dataset's exact canonical on-disk format by its
registered sample writer, then read by the real loader and preprocessing. Everything trained on
a stand-in is marked: the prepared data's meta says ``standin: true`` with the reason, every run
row carries ``data_standin``, figures are stamped "NOT RUN: data unavailable", and claims about
such a dataset are "not run: data unavailable". Stand-in numbers are never results.
"""

from __future__ import annotations

from pathlib import Path

from dpminimax.data.checksum import file_digest
from dpminimax.data.schema import DatasetSpec, LocatedFile

#: Rows (tabular) or images per split written for a stand-in whose spec names no size: enough
#: for every rule to run.
STANDIN_ROWS = 2000
STANDIN_SEED = 0
STANDIN_NOTE = "NOT RUN: data unavailable here (synthetic stand-in in the canonical format)"
MISSING_DATA_MODES = ("standin", "fail")


def standin_sources(spec: DatasetSpec, directory: Path, rows: int | None = None,
                    seed: int = STANDIN_SEED) -> list[LocatedFile]:
    """Write the stand-in files of ``spec`` into ``directory`` (``rows`` per file or split,
    default the spec's ``standin_rows``) and describe them as located files whose
    ``verified_by`` says plainly that they are synthetic."""
    rows = rows or spec.standin_rows or STANDIN_ROWS
    if spec.sample_writer is None:
        raise ValueError(f"dataset {spec.name!r} has no sample writer, so no stand-in")
    directory.mkdir(parents=True, exist_ok=True)
    written = {path.name: path for path in spec.sample_writer(directory, rows, seed)}
    located = []
    for file in spec.files:
        path = written.get(file.filename, directory / file.filename)
        located.append(LocatedFile(
            file.filename, path, file_digest(path), file.url,
            f"synthetic stand-in ({rows} rows, seed {seed}): the real file is not available",
        ))
    return located
