"""MNIST-ST and Fashion-MNIST-ST (DP-DRO's datasets): the LibAUC
construction, counts on the real files (skipped when absent), stand-ins and checksums."""

# The reference below mirrors LibAUC's calls on numpy's global RNG (state saved and restored).
# ruff: noqa: NPY002

from __future__ import annotations

import numpy as np
import pytest
from realdata import real

from dpminimax.data import (
    ChecksumMismatchError,
    DatasetNotFoundError,
    images,
    load_dataset,
    write_canonical_sample,
)
from dpminimax.data.imbalanced import imbalance_rows
from dpminimax.data.standin import STANDIN_NOTE


def libauc_transform(data, targets, imratio, random_seed=0):
    """LibAUC's ``ImbalancedDataGenerator.transform`` for 10 classes, step by step (global RNG)."""
    state = np.random.get_state()
    try:
        np.random.seed(random_seed)
        idx = np.random.permutation(len(targets))
        data, targets = data[idx], np.where(targets[idx] <= 4, 0, 1)
        if imratio < 0.5:
            neg_ids, pos_ids = np.where(targets == 0)[0], np.where(targets == 1)[0]
            pos_ids = pos_ids[:int((imratio / (1 - imratio)) * len(neg_ids))]
            idx = np.concatenate([neg_ids, pos_ids])
            data, targets = data[idx], targets[idx]
        np.random.seed(random_seed)
        idx = np.random.permutation(len(targets))
        return data[idx], targets[idx]
    finally:
        np.random.set_state(state)


@pytest.mark.parametrize("imratio", [0.1, 0.25, 0.5])
def test_rows_match_libauc_and_leave_global_rng_alone(imratio):
    labels = np.random.default_rng(3).integers(0, 10, 997)
    x, y = libauc_transform(np.arange(997), labels, imratio)
    before = np.random.get_state()[1].copy()
    rows = imbalance_rows(labels, imratio)
    assert (np.random.get_state()[1] == before).all()
    assert (rows == x).all() and ((labels[rows] > 4) == y).all()
    assert (y == 0).sum() == (labels <= 4).sum()
    if imratio == 0.5:
        assert sorted(rows) == list(range(997))
    with pytest.raises(ValueError, match="imratio"):
        imbalance_rows(labels, 0.6)


@pytest.mark.parametrize("name", ["mnist-st", "fashion-mnist-st"])
def test_sample_files_build_the_st_task(samples, name):
    paths = samples(name, 400, seed=1)
    raw = (images.load_mnist if name == "mnist-st" else images.load_fashion_mnist)(
        {p.name: p for p in paths})
    first, second = load_dataset(name), load_dataset(name)
    for part in ("x_train", "y_train", "x_test", "y_test"):
        assert np.array_equal(getattr(first, part), getattr(second, part))
    x_ref, y_ref = libauc_transform(raw.x_train, raw.y_train, 0.1)
    assert np.array_equal(first.x_train, x_ref.astype(np.float32) / 255.0)
    assert np.array_equal(first.y_train, y_ref)
    n_neg = int((raw.y_train <= 4).sum())
    assert np.bincount(first.y_train).tolist() == [n_neg, int(0.1 / 0.9 * n_neg)]
    assert sorted(np.bincount(first.y_test).tolist()) == sorted(np.bincount(
        raw.y_test > 4).tolist()) and len(first.y_test) == 400 // 6   # every test image kept
    assert first.kind == "image" and first.x_train.shape[1:] == (1, 28, 28)
    assert first.x_train.dtype == np.float32 and 0.0 <= first.x_train.min() <= 1.0
    assert set(np.unique(first.y_train)) <= {0, 1} and len(first.label_names) == 2
    assert first.group_names == ["all"] and not first.s_train.any() and not first.s_test.any()
    assert first.meta["sensitive_attribute"] is None


def test_standin_when_missing_is_marked(env):
    with pytest.raises(DatasetNotFoundError, match="train-images-idx3-ubyte.gz"):
        load_dataset("mnist-st")
    data = load_dataset("fashion-mnist-st", missing_data="standin")
    assert data.meta["standin"] is True and data.meta["standin_note"] == STANDIN_NOTE
    assert all("synthetic stand-in" in f["verified_by"] for f in data.meta["source_files"])
    assert len(data.y_test) == images.TRAIN_IMAGES // 6 and data.x_test.shape[1:] == (1, 28, 28)
    n_neg = int((data.y_train == 0).sum())
    assert (data.y_train == 1).sum() == int(0.1 / 0.9 * n_neg)


def test_checksum_mismatch_is_refused_naming_the_file(env, samples):
    write_canonical_sample("mnist-st", env / "raw" / "mnist", 5)  # not the pinned bytes
    with pytest.raises(ChecksumMismatchError, match="train-images-idx3-ubyte.gz.*expected sha256 "
                       + images.MNIST_FILES[0].sha256):
        load_dataset("mnist-st")
    paths = samples("fashion-mnist-st", 20)
    images.write_idx(paths[-1], np.zeros(20, dtype=np.uint8))  # t10k labels changed after pinning
    with pytest.raises(ChecksumMismatchError, match="'t10k-labels-idx1-ubyte.gz'"):
        load_dataset("fashion-mnist-st")


@pytest.mark.usefixtures("offline_data")
@real("mnist-st")
def test_mnist_st_real_counts():
    ds = load_dataset("mnist-st")
    assert np.bincount(ds.y_train).tolist() == [30_596, 3_399] and len(ds.y_train) == 33_995
    assert ds.meta["positive_rate"]["train"] == pytest.approx(0.1, abs=2e-4)
    assert np.bincount(ds.y_test).tolist() == [5_139, 4_861]   # the whole canonical test set
    assert ds.x_train.shape == (33_995, 1, 28, 28) and ds.x_train.max() == 1.0
    again = load_dataset("mnist-st")
    assert np.array_equal(ds.x_train, again.x_train) and np.array_equal(ds.y_test, again.y_test)


@pytest.mark.usefixtures("offline_data")
@real("fashion-mnist-st")
def test_fashion_mnist_st_real_counts():
    ds = load_dataset("fashion-mnist-st")
    assert np.bincount(ds.y_train).tolist() == [30_000, 3_333] and len(ds.y_train) == 33_333
    assert np.bincount(ds.y_test).tolist() == [5_000, 5_000]
    full = load_dataset("fashion-mnist")
    x_ref, y_ref = libauc_transform(full.x_train, full.y_train, 0.1)
    assert np.array_equal(ds.x_train, x_ref) and np.array_equal(ds.y_train, y_ref)
