"""Hand-made tabular datasets for the algorithm tests (no files, no preprocessing)."""

from __future__ import annotations

import numpy as np
import torch

from dpminimax.data import PreparedDataset
from dpminimax.kernels.gather import RowGatherer


def toy_dataset(x, y, s, groups=2, x_test=None, y_test=None, s_test=None) -> PreparedDataset:
    """A binary-label PreparedDataset from arrays; the test split defaults to the train split."""
    x = np.asarray(x, dtype=np.float32).reshape(len(y), -1)
    return PreparedDataset(
        name="toy", kind="tabular", x_train=x, y_train=np.asarray(y, dtype=np.int64),
        s_train=np.asarray(s, dtype=np.int64),
        x_test=x if x_test is None else x_test, y_test=np.asarray(y if y_test is None else y_test),
        s_test=np.asarray(s if s_test is None else s_test),
        feature_names=[f"f{j}" for j in range(x.shape[1])], label_names=["0", "1"],
        group_names=[f"g{a}" for a in range(groups)])


def linear_batch(seed=0, n=50, d=7, runs=3, batch=11, classes=2, density=None):
    """Random inputs of the batched linear kernels: ``(RowGatherer of n x d rows, index (R, B),
    weight (R, K, d), bias (R, K), residual (R, B, K), mask (R, B))``. With ``density``, each
    entry is non-zero with that probability and row 0 is all zeros (sparse rows)."""
    g = torch.Generator().manual_seed(seed)
    source = torch.randn(n, d, generator=g)
    if density is not None:
        source = source * (torch.rand(n, d, generator=g) < density)
        source[0] = 0.0
    index = torch.randint(0, n, (runs, batch), generator=g)
    weight = torch.randn(runs, classes, d, generator=g)
    bias = torch.randn(runs, classes, generator=g)
    residual = torch.randn(runs, batch, classes, generator=g)
    mask = torch.rand(runs, batch, generator=g) < 0.7
    return RowGatherer(source), index, weight, bias, residual, mask
