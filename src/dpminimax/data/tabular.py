"""Encode a :class:`TabularTable`: z-score numeric columns, one-hot categorical ones, split.

Following the reference implementations (RaCO-DP and DP-FERMI): numeric columns are
standardised with the mean and standard deviation (ddof=1, as pandas' ``std``) of the *train*
split only; categorical columns are one-hot encoded over the levels present in the whole cleaned
table (so the feature count does not depend on the split or on ``max_rows``); the sensitive
attribute is not a feature.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpminimax.data.schema import DatasetSpec, LocatedFile, PreparedDataset, TabularTable, assemble
from dpminimax.data.splits import train_test_indices


def one_hot(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """One-hot matrix over the sorted levels of ``column`` and the names ``<column>=<level>``."""
    levels = sorted(column.unique().tolist())
    codes = pd.Categorical(column, categories=levels).codes
    matrix = np.zeros((len(column), len(levels)), dtype=np.float32)
    matrix[np.arange(len(column)), codes] = 1.0
    return matrix, [f"{column.name}={level}" for level in levels]


def zscore(values: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Standardise the columns of ``values`` with statistics of the rows ``train``."""
    mean = values[train].mean(axis=0)
    std = values[train].std(axis=0, ddof=1) if len(train) > 1 else np.ones(values.shape[1])
    return (values - mean) / np.where(std > 0, std, 1.0)


def prepare_tabular(
    spec: DatasetSpec,
    table: TabularTable,
    sources: list[LocatedFile],
    *,
    max_rows: int | None,
    split_seed: int,
    test_fraction: float,
) -> PreparedDataset:
    """Split ``table`` (after optional subsampling) and encode it into a prepared dataset."""
    train, test = train_test_indices(len(table.y), seed=split_seed, test_fraction=test_fraction,
                                     max_rows=max_rows)
    numeric = zscore(table.frame[table.numeric].to_numpy(dtype=np.float64), train)
    encoded = [one_hot(table.frame[name]) for name in table.categorical]
    x = np.hstack([numeric, *(matrix for matrix, _ in encoded)]).astype(np.float32)
    feature_names = list(table.numeric) + [n for _, names in encoded for n in names]
    return assemble(
        spec,
        {"x_train": x[train], "y_train": table.y[train], "s_train": table.s[train],
         "x_test": x[test], "y_test": table.y[test], "s_test": table.s[test]},
        feature_names=feature_names, label_names=table.label_names,
        group_names=table.group_names, sources=sources,
        split={"scheme": "shuffled", "seed": split_seed, "test_fraction": test_fraction,
               "max_rows": max_rows, "n_rows_total": len(table.y)},
    )
