"""The data layer's record types: canonical files, dataset specs, raw tables, prepared datasets.

A loader turns located canonical files into a *raw* record (:class:`TabularTable` or
:class:`ImageSplits`); preprocessing turns that into a :class:`PreparedDataset`, the only type the
algorithms see.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

Kind = Literal["tabular", "image", "image-files"]


@dataclass(frozen=True)
class CanonicalFile:
    """One file as its canonical source publishes it.

    ``sha256`` pins the bytes (``None`` when no sha256 is published: such a file is accepted only
    by ``md5`` or by ``content_check``, run whenever it is located). ``md5`` is an alternative pin
    published by a third party for the same file on the canonical host (torchvision's MNIST and
    CelebA checksums), used when the pinned copy is a lossless re-encoding. ``fetch`` replaces the
    plain download when the canonical source publishes the content in another format (or raises
    with instructions when only a manual download is possible); a file matching no pin is accepted
    only by ``content_check``, run every time it is located (the acceptance is recorded in the
    dataset's meta).
    """

    filename: str
    url: str
    sha256: str | None
    md5: str | None = None
    fetch: Callable[[Path], None] | None = None
    content_check: Callable[[Path], None] | None = None


@dataclass(frozen=True)
class LocatedFile:
    """A canonical file found (or downloaded) and verified; ``verified_by`` says how."""

    filename: str
    path: Path
    sha256: str
    url: str
    verified_by: str

    def as_meta(self) -> dict[str, str]:
        return {"filename": self.filename, "path": str(self.path), "sha256": self.sha256,
                "url": self.url, "verified_by": self.verified_by}


@dataclass
class TabularTable:
    """A cleaned table before encoding: raw numeric and categorical columns, label, group."""

    frame: pd.DataFrame
    numeric: list[str]
    categorical: list[str]
    y: np.ndarray
    s: np.ndarray
    label_names: list[str]
    group_names: list[str]


@dataclass
class ImageSplits:
    """Images (uint8, n x C x H x W) and labels of the canonical train and test splits."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    label_names: list[str]


Loader = Callable[[Mapping[str, Path]], Any]  # TabularTable, ImageSplits or celeba.CelebAIndex
SampleWriter = Callable[[Path, int, int], list[Path]]


@dataclass(frozen=True)
class DatasetSpec:
    """A registry entry: provenance, the sensitive attribute and how to load the files.

    ``test_fraction`` is the dataset's default share of the test split (tabular data).
    ``folder`` names the directory searched for the files (variants of one dataset share it;
    default: ``name``). ``standin_rows`` is the size of its synthetic stand-in (rows or images
    per training file; default ``standin.STANDIN_ROWS``): the real training size where a
    configured job's plan depends on n (its batch rate and steps at a given epsilon), so a run
    without the data plans what it would with it. ``declaration`` is the YAML file of a
    declared dataset (:mod:`~dpminimax.data.declared`).
    """

    name: str
    kind: Kind
    files: tuple[CanonicalFile, ...]
    citation: str
    licence: str
    sensitive: str | None
    preprocessing: str
    loader: Loader
    sample_writer: SampleWriter | None = None
    test_fraction: float = 0.25
    folder: str | None = None
    declaration: Path | None = None
    standin_rows: int | None = None


@dataclass
class PreparedDataset:
    """Encoded, split arrays plus names and a JSON-serialisable ``meta`` dict.

    ``x`` is float32, ``y`` int64 class ids, ``s`` int64 sensitive group ids (indices into
    ``group_names``).
    """

    name: str
    kind: Kind
    x_train: np.ndarray
    y_train: np.ndarray
    s_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    s_test: np.ndarray
    feature_names: list[str]
    label_names: list[str]
    group_names: list[str]
    meta: dict[str, Any] = field(default_factory=dict)


def assemble(
    spec: DatasetSpec,
    arrays: Mapping[str, np.ndarray],
    *,
    feature_names: list[str],
    label_names: list[str],
    group_names: list[str],
    sources: list[LocatedFile],
    split: Mapping[str, Any],
) -> PreparedDataset:
    """Cast ``arrays`` to the prepared dtypes and compute the summary ``meta``; refuse a split
    that cannot train or evaluate (an empty training or test split)."""
    x_train = np.ascontiguousarray(arrays["x_train"], dtype=np.float32)
    x_test = np.ascontiguousarray(arrays["x_test"], dtype=np.float32)
    y = {part: np.asarray(arrays[f"y_{part}"], dtype=np.int64) for part in ("train", "test")}
    if not (len(y["train"]) and len(y["test"])):
        raise ValueError(
            f"dataset {spec.name!r} with max_rows={split.get('max_rows')}: {len(y['train'])} "
            f"training and {len(y['test'])} test row(s); both splits need a row (to train and "
            "to evaluate): raise max_rows")
    s = {part: np.asarray(arrays[f"s_{part}"], dtype=np.int64) for part in ("train", "test")}
    binary = len(label_names) == 2
    meta = {
        "n_train": len(y["train"]),
        "n_test": len(y["test"]),
        "n_features": len(feature_names),
        "n_classes": len(label_names),
        "n_groups": len(group_names),
        "group_counts": {
            part: dict(zip(group_names, np.bincount(s[part], minlength=len(group_names)).tolist(),
                           strict=True))
            for part in ("train", "test")
        },
        "positive_rate": ({part: float(y[part].mean()) if len(y[part]) else None
                           for part in ("train", "test")} if binary else None),
        "sensitive_attribute": spec.sensitive,
        "citation": spec.citation,
        "licence": spec.licence,
        "source_files": [source.as_meta() for source in sources],
        "preprocessing": spec.preprocessing,
        "split": dict(split),
    }
    return PreparedDataset(
        name=spec.name, kind=spec.kind, x_train=x_train, y_train=y["train"], s_train=s["train"],
        x_test=x_test, y_test=y["test"], s_test=s["test"], feature_names=list(feature_names),
        label_names=list(label_names), group_names=list(group_names), meta=meta,
    )
