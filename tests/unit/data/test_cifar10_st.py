"""CIFAR10-ST (DP-DRO's dataset): the canonical python archive, the "last 100
images of classes 0-4" construction, the registered dataset, stand-ins and checksums."""

from __future__ import annotations

import dataclasses
import pickle
import tarfile

import numpy as np
import pytest
from realdata import real

from dpminimax.data import (
    ChecksumMismatchError,
    DatasetNotFoundError,
    cifar,
    get_dataset_spec,
    load_dataset,
    load_prepared,
    registry,
    save_prepared,
)
from dpminimax.data.checksum import file_digest
from dpminimax.data.standin import STANDIN_NOTE, STANDIN_ROWS

PER_CLASS = 120  # > ST_KEEP, so classes 0-4 lose images
N_TEST = 50


def fake_splits(seed: int = 0):
    """Training images of 10 classes x PER_CLASS in shuffled class order whose first two pixels
    encode the image's index (high byte, low byte); a small test split encoded the same way."""
    rng = np.random.default_rng(seed)
    splits = []
    for n, labels in ((10 * PER_CLASS, rng.permutation(np.arange(10 * PER_CLASS) % 10)),
                      (N_TEST, rng.integers(0, 10, N_TEST))):
        x = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        x[:, 0, 0, 0], x[:, 0, 0, 1] = np.arange(n) // 256, np.arange(n) % 256
        splits += [x, labels]
    return splits


def decoded_index(x: np.ndarray) -> np.ndarray:
    """The encoded image index of float images in [0, 1]."""
    pixels = np.rint(x[:, 0, 0, :2] * 255).astype(int)
    return pixels[:, 0] * 256 + pixels[:, 1]


@pytest.fixture
def archive(env, monkeypatch):
    """The fake splits as ``cifar-10-python.tar.gz`` on DPMINIMAX_DATA (``<shared>/cifar10/``),
    pinned in the registry by its sha256; returns (path, splits)."""
    splits = fake_splits()
    path = cifar.write_archive(env / "shared" / "cifar10" / cifar.ARCHIVE,
                               cifar.batch_files(*splits))
    spec = get_dataset_spec("cifar10-st")
    files = (dataclasses.replace(spec.files[0], sha256=file_digest(path), md5=None),)
    monkeypatch.setitem(registry.DATASETS, "cifar10-st", dataclasses.replace(spec, files=files))
    return path, splits


def test_st_rows_on_the_real_sizes():
    labels = np.random.default_rng(1).permutation(np.repeat(np.arange(10), 5000))
    rows = cifar.st_rows(labels)
    assert len(rows) == 25_500 and (np.diff(rows) > 0).all()
    assert np.bincount(labels[rows]).tolist() == [100] * 5 + [5000] * 5
    for cls in range(10):
        of_class = np.flatnonzero(labels == cls)
        expected = of_class[-100:] if cls < 5 else of_class
        assert rows[labels[rows] == cls].tolist() == expected.tolist()
    assert len(cifar.st_rows(labels, keep=0)) == 25_000
    assert len(cifar.st_rows(labels, keep=6000)) == 50_000
    with pytest.raises(ValueError, match="keep"):
        cifar.st_rows(labels, keep=-1)


def test_archive_and_extracted_folder_read_the_same(tmp_path):
    x_train, y_train, x_test, y_test = fake_splits(seed=3)
    files = cifar.batch_files(x_train, y_train, x_test, y_test)
    assert sorted(files) == sorted([*cifar.TRAIN_BATCHES, cifar.TEST_BATCH, cifar.META])
    path = cifar.write_archive(tmp_path / cifar.ARCHIVE, files)
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == sorted(f"cifar-10-batches-py/{n}" for n in files)
    folder = cifar.write_batches_dir(tmp_path / "extracted", files)
    for source in (path, folder, folder.parent):
        split = cifar.read_cifar10(source)
        assert split.x_train.dtype == np.uint8 and split.x_train.shape == (1200, 3, 32, 32)
        np.testing.assert_array_equal(split.x_train, x_train)  # batches 1..5 in order
        np.testing.assert_array_equal(split.y_train, y_train)
        np.testing.assert_array_equal(split.x_test, x_test)
        np.testing.assert_array_equal(split.y_test, y_test)
        assert split.label_names == cifar.LABEL_NAMES
    # canonical layout: 3072 channel-major bytes per row, keys as the authors' page shows
    entry = pickle.loads(files["data_batch_1"], encoding="bytes")
    assert sorted(entry) == [b"batch_label", b"data", b"filenames", b"labels"]
    assert entry[b"data"].shape == (240, 3072) and entry[b"data"].dtype == np.uint8
    np.testing.assert_array_equal(entry[b"data"][0, 1024:2048], x_train[0, 1].ravel())
    assert b"numpy.core.multiarray\n_reconstruct" in files["data_batch_1"]


def test_torchvision_reads_the_canonical_format(tmp_path, monkeypatch):
    from torchvision.datasets import CIFAR10
    from torchvision.datasets import cifar as tv_cifar

    x_train, y_train, x_test, y_test = fake_splits(seed=5)
    folder = cifar.write_batches_dir(tmp_path, cifar.batch_files(x_train, y_train, x_test,
                                                                 y_test))
    # torchvision pins the real files' md5s; everything else is its production reader
    monkeypatch.setattr(CIFAR10, "_check_integrity", lambda self: True)
    monkeypatch.setattr(tv_cifar, "check_integrity", lambda *args, **kwargs: True)
    ours = cifar.read_cifar10(folder)
    for train, x, y in ((True, ours.x_train, ours.y_train), (False, ours.x_test, ours.y_test)):
        reference = CIFAR10(str(tmp_path), train=train, download=False)
        np.testing.assert_array_equal(reference.data, x.transpose(0, 2, 3, 1))
        assert reference.targets == y.tolist() and reference.classes == ours.label_names


def test_registered_dataset_keeps_the_last_100_of_classes_0_to_4(archive):
    _, (x_train, y_train, x_test, y_test) = archive
    ds = load_dataset("cifar10-st")
    assert ds.kind == "image" and ds.x_train.shape == (5 * 100 + 5 * PER_CLASS, 3, 32, 32)
    assert ds.x_train.dtype == np.float32 and ds.x_train.min() >= 0 and ds.x_train.max() <= 1
    kept = decoded_index(ds.x_train)
    assert (np.diff(kept) > 0).all()                         # index order kept
    for cls in range(10):
        of_class = np.flatnonzero(y_train == cls)
        assert kept[ds.y_train == cls].tolist() == (of_class[-100:] if cls < 5
                                                    else of_class).tolist()
    np.testing.assert_array_equal(ds.x_train, x_train[kept].astype(np.float32) / 255.0)
    np.testing.assert_array_equal(ds.y_train, y_train[kept])
    np.testing.assert_array_equal(ds.x_test, x_test.astype(np.float32) / 255.0)  # untouched
    np.testing.assert_array_equal(ds.y_test, y_test)
    assert ds.label_names == cifar.LABEL_NAMES and ds.meta["n_classes"] == 10
    assert ds.group_names == ["all"] and not ds.s_train.any() and not ds.s_test.any()
    assert ds.meta["sensitive_attribute"] is None and ds.meta["positive_rate"] is None
    assert ds.meta["source_files"][0]["verified_by"] == "sha256"
    assert "last 100 images" in ds.meta["preprocessing"] and "standin" not in ds.meta
    assert len(ds.feature_names) == 3072
    small = load_dataset("cifar10-st", max_rows=30)
    assert len(small.y_train) == len(small.y_test) == 30
    again = load_prepared(save_prepared(ds, archive[0].parent / "prepared"))
    np.testing.assert_array_equal(again.x_train, ds.x_train)


def test_checksum_mismatch_is_refused(env):
    splits = fake_splits()
    cifar.write_archive(env / "raw" / "cifar10" / cifar.ARCHIVE, cifar.batch_files(*splits))
    with pytest.raises(ChecksumMismatchError, match="'cifar-10-python.tar.gz'.*expected sha256 "
                       + cifar.FILES[0].sha256 + " or md5 " + cifar.FILES[0].md5):
        load_dataset("cifar10-st")


def test_missing_files_name_the_url_or_give_a_marked_standin(env):
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("cifar10-st")
    for expected in (cifar.URL, str(env / "raw" / "cifar10"), str(env / "shared")):
        assert expected in str(info.value)
    ds = load_dataset("cifar10-st", missing_data="standin")
    assert ds.meta["standin"] is True and ds.meta["standin_note"] == STANDIN_NOTE
    assert all("synthetic stand-in" in f["verified_by"] for f in ds.meta["source_files"])
    per_class = STANDIN_ROWS // 10   # the stand-in's labels are balanced
    assert np.bincount(ds.y_train).tolist() == [100] * 5 + [per_class] * 5
    assert len(ds.y_test) == STANDIN_ROWS and ds.x_test.shape[1:] == (3, 32, 32)


def test_sample_is_reproducible_and_tolerates_tiny_sizes(tmp_path):
    first = cifar.write_cifar10_sample(tmp_path / "a", 40, 7)[0]
    second = cifar.write_cifar10_sample(tmp_path / "b", 40, 7)[0]
    assert first.read_bytes() == second.read_bytes()
    tiny = cifar.read_cifar10(cifar.write_cifar10_sample(tmp_path / "c", 3, 0)[0])
    assert tiny.x_train.shape == (3, 3, 32, 32) and len(tiny.y_test) == 3


def test_unpickler_accepts_arrays_only():
    assert cifar.unpickle(pickle.dumps({b"data": np.arange(3)}))["data"].tolist() == [0, 1, 2]
    with pytest.raises(pickle.UnpicklingError, match="unexpected global collections.Counter"):
        import collections

        cifar.unpickle(pickle.dumps({b"data": collections.Counter("ab")}))


@pytest.mark.usefixtures("offline_data")
@real("cifar10-st")
def test_cifar10_st_real_counts_and_torchvision_order(tmp_path):
    from torchvision.datasets import CIFAR10

    ds = load_dataset("cifar10-st")
    assert ds.x_train.shape == (25_500, 3, 32, 32) and ds.x_train.max() == 1.0
    assert np.bincount(ds.y_train).tolist() == [100] * 5 + [5000] * 5
    assert np.bincount(ds.y_test).tolist() == [1000] * 10
    with tarfile.open(ds.meta["source_files"][0]["path"]) as tar:
        tar.extractall(tmp_path, filter="data")
    reference = CIFAR10(str(tmp_path), train=True, download=False)  # checks its pinned md5s
    rows = cifar.st_rows(np.array(reference.targets))
    np.testing.assert_array_equal(
        ds.x_train, reference.data[rows].transpose(0, 3, 1, 2).astype(np.float32) / 255.0)
    np.testing.assert_array_equal(ds.y_train, np.array(reference.targets)[rows])
