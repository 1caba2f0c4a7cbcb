"""Find canonical files on the local search path, download missing ones, verify checksums.

Search order for a file ``F`` of dataset ``D`` (first hit wins):

1. the project's raw-data directory: ``$DPMINIMAX_DATA_RAW`` if set, else ``<cwd>/data/raw``;
2. each directory of the colon-separated ``$DPMINIMAX_DATA``, in order;

looking in each directory at ``<dir>/D/F`` and then ``<dir>/F``. A file found nowhere is downloaded
from its canonical URL into ``<raw dir>/D/F`` (atomically) and verified. Any failure ends in one
:class:`DatasetNotFoundError` naming every missing file, its URL, the paths searched and where to
put it. A file whose checksum differs is never used: :class:`ChecksumMismatchError`. A file that
matches no pin is accepted only by its ``content_check``, run every time it is located: nothing
written beside a file (which anyone can forge) vouches for its bytes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from dpminimax.atomic import atomic_path
from dpminimax.data.checksum import file_digest
from dpminimax.data.download import download
from dpminimax.data.errors import ChecksumMismatchError, DataError, DatasetNotFoundError
from dpminimax.data.schema import CanonicalFile, LocatedFile


def raw_dir() -> Path:
    """Where users put raw files and where downloads go."""
    return Path(os.environ.get("DPMINIMAX_DATA_RAW") or Path.cwd() / "data" / "raw")


def cache_dir() -> Path:
    """Derived files (for example gunzipped IDX files): ``$DPMINIMAX_CACHE`` or ``data/cache``."""
    return Path(os.environ.get("DPMINIMAX_CACHE") or Path.cwd() / "data" / "cache")


def search_dirs() -> list[Path]:
    """The raw-data directory followed by the directories of ``$DPMINIMAX_DATA``."""
    extra = [Path(d) for d in os.environ.get("DPMINIMAX_DATA", "").split(os.pathsep) if d]
    return [raw_dir(), *extra]


def candidate_paths(dataset: str, filename: str) -> list[Path]:
    """Every path where ``filename`` of ``dataset`` may be, in search order."""
    return [path for d in search_dirs() for path in (d / dataset / filename, d / filename)]


def verify(path: Path, file: CanonicalFile) -> LocatedFile:
    """Check ``path`` against the pins of ``file``; raise :class:`ChecksumMismatchError`."""
    actual = file_digest(path)
    how = _pinned_match(path, file, actual)
    if how is None and file.content_check is not None:
        file.content_check(path)  # raises ChecksumMismatchError on any difference
        how = ("content (no published checksum; content checked when located)"
               if file.sha256 is None else
               "content (bytes differ from the pinned copy; content checked when located)")
    if how is None:
        raise _mismatch(str(path), file, actual)
    return LocatedFile(file.filename, path, actual, file.url, how)


def obtain(dataset: str, files: Sequence[CanonicalFile]) -> list[LocatedFile]:
    """Locate (or download) and verify every file of ``dataset``, in order."""
    located: list[LocatedFile] = []
    missing: list[tuple[CanonicalFile, str]] = []
    for file in files:
        found = next((p for p in candidate_paths(dataset, file.filename) if p.is_file()), None)
        if found is not None:
            located.append(verify(found, file))
        elif missing:  # the host already failed for this dataset: do not wait for it again
            missing.append((file, "not attempted after the previous download failed"))
        else:
            try:
                located.append(_fetch(dataset, file))
            except DataError:
                raise
            except Exception as err:  # any failure becomes one clear error
                missing.append((file, f"{type(err).__name__}: {err}"))
    if missing:
        raise DatasetNotFoundError(_not_found_message(dataset, missing))
    return located


def _fetch(dataset: str, file: CanonicalFile) -> LocatedFile:
    """Download (or convert) into ``<raw dir>/<dataset>/``; only verified bytes are moved there."""
    dest = raw_dir() / dataset / file.filename
    with atomic_path(dest) as tmp:
        if file.fetch is not None:
            file.fetch(tmp)
        else:
            download(file.url, tmp)
        actual = file_digest(tmp)
        how = _pinned_match(tmp, file, actual)
        if how is None and file.content_check is not None:
            file.content_check(tmp)
            how = "content (checked on conversion from the canonical source)"
        if how is None:
            raise _mismatch(f"download from {file.url}", file, actual)
    return LocatedFile(file.filename, dest, actual, file.url, how)


def _pinned_match(path: Path, file: CanonicalFile, actual: str) -> str | None:
    if actual == file.sha256:
        return "sha256"
    if file.md5 is not None and file_digest(path, "md5") == file.md5:
        return "md5 (canonical host checksum)"
    return None


def _mismatch(where: str, file: CanonicalFile, actual: str) -> ChecksumMismatchError:
    expected = " or ".join(f"{algorithm} {digest}" for algorithm, digest in
                           (("sha256", file.sha256), ("md5", file.md5)) if digest)
    return ChecksumMismatchError(
        f"{where}: checksum mismatch for {file.filename!r}: expected {expected}, got "
        f"sha256 {actual}. The file is corrupt or a different version; never used. Replace it "
        f"with the canonical file from {file.url}.")


def _not_found_message(dataset: str, missing: list[tuple[CanonicalFile, str]]) -> str:
    lines = [f"dataset {dataset!r}: {len(missing)} canonical file(s) not found locally and not "
             "downloadable."]
    for file, reason in missing:
        lines += [f"  file {file.filename!r}", f"    canonical URL: {file.url}",
                  f"    download: {reason}", "    searched:"]
        lines += [f"      {path}" for path in candidate_paths(dataset, file.filename)]
    target = raw_dir() / dataset
    lines += [
        f"Put the file(s) in {target}/ (e.g. {target / missing[0][0].filename}), or set "
        f"DPMINIMAX_DATA_RAW to a directory holding {dataset}/<file>, or add a directory with "
        f"that layout to the colon-separated DPMINIMAX_DATA. Directories searched: "
        + ", ".join(str(d) for d in search_dirs()),
    ]
    return "\n".join(lines)
