"""Parsers of the canonical formats, run on small files written in those exact formats."""

from __future__ import annotations

import gzip
import sys
import types

import numpy as np
import pandas as pd
import pytest

from dpminimax.data import adult, credit_card, images, write_canonical_sample


@pytest.fixture
def adult_files(tmp_path):
    write_canonical_sample("adult", tmp_path, n_rows=60, seed=3)
    return {name: tmp_path / name for name in ("adult.data", "adult.test")}


def test_adult_sample_is_in_the_uci_format(adult_files):
    data = adult_files["adult.data"].read_text().splitlines()
    test = adult_files["adult.test"].read_text().splitlines()
    assert test[0] == "|1x3 Cross validator" and data[-1] == test[-1] == ""
    assert all(line.endswith(("<=50K.", ">50K.")) for line in test[1:-1])
    assert all(line.endswith(("<=50K", ">50K")) and ", " in line for line in data[:-1])


def test_adult_parser_strips_header_and_dots_and_drops_question_marks(adult_files):
    raw = pd.concat([adult.read_adult_file(p) for p in adult_files.values()], ignore_index=True)
    assert len(raw) == 60 + 30 and set(raw["income"]) <= {"<=50K", ">50K"}
    table = adult.load_adult(adult_files)
    complete = ~raw.isna().any(axis=1)
    assert 0 < complete.sum() < 90 and len(table.y) == complete.sum()
    assert not table.frame.isin(["?"]).any().any()
    assert np.array_equal(table.y, (raw.loc[complete, "income"] == ">50K").to_numpy())
    assert np.array_equal(table.s, (raw.loc[complete, "sex"] == "Female").to_numpy())
    assert table.group_names == ["Male", "Female"] and "sex" not in table.categorical


def test_adult_parser_rejects_unknown_labels(tmp_path):
    (tmp_path / "adult.data").write_text(
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
        "Male, 2174, 0, 40, United-States, maybe\n")
    (tmp_path / "adult.test").write_text("|1x3 Cross validator\n")
    with pytest.raises(ValueError, match="maybe"):
        adult.load_adult({n: tmp_path / n for n in ("adult.data", "adult.test")})


def test_credit_merges_education_and_marriage_and_codes_sex(tmp_path):
    [path] = write_canonical_sample("credit-card", tmp_path, n_rows=400, seed=1)
    raw = pd.read_csv(path)
    assert list(raw.columns) == credit_card.COLUMNS
    assert {0, 5, 6} <= set(raw["EDUCATION"]) and 0 in set(raw["MARRIAGE"])
    table = credit_card.load_credit_card({credit_card.CSV_NAME: path})
    assert sorted(table.frame["EDUCATION"].unique()) == [1, 2, 3, 4]
    assert sorted(table.frame["MARRIAGE"].unique()) == [1, 2, 3]
    assert (table.frame["EDUCATION"] == 4).sum() == raw["EDUCATION"].isin([0, 4, 5, 6]).sum()
    assert np.array_equal(table.s, (raw["SEX"] == 2).to_numpy())
    assert np.array_equal(table.y, raw["default payment next month"].to_numpy())
    assert "SEX" not in table.numeric + table.categorical and len(table.numeric) == 14


def test_credit_reader_accepts_the_spreadsheet_header_row(tmp_path):
    [path] = write_canonical_sample("credit-card", tmp_path, n_rows=5, seed=0)
    lines = path.read_text().splitlines()
    x_row = ",".join(["", *(f"X{i}" for i in range(1, 24)), "Y"])
    (tmp_path / "two_headers.csv").write_text("\n".join([x_row, *lines]) + "\n")
    pd.testing.assert_frame_equal(credit_card.read_credit_csv(tmp_path / "two_headers.csv"),
                                  credit_card.read_credit_csv(path))


def test_credit_content_check_rejects_wrong_counts(tmp_path):
    [path] = write_canonical_sample("credit-card", tmp_path, n_rows=10, seed=0)
    with pytest.raises(credit_card.ChecksumMismatchError, match="30000"):
        credit_card.check_credit_content(path)


def test_credit_fetch_converts_the_spreadsheet(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "xlrd", types.ModuleType("xlrd"))
    [sample] = write_canonical_sample("credit-card", tmp_path / "sample", n_rows=20, seed=0)
    monkeypatch.setattr(credit_card, "download", lambda url, dest: dest.write_bytes(b""))
    monkeypatch.setattr(pd, "read_excel", lambda path, header, engine: pd.read_csv(sample))
    credit_card.fetch_credit_csv(tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_bytes() == sample.read_bytes()


def test_credit_fetch_without_xlrd_says_what_to_install(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_xlrd(name, *args, **kwargs):
        if name == "xlrd":
            raise ImportError("No module named 'xlrd'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_xlrd)
    with pytest.raises(ImportError, match="pip install xlrd"):
        credit_card.fetch_credit_csv(tmp_path / "out.csv")


def test_idx_round_trip_through_torchvision(tmp_path, monkeypatch):
    monkeypatch.setenv("DPMINIMAX_CACHE", str(tmp_path / "cache"))
    paths = {p.name: p for p in write_canonical_sample("mnist", tmp_path / "raw", 7, seed=2)}
    with gzip.open(paths["train-images-idx3-ubyte.gz"]) as stream:
        header = stream.read(16)
    assert header == bytes.fromhex("00000803") + (7).to_bytes(4, "big") + bytes.fromhex(
        "0000001c0000001c")
    splits = images.load_mnist(paths)
    assert (tmp_path / "cache" / "MNIST" / "raw" / "t10k-labels-idx1-ubyte").is_file()
    rng = np.random.default_rng(2)
    expected = {}
    for part, rows in (("train", 7), ("t10k", 1)):   # a sixth as many test images
        expected[part] = (rng.integers(0, 256, (rows, 28, 28), dtype=np.uint8),
                          rng.integers(0, 10, rows, dtype=np.uint8))
    assert np.array_equal(splits.x_train[:, 0], expected["train"][0])
    assert np.array_equal(splits.y_test, expected["t10k"][1])
    assert splits.x_train.shape == (7, 1, 28, 28) and splits.y_train.dtype == np.int64
    assert len(splits.label_names) == 10


def test_idx_cache_is_refreshed_when_the_source_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("DPMINIMAX_CACHE", str(tmp_path / "cache"))
    first = {p.name: p for p in write_canonical_sample("fashion-mnist", tmp_path / "a", 3, seed=0)}
    second = {p.name: p for p in write_canonical_sample("fashion-mnist", tmp_path / "b", 4, 1)}
    assert len(images.load_fashion_mnist(first).y_train) == 3
    assert len(images.load_fashion_mnist(second).y_train) == 4
    assert len(images.load_fashion_mnist(first).y_train) == 3


def test_idx_cache_is_rewritten_when_the_cached_file_was_edited(tmp_path, monkeypatch):
    """The gunzipped copy is reused only while its own bytes are the ones written from the
    verified source: an edited cached file (same source) is replaced, not read."""
    monkeypatch.setenv("DPMINIMAX_CACHE", str(tmp_path / "cache"))
    paths = {p.name: p for p in write_canonical_sample("fashion-mnist", tmp_path / "a", 3, 0)}
    labels = images.load_fashion_mnist(paths).y_train.copy()
    cached = tmp_path / "cache" / "FashionMNIST" / "raw" / "train-labels-idx1-ubyte"
    data = bytearray(cached.read_bytes())
    data[8] = (data[8] + 1) % 10  # the first training label
    cached.write_bytes(bytes(data))
    assert np.array_equal(images.load_fashion_mnist(paths).y_train, labels)
