"""Parkinsons, Heart and ACSEmployment on small files in their exact canonical formats.

Parsers are tested directly; ``load_dataset`` runs with the registry pinned to the samples' own
sha256 (the real files are accepted by their content checks, tested separately).
"""

from __future__ import annotations

import dataclasses
import zipfile

import numpy as np
import pandas as pd
import pytest

from dpminimax.data import (
    ChecksumMismatchError,
    DatasetNotFoundError,
    get_dataset_spec,
    heart,
    load_dataset,
    locate,
    parkinsons,
    write_canonical_sample,
)
from dpminimax.data import acs_employment as acs
from dpminimax.data.splits import train_test_indices


def test_parkinsons_label_is_total_updrs_above_the_whole_file_median(tmp_path):
    [path] = write_canonical_sample("parkinsons", tmp_path, n_rows=101, seed=1)
    assert path.read_text().splitlines()[0] == ",".join(parkinsons.COLUMNS)
    raw = pd.read_csv(path)
    table = parkinsons.load_parkinsons({parkinsons.FILENAME: path})
    median = raw["total_UPDRS"].median()
    assert np.array_equal(table.y, (raw["total_UPDRS"] > median).to_numpy())
    assert table.y.sum() == 50  # odd row count: the median row itself is not above the median
    assert np.array_equal(table.s, raw["sex"].to_numpy()) and table.group_names == ["male",
                                                                                     "female"]
    assert len(table.numeric) == 19 and table.categorical == []
    assert not {"subject#", "sex", "total_UPDRS"} & set(table.numeric)


def test_parkinsons_end_to_end_has_19_standardised_features(samples):
    samples("parkinsons", 120, seed=2)
    ds = load_dataset("parkinsons", split_seed=5)
    assert ds.x_train.shape == (90, 19) and ds.x_test.shape == (30, 19)
    assert ds.feature_names == parkinsons.FEATURES and ds.feature_names[2] == "motor_UPDRS"
    np.testing.assert_allclose(ds.x_train.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(ds.x_train.std(axis=0, ddof=1), 1, atol=1e-5)
    assert ds.meta["source_files"][0]["verified_by"] == "sha256"
    assert load_dataset("parkinsons", max_rows=40).x_train.shape == (30, 19)


def test_heart_keeps_sex_as_a_feature_and_splits_70_30_by_default(samples):
    [path] = samples("heart", 200, seed=3)
    first = path.read_text().splitlines()
    assert first[0] == ",".join(heart.COLUMNS) and first[1].split(",")[0] in ("0.0", "1.0")
    raw = pd.read_csv(path)
    ds = load_dataset("heart", split_seed=9)
    assert (ds.meta["n_train"], ds.meta["n_test"]) == (140, 60)
    assert ds.meta["split"]["test_fraction"] == 0.3
    assert ds.x_train.shape[1] == len(ds.feature_names) == 21 and "Sex" in ds.feature_names
    assert "HeartDiseaseorAttack" not in ds.feature_names
    train, _ = train_test_indices(200, seed=9, test_fraction=0.3)
    np.testing.assert_array_equal(ds.y_train, raw["HeartDiseaseorAttack"].to_numpy()[train])
    np.testing.assert_array_equal(ds.s_train, raw["Sex"].to_numpy()[train])
    assert ds.group_names == ["female", "male"]
    np.testing.assert_allclose(ds.x_train.mean(axis=0), 0, atol=1e-5)
    assert load_dataset("heart", test_fraction=0.5).meta["n_test"] == 100


def test_acs_sample_is_a_pums_zip(tmp_path):
    [path] = write_canonical_sample("acs-employment", tmp_path, n_rows=30, seed=0)
    assert path.name == "csv_pal.zip"
    with zipfile.ZipFile(path) as archive:
        assert archive.namelist() == ["psam_p01.csv"]
        lines = archive.read("psam_p01.csv").decode().splitlines()
    assert lines[0].startswith("RT,SERIALNO,DIVISION,SPORDER,PUMA,REGION,ST,ADJINC,PWGTP,AGEP")
    assert lines[1].startswith("P,201") and ",," in "".join(lines[1:])  # empty = not applicable


def test_acs_employment_follows_folktables(tmp_path):
    [path] = write_canonical_sample("acs-employment", tmp_path, n_rows=400, seed=4)
    raw = acs.read_pums_persons(path, [*acs.FEATURES, "ESR"])
    assert raw["ESR"].isna().any() and raw["ESP"].isna().any()
    table = acs.load_acs_employment({acs.ZIP_NAME: path})
    assert table.numeric == acs.FEATURES and len(table.numeric) == 16 and len(table.y) == 400
    assert np.array_equal(table.y, (raw["ESR"] == 1).to_numpy())  # missing ESR -> not employed
    assert np.array_equal(table.frame.to_numpy(), raw[acs.FEATURES].fillna(-1).to_numpy())
    assert np.array_equal(table.s, raw["RAC1P"].to_numpy() - 1)
    assert len(table.group_names) == 9 and table.group_names[0] == "White"
    assert table.label_names == ["Unemployed", "Employed"]

    filtered = acs.load_acs_employment({acs.ZIP_NAME: path}, age_range=(16, 90))
    keep = ((raw["AGEP"] > 16) & (raw["AGEP"] < 90)).to_numpy()
    assert 0 < keep.sum() < 400 and len(filtered.y) == keep.sum()
    assert np.array_equal(filtered.y, table.y[keep])
    assert filtered.frame["AGEP"].between(17, 89).all()


def test_acs_end_to_end_and_the_age_filtered_variant(samples):
    samples("acs-employment", 200, seed=5)
    ds = load_dataset("acs-employment")
    assert ds.x_train.shape == (150, 16) and ds.meta["n_groups"] == 9
    assert set(np.unique(np.concatenate([ds.s_train, ds.s_test]))) <= set(range(9))
    samples("acs-employment-age16-90", 200, seed=5)  # same folder: overwrites the sample
    assert get_dataset_spec("acs-employment-age16-90").folder == "acs-employment"
    filtered = load_dataset("acs-employment-age16-90")
    assert filtered.meta["split"]["n_rows_total"] < 200


def test_content_checks_accept_the_canonical_shape_only(tmp_path):
    [path] = write_canonical_sample("heart", tmp_path / "h", n_rows=7, seed=0)
    check = heart.FILES[0].content_check
    with pytest.raises(ChecksumMismatchError, match="253680 data rows, found .* and 7 data rows"):
        check(path)
    heart.csv_content_check(heart.COLUMNS, 7, heart.PAGE)(path)  # the same shape is accepted
    [park] = write_canonical_sample("parkinsons", tmp_path / "p", n_rows=5, seed=0)
    with pytest.raises(ChecksumMismatchError, match="5875 data rows"):
        parkinsons.FILES[0].content_check(park)

    [zipped] = write_canonical_sample("acs-employment", tmp_path / "a", n_rows=20, seed=0)
    acs.check_acs_content(zipped)
    frame = acs.read_pums_persons(zipped, ["RT", "SERIALNO", "ST", *acs.FEATURES, "ESR"])
    frame.loc[3, "ST"] = 28
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr(acs.CSV_NAME, frame.to_csv(index=False))
    with pytest.raises(ChecksumMismatchError, match="other than Alabama"):
        acs.check_acs_content(zipped)
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(ChecksumMismatchError, match="not the canonical PUMS zip"):
        acs.check_acs_content(tmp_path / "bad.zip")


def test_located_file_without_sha256_is_accepted_by_content_only(env):
    [path] = write_canonical_sample("parkinsons", env / "shared" / "parkinsons", 9, seed=0)
    checked = []
    file = dataclasses.replace(parkinsons.FILES[0], content_check=checked.append)
    [found] = locate.obtain("parkinsons", [file])
    assert found.path == path and found.verified_by.startswith("content") and checked == [path]
    with pytest.raises(ChecksumMismatchError, match="5875"):
        locate.obtain("parkinsons", parkinsons.FILES)


@pytest.mark.parametrize("name, filename, source", [
    ("parkinsons", "parkinsons_updrs.data", parkinsons.URL),
    ("heart", heart.FILENAME, "kaggle.com/datasets/alexteboul"),
    ("acs-employment", "csv_pal.zip", "pums/2018/5-Year/csv_pal.zip"),
])
def test_missing_files_give_one_clear_error(env, name, filename, source):
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset(name)
    message = str(info.value)
    for expected in (filename, source, str(env / "raw" / name), str(env / "shared"),
                     "DPMINIMAX_DATA"):
        assert expected in message
    if name == "heart":
        assert "requires a login" in message and "archive.zip" in message
