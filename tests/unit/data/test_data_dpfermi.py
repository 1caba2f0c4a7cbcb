"""DP-FERMI's remaining datasets on small files in their canonical formats: Retired Adult
(``adult_reconstruction.csv``) and UTK-Face (``UTKFace.tar.gz``), plus the real files when present.

Parsers are tested directly; ``load_dataset`` runs with the registry pinned to the samples' own
sha256 (the real files are accepted by their content checks, tested separately).
"""

from __future__ import annotations

import csv
import io
import tarfile

import numpy as np
import pytest
from PIL import Image
from realdata import pooled, real
from torchvision import transforms

from dpminimax.data import (
    ChecksumMismatchError,
    DatasetNotFoundError,
    get_dataset_spec,
    load_dataset,
    write_canonical_sample,
)
from dpminimax.data import retired_adult as ra
from dpminimax.data import utkface as utk
from dpminimax.data.splits import train_test_indices

# one-hot width of each categorical column with the UCI Adult levels (adult.names without '?')
ADULT_LEVELS = {"workclass": 7, "education": 16, "marital-status": 7, "occupation": 14,
                "relationship": 6, "race": 5, "native-country": 41}


def read_rows(path):
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))


# ----------------------------------------------------------------------------- Retired Adult


def test_retired_sample_is_the_canonical_csv(tmp_path):
    [path] = write_canonical_sample("retired-adult", tmp_path, n_rows=60, seed=1)
    assert path.name == "adult_reconstruction.csv"
    assert path.read_text().splitlines()[0] == ",".join(ra.COLUMNS)
    rows = read_rows(path)
    assert len(rows) == 60 and "fnlwgt" not in rows[0] and "sex" not in rows[0]
    empty = [r for r in rows if "" in r.values()]
    assert empty  # missing values are empty fields
    frame = ra.read_retired_file(path)
    assert frame.isna().any(axis=1).sum() == len(empty)


def test_retired_label_is_income_above_50000_and_gender_is_the_group(tmp_path):
    [path] = write_canonical_sample("retired-adult", tmp_path, n_rows=300, seed=2)
    complete = [r for r in read_rows(path) if "" not in r.values()]
    table = ra.load_retired_adult({ra.FILENAME: path})
    assert len(table.y) == len(complete) < 300
    expected_y = [int(float(r["income"]) > 50_000) for r in complete]
    assert table.y.tolist() == expected_y
    incomes = [float(r["income"]) for r in complete]
    assert {50_000.0, 50_001.0} <= set(incomes)  # both sides of the threshold are present
    assert all(y == (i == 50_001.0) for y, i in zip(table.y, incomes, strict=True)
               if i in (50_000.0, 50_001.0))
    assert table.s.tolist() == [int(r["gender"] == "Female") for r in complete]
    assert table.group_names == ["Male", "Female"] and table.label_names == ra.LABELS
    assert table.numeric == ["age", "education-num", "capital-gain", "capital-loss",
                             "hours-per-week"]
    assert not {"gender", "income"} & set(table.numeric + table.categorical)


def test_retired_end_to_end_has_101_features_with_every_level(samples):
    [path] = samples("retired-adult", 400, seed=3)
    n = sum("" not in r.values() for r in read_rows(path))
    ds = load_dataset("retired-adult", split_seed=7)
    assert ds.meta["n_train"] + ds.meta["n_test"] == n and ds.meta["n_test"] == n - round(0.75 * n)
    assert ds.x_train.shape[1] == ds.meta["n_features"] == len(ds.feature_names) == 101
    assert ds.feature_names[:5] == ra.NUMERIC
    for column, width in ADULT_LEVELS.items():
        assert sum(f.startswith(column + "=") for f in ds.feature_names) == width
    assert not any(f.startswith(("gender", "income", "fnlwgt")) for f in ds.feature_names)
    onehot = np.vstack([ds.x_train, ds.x_test])[:, 5:]
    assert set(np.unique(onehot)) == {0.0, 1.0} and (onehot.sum(axis=1) == 7).all()
    np.testing.assert_allclose(ds.x_train[:, :5].mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(ds.x_train[:, :5].std(axis=0, ddof=1), 1, atol=1e-5)
    assert ds.meta["source_files"][0]["verified_by"] == "sha256"
    assert ds.group_names == ["Male", "Female"]


def test_retired_content_check_wants_the_14_columns_and_49531_rows(tmp_path, monkeypatch):
    [path] = write_canonical_sample("retired-adult", tmp_path, n_rows=7, seed=0)
    with pytest.raises(ChecksumMismatchError, match="49531 data rows, found .* and 7 data rows"):
        ra.FILES[0].content_check(path)
    monkeypatch.setattr(ra, "EXPECTED_ROWS", 7)
    ra.check_retired_content(path)  # the canonical shape is accepted
    rows = read_rows(path)
    reordered = tmp_path / "reordered.csv"
    with open(reordered, "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=sorted(ra.COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    ra.check_retired_content(reordered)  # the column order is not pinned
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(path.read_text().replace("gender", "sex", 1))
    with pytest.raises(ChecksumMismatchError, match="expected the header hours-per-week"):
        ra.check_retired_content(renamed)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ChecksumMismatchError, match="found the header  and 0 data rows"):
        ra.check_retired_content(tmp_path / "empty.csv")


# ----------------------------------------------------------------------------- UTK-Face


def reference_bin(age: int) -> int:
    """The paper's ``UTKFaceDataset`` label: the first (a, b] bin holding the age, else 0."""
    bins = [(0, 10), (10, 15), (15, 20), (20, 25), (25, 30), (30, 40), (40, 50), (50, 60),
            (60, 120)]
    return next((i for i, (a, b) in enumerate(bins) if a < age <= b), 0)


def test_age_bins_follow_the_paper_code():
    pinned = {0: 0, 1: 0, 10: 0, 11: 1, 15: 1, 16: 2, 20: 2, 21: 3, 25: 3, 26: 4, 30: 4, 31: 5,
              40: 5, 41: 6, 50: 6, 51: 7, 60: 7, 61: 8, 116: 8, 120: 8}
    assert {age: utk.age_bin(age) for age in pinned} == pinned
    assert all(utk.age_bin(age) == reference_bin(age) for age in range(121))
    with pytest.raises(ValueError, match="outside"):
        utk.age_bin(121)


def test_utk_sample_is_a_tar_gz_of_canonical_names(tmp_path, monkeypatch):
    [path] = write_canonical_sample("utkface", tmp_path, n_rows=20, seed=0)
    assert path.name == "UTKFace.tar.gz"
    members = utk.archive_members(path)
    assert len(members) == 20 + utk.MALFORMED_SAMPLE
    assert all(m.startswith("UTKFace/") and m.endswith(".jpg.chip.jpg") for m in members)
    fields = [m.removeprefix("UTKFace/").split("_") for m in members]
    assert sum(len(f) == 4 for f in fields) == 20 and sum(len(f) == 3 for f in fields) == 3
    with tarfile.open(path) as tar:
        image = Image.open(io.BytesIO(tar.extractfile(members[0]).read()))
        assert image.format == "JPEG" and image.mode == "RGB"
    assert write_canonical_sample("utkface", tmp_path / "again", 20, 0)[0].read_bytes() == \
        path.read_bytes()  # reproducible bytes (no timestamps)

    with pytest.raises(ChecksumMismatchError, match="expected 23708 files .* found 23 files"):
        utk.FILES[0].content_check(path)
    monkeypatch.setattr(utk, "EXPECTED_FILES", 23)
    utk.check_utkface_content(path)
    stray = tmp_path / "stray.tar.gz"
    with tarfile.open(stray, "w:gz") as tar:
        for member in members[:22] + ["UTKFace/readme.txt"]:
            utk._add(tar, member, b"x")
    with pytest.raises(ChecksumMismatchError, match="1 of them not of that form"):
        utk.check_utkface_content(stray)
    (tmp_path / "bad.tar.gz").write_bytes(b"not an archive")
    with pytest.raises(ChecksumMismatchError, match="not the canonical UTKFace.tar.gz"):
        utk.check_utkface_content(tmp_path / "bad.tar.gz")


def test_utk_loader_parses_age_bin_and_race_and_sets_malformed_names_aside(tmp_path):
    [path] = write_canonical_sample("utkface", tmp_path, n_rows=60, seed=4)
    index = utk.load_utkface({utk.ARCHIVE: path})
    assert len(index.names) == 60 and index.names == sorted(index.names)
    assert len(index.malformed) == 3
    assert all(len(m.split("/")[-1].split("_")) == 3 for m in index.malformed)
    ages = [int(n.split("/")[-1].split("_")[0]) for n in index.names]
    races = [int(n.split("/")[-1].split("_")[2]) for n in index.names]
    assert index.y.tolist() == [reference_bin(a) for a in ages]
    assert index.s.tolist() == races and set(races) <= set(range(5))
    assert index.size == 128


def test_utk_end_to_end_split_pixels_and_normalisation(samples, env):
    [path] = samples("utkface", 40, seed=5)
    ds = load_dataset("utkface")
    assert ds.kind == "image" and ds.meta["n_classes"] == 9 and ds.meta["n_groups"] == 5
    assert ds.x_train.shape == (30, 3, 128, 128) and ds.x_test.shape == (10, 3, 128, 128)
    assert ds.x_train.dtype == np.float32 and len(ds.feature_names) == 3 * 128 * 128
    assert ds.group_names == utk.GROUPS and ds.label_names[0] == "(0,10]"
    assert ds.meta["malformed_files"]["count"] == 3
    assert ds.meta["split"]["n_rows_total"] == 40

    index = utk.load_utkface({utk.ARCHIVE: path})
    train, test = train_test_indices(40, seed=100, test_fraction=0.25)
    np.testing.assert_array_equal(ds.y_train, index.y[train])
    np.testing.assert_array_equal(ds.s_test, index.s[test])
    # train statistics: every channel of the train split has mean 0 and std 1
    np.testing.assert_allclose(ds.x_train.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(ds.x_train.std(axis=(0, 2, 3)), 1, atol=1e-5)
    # a test image: torchvision Resize((128, 128)) + ToTensor, then the recorded mean / std
    mean, std = (np.array(ds.meta["normalisation"][k]) for k in ("mean", "std"))
    with tarfile.open(path) as tar:
        image = Image.open(io.BytesIO(tar.extractfile(index.names[test[3]]).read()))
        pixels = transforms.ToTensor()(transforms.Resize((128, 128))(image)).numpy()
    expected = (pixels - mean[:, None, None]) / std[:, None, None]
    np.testing.assert_allclose(ds.x_test[3], expected, rtol=1e-5, atol=1e-5)

    small = load_dataset("utkface", max_rows=8)
    assert (small.meta["n_train"], small.meta["n_test"]) == (6, 2)
    spec = get_dataset_spec("utkface")
    tiny = utk.prepare_utkface(spec, utk.load_utkface({utk.ARCHIVE: path}, size=32), [],
                               max_rows=None, split_seed=100, test_fraction=0.5)
    assert tiny.x_train.shape == (20, 3, 32, 32) and tiny.meta["images"]["size"] == 32


@pytest.mark.parametrize("name, filename, source", [
    ("retired-adult", "adult_reconstruction.csv", "socialfoundations/folktables"),
    ("utkface", "UTKFace.tar.gz", "drive.google.com/uc?id=0BxYys69jI14kYVM3aVhKS1VhRUk"),
])
def test_missing_files_give_one_clear_error(env, name, filename, source):
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset(name)
    message = str(info.value)
    for expected in (filename, source, str(env / "raw" / name), str(env / "shared"),
                     "DPMINIMAX_DATA"):
        assert expected in message
    if name == "utkface":
        assert "gdown" in message and utk.PAGE in message


# ----------------------------------------------------------------------------- real files


@real("retired-adult")
@pytest.mark.usefixtures("offline_data")
def test_real_retired_adult():
    ds = load_dataset("retired-adult")
    assert ds.meta["n_features"] == 101  # d = 101 after one-hot encoding
    total = ds.meta["n_train"] + ds.meta["n_test"]
    assert 45_000 < total < ra.EXPECTED_ROWS  # ~45,849 rows after cleaning
    assert 0 < pooled(ds, "s").mean() < 0.5


@real("utkface")
@pytest.mark.usefixtures("offline_data")
def test_real_utkface():
    ds = load_dataset("utkface", max_rows=200)
    malformed = ds.meta["malformed_files"]["count"]
    assert ds.meta["split"]["n_rows_total"] + malformed == utk.EXPECTED_FILES
    assert 0 < malformed <= 10  # a few files have malformed names
    assert ds.x_train.shape[1:] == (3, 128, 128) and ds.meta["n_train"] == 150
    assert set(pooled(ds, "s")) <= set(range(5)) and set(pooled(ds, "y")) <= set(range(9))
