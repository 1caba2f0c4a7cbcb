"""load_dataset end to end on canonical-format samples, splits, synthetic data, save/load."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.data import (
    UnknownDatasetError,
    adult,
    credit_card,
    get_dataset_spec,
    list_datasets,
    load_dataset,
    load_prepared,
    registry,
    save_prepared,
    storage,
    write_canonical_sample,
)
from dpminimax.data.checksum import file_digest
from dpminimax.data.splits import train_test_indices
from dpminimax.data.synthetic import synthetic_fair_table


@pytest.fixture
def samples(tmp_path, monkeypatch):
    """Register canonical-format samples of a dataset (pinned to their own sha256)."""
    raw = tmp_path / "raw"
    for var, value in {"DPMINIMAX_DATA_RAW": raw, "DPMINIMAX_DATA": "",
                       "DPMINIMAX_CACHE": tmp_path / "cache", "DPMINIMAX_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, str(value))

    def use(name: str, n_rows: int, seed: int = 0):
        paths = write_canonical_sample(name, raw / name, n_rows, seed)
        spec = get_dataset_spec(name)
        files = tuple(dataclasses.replace(f, sha256=file_digest(raw / name / f.filename), md5=None)
                      for f in spec.files)
        monkeypatch.setitem(registry.DATASETS, name, dataclasses.replace(spec, files=files))
        return paths

    return use


def test_registry_lists_the_datasets_and_their_provenance():
    assert {"adult", "credit-card", "mnist", "fashion-mnist", "synthetic-fair"} <= set(
        list_datasets())
    for name in list_datasets():
        spec = get_dataset_spec(name)
        assert spec.kind in ("tabular", "image", "image-files")
        assert spec.citation and spec.licence
        assert all(f.url.startswith("http") for f in spec.files)
        assert all(len(f.sha256) == 64 if f.sha256 else f.md5 or f.content_check
                   for f in spec.files)  # no published sha256: md5 or content check
    with pytest.raises(UnknownDatasetError, match="known datasets: .*adult"):
        get_dataset_spec("adlut")


def test_adult_sample_end_to_end(samples):
    paths = samples("adult", 80)
    ds = load_dataset("adult")
    raw = pd.concat([adult.read_adult_file(p) for p in paths]).dropna()
    n = len(raw)
    width = sum(raw[c].nunique() for c in adult.CATEGORICAL)
    assert ds.meta["n_train"] + ds.meta["n_test"] == n
    assert ds.meta["n_test"] == n - round(0.75 * n)
    assert ds.x_train.shape[1] == ds.meta["n_features"] == 6 + width == len(ds.feature_names)
    assert ds.feature_names[:6] == ["age", "fnlwgt", "education-num", "capital-gain",
                                    "capital-loss", "hours-per-week"]
    assert not any(name.startswith("sex") for name in ds.feature_names)
    onehot = np.vstack([ds.x_train, ds.x_test])[:, 6:]
    assert set(np.unique(onehot)) == {0.0, 1.0} and (onehot.sum(axis=1) == 7).all()
    assert ds.meta["source_files"][0]["verified_by"] == "sha256"
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == ds.s_train.dtype == np.int64


def test_numeric_columns_are_standardised_with_train_statistics_only(samples):
    paths = samples("credit-card", 300, seed=4)
    ds = load_dataset("credit-card", split_seed=7)
    raw = pd.read_csv(paths[0])
    levels = [4, 3, *(raw[c].nunique() for c in credit_card.PAY)]
    assert ds.meta["n_features"] == ds.x_train.shape[1] == 14 + sum(levels)
    np.testing.assert_allclose(ds.x_train[:, :14].mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(ds.x_train[:, :14].std(axis=0, ddof=1), 1, atol=1e-5)
    assert np.abs(ds.x_test[:, :14].mean(axis=0)).max() > 1e-3
    train, _ = train_test_indices(300, seed=7, test_fraction=0.25)
    limit = raw["LIMIT_BAL"].to_numpy()[train]
    np.testing.assert_allclose(ds.x_train[:, 0], (limit - limit.mean()) / limit.std(ddof=1),
                               rtol=1e-5)
    np.testing.assert_array_equal(ds.s_train, raw["SEX"].to_numpy()[train] - 1)
    assert ds.group_names == ["male", "female"]


def test_split_is_deterministic_by_seed_and_max_rows_subsamples_first(samples):
    samples("credit-card", 200)
    a, b = load_dataset("credit-card", split_seed=3), load_dataset("credit-card", split_seed=3)
    c = load_dataset("credit-card", split_seed=4)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert not np.array_equal(a.y_train, c.y_train) or not np.array_equal(a.x_train, c.x_train)
    small = load_dataset("credit-card", max_rows=40, split_seed=3, test_fraction=0.5)
    assert (small.meta["n_train"], small.meta["n_test"]) == (20, 20)
    assert small.meta["split"] == {"scheme": "shuffled", "seed": 3, "test_fraction": 0.5,
                                   "max_rows": 40, "n_rows_total": 200}
    assert small.x_train.shape[1] == a.x_train.shape[1]  # one-hot levels from all rows
    train, test = train_test_indices(200, seed=3, test_fraction=0.5, max_rows=40)
    full_train, full_test = train_test_indices(200, seed=3, test_fraction=0.5)
    np.testing.assert_array_equal(np.concatenate([train, test]), np.concatenate(
        [full_train, full_test])[:40])
    with pytest.raises(ValueError):
        train_test_indices(10, seed=0, test_fraction=1.0)


def test_image_sample_end_to_end_keeps_the_canonical_split(samples):
    samples("mnist", 60)   # 60 training and 10 test images (the real files' 6 : 1)
    ds = load_dataset("mnist", max_rows=5, test_fraction=0.9)
    assert ds.x_train.shape == ds.x_test.shape == (5, 1, 28, 28)
    assert ds.x_train.dtype == np.float32 and 0.0 <= ds.x_train.min() <= ds.x_train.max() <= 1.0
    assert ds.group_names == ["all"] and not ds.s_train.any() and ds.meta["n_features"] == 784
    assert ds.meta["positive_rate"] is None and ds.meta["n_classes"] == 10
    full = load_dataset("mnist")
    assert (full.meta["n_train"], full.meta["n_test"]) == (60, 10)


def test_synthetic_fair_is_seeded_and_group_correlated():
    a, b = synthetic_fair_table(n=3000, d=5, seed=1), synthetic_fair_table(n=3000, d=5, seed=1)
    np.testing.assert_array_equal(a.frame.to_numpy(), b.frame.to_numpy())
    assert a.frame.shape == (3000, 6) and set(np.unique(a.s)) == {0, 1}
    gap = a.y[a.s == 0].mean() - a.y[a.s == 1].mean()
    assert gap > 0.1
    ds = load_dataset("synthetic-fair", max_rows=1000)
    assert (ds.meta["n_train"], ds.meta["n_test"], ds.meta["n_features"]) == (750, 250, 11)
    assert ds.meta["source_files"] == [] and ds.meta["n_groups"] == 2


def test_save_load_round_trip(tmp_path):
    ds = load_dataset("synthetic-fair", max_rows=300)
    save_prepared(ds, tmp_path / "prepared")
    assert sorted(p.name for p in (tmp_path / "prepared").iterdir()) == ["arrays.npz",
                                                                        "meta.json"]
    back = load_prepared(tmp_path / "prepared")
    for field in dataclasses.fields(ds):
        left, right = getattr(ds, field.name), getattr(back, field.name)
        if isinstance(left, np.ndarray):
            assert left.dtype == right.dtype
            np.testing.assert_array_equal(left, right)
        else:
            assert left == right
    assert json.loads((tmp_path / "prepared" / "meta.json").read_text())["meta"] == ds.meta


def test_interrupted_save_leaves_nothing_complete(tmp_path, monkeypatch):
    ds = load_dataset("synthetic-fair", max_rows=100)
    out = save_prepared(ds, tmp_path / "prepared")

    def killed(stream, **arrays):
        stream.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(storage.np, "savez", killed)
    with pytest.raises(KeyboardInterrupt):
        save_prepared(ds, out)
    assert sorted(p.name for p in out.iterdir()) == ["arrays.npz"]  # the old, complete arrays
    with pytest.raises(FileNotFoundError, match="meta.json"):
        load_prepared(out)
    fresh = tmp_path / "fresh"
    with pytest.raises(KeyboardInterrupt):
        save_prepared(ds, fresh)
    assert list(fresh.iterdir()) == []


def test_load_prepared_rejects_arrays_that_do_not_match_meta(tmp_path):
    out = save_prepared(load_dataset("synthetic-fair", max_rows=100), tmp_path / "p")
    other = save_prepared(load_dataset("synthetic-fair", max_rows=120), tmp_path / "q")
    (out / "arrays.npz").write_bytes((other / "arrays.npz").read_bytes())
    with pytest.raises(ValueError, match="does not match"):
        load_prepared(out)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(2, 500), max_rows=st.none() | st.integers(1, 600),
       test_fraction=st.floats(0.05, 0.95), seed=st.integers(0, 2**32 - 1))
def test_split_indices_partition_the_kept_rows(n, max_rows, test_fraction, seed):
    train, test = train_test_indices(n, seed=seed, test_fraction=test_fraction,
                                     max_rows=max_rows)
    kept = min(n, max_rows or n)
    assert len(train) + len(test) == kept and len(set(train) | set(test)) == kept
    assert len(train) == round((1 - test_fraction) * kept)
