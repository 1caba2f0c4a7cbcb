"""MNIST-ST and Fashion-MNIST-ST: imbalanced binary tasks built from the canonical IDX files.

Paper 004 sec. 5.1 "Dataset". Classes 0-4
become label 0 and classes 5-9 label 1 (the positive class). Each split goes through LibAUC's
``ImbalancedDataGenerator(imratio, random_seed=0).transform``, reproduced here without touching
numpy's global state: permute with ``RandomState(0)``; keep every negative and the first
``int(imratio / (1 - imratio) * n_negatives)`` positives of that order (only when imratio < 0.5);
permute the kept rows again with ``RandomState(0)``. Training imratio 0.1 gives MNIST-ST 30,596 +
3,399 = 33,995 images and Fashion-MNIST-ST 30,000 + 3,333 = 33,333. The test split uses imratio
0.5, which keeps every image (10,000; positives never outnumber negatives), only reordered.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from dpminimax.data.images import load_idx
from dpminimax.data.schema import ImageSplits

TRAIN_IMRATIO = 0.1
TEST_IMRATIO = 0.5
SEED = 0
LAST_NEGATIVE_CLASS = 4  # LibAUC's split index for 10 classes: 10 // 2 - 1


def _permutation(n: int, seed: int) -> np.ndarray:
    """``np.random.seed(seed); np.random.permutation(n)`` as LibAUC calls it, on a private state."""
    return np.random.RandomState(seed).permutation(n)


def imbalance_rows(labels: np.ndarray, imratio: float, seed: int = SEED) -> np.ndarray:
    """Indices into ``labels`` (class ids 0..9) of the rows LibAUC's generator keeps, in its
    output order; ``imratio`` is the target fraction of positives, in (0, 0.5]."""
    if not 0 < imratio <= 0.5:
        raise ValueError(f"imratio must be in (0, 0.5], got {imratio}")
    rows = _permutation(len(labels), seed)
    if imratio < 0.5:
        positive = np.asarray(labels)[rows] > LAST_NEGATIVE_CLASS
        negatives, positives = np.flatnonzero(~positive), np.flatnonzero(positive)
        keep = int((imratio / (1 - imratio)) * len(negatives))
        rows = rows[np.concatenate([negatives, positives[:keep]])]
    return rows[_permutation(len(rows), seed)]


def binary_labels(labels: np.ndarray) -> np.ndarray:
    """Classes 0-4 -> 0, classes 5-9 -> 1 (int64)."""
    return (np.asarray(labels) > LAST_NEGATIVE_CLASS).astype(np.int64)


def load_st(paths: Mapping[str, Path], *, class_name: str, imratio: float = TRAIN_IMRATIO,
            seed: int = SEED) -> ImageSplits:
    """Read the four IDX files (:func:`~dpminimax.data.images.load_idx`) and build the -ST task:
    training split at ``imratio``, test split at 0.5 (all images kept)."""
    full = load_idx(paths, class_name=class_name)
    train = imbalance_rows(full.y_train, imratio, seed)
    test = imbalance_rows(full.y_test, TEST_IMRATIO, seed)
    names = full.label_names
    return ImageSplits(
        x_train=full.x_train[train], y_train=binary_labels(full.y_train[train]),
        x_test=full.x_test[test], y_test=binary_labels(full.y_test[test]),
        label_names=[f"classes 0-4 ({', '.join(names[:5])})",
                     f"classes 5-9 ({', '.join(names[5:])})"],
    )


load_mnist_st = functools.partial(load_st, class_name="MNIST")
load_fashion_mnist_st = functools.partial(load_st, class_name="FashionMNIST")

PREPROCESSING = (
    "binary task: classes 0-4 -> 0, classes 5-9 -> 1 (positive); training split subsampled to "
    f"imratio {TRAIN_IMRATIO} as LibAUC's ImbalancedDataGenerator(random_seed={SEED}) does "
    "(permute with RandomState(0), keep all negatives and the first int(r/(1-r) * n_neg) "
    "positives, permute again); test split at imratio 0.5 (every canonical test image kept, "
    "reordered); pixels scaled to [0, 1] (float32, n x 1 x 28 x 28), no mean/std normalisation; "
    "no sensitive attribute (one group 'all', s = 0); max_rows subsamples each split afterwards "
    "(paper 004 Sec. 5.1; dpminimax.data.imbalanced)"
)
