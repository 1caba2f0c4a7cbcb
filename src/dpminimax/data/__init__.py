"""Datasets: canonical files located on a search path (or downloaded) and verified by checksum,
parsed from their canonical formats, encoded and split into a :class:`PreparedDataset`.

Modules: :mod:`~dpminimax.data.locate` (search path, download, checksums),
:mod:`~dpminimax.data.adult`, :mod:`~dpminimax.data.credit_card`, :mod:`~dpminimax.data.images`,
:mod:`~dpminimax.data.synthetic` (parsers and sample writers), :mod:`~dpminimax.data.declared`
(tabular datasets declared in YAML, ``docs/datasets.md``), :mod:`~dpminimax.data.tabular`
(encoding), :mod:`~dpminimax.data.splits`, :mod:`~dpminimax.data.storage` (arrays.npz +
meta.json) and :mod:`~dpminimax.data.registry`.
"""

from dpminimax.data.errors import (
    ChecksumMismatchError,
    DataError,
    DatasetNotFoundError,
    UnknownDatasetError,
)
from dpminimax.data.registry import (
    get_dataset_spec,
    list_datasets,
    load_dataset,
    write_canonical_sample,
)
from dpminimax.data.schema import CanonicalFile, DatasetSpec, PreparedDataset
from dpminimax.data.storage import load_prepared, save_prepared

__all__ = [
    "CanonicalFile",
    "ChecksumMismatchError",
    "DataError",
    "DatasetNotFoundError",
    "DatasetSpec",
    "PreparedDataset",
    "UnknownDatasetError",
    "get_dataset_spec",
    "list_datasets",
    "load_dataset",
    "load_prepared",
    "save_prepared",
    "write_canonical_sample",
]
