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


def toy_images(n: int = 256, positives: float = 0.1, side: int = 28, channels: int = 1,
               seed: int = 0) -> PreparedDataset:
    """Imbalanced binary images (a bright patch marks the positives, a fraction ``positives``
    of the training set) and a balanced test set of the same size: MNIST-ST's shape."""
    rng = np.random.default_rng(seed)

    def split(rate: float):
        y = (rng.random(n) < rate).astype(np.int64)
        x = 0.3 * rng.standard_normal((n, channels, side, side)).astype(np.float32)
        x[:, :, 4:12, 4:12] += y[:, None, None, None]
        return x, y

    (x, y), (x_test, y_test) = split(positives), split(0.5)
    return PreparedDataset(name="toy-st", kind="image", x_train=x, y_train=y,
                           s_train=np.zeros(n, dtype=np.int64), x_test=x_test, y_test=y_test,
                           s_test=np.zeros(n, dtype=np.int64), feature_names=[],
                           label_names=["0", "1"], group_names=["all"])
