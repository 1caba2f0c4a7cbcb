"""The real RaCO-DP datasets (skipped unless their files are on the search path).

Reference numbers from the public files: Parkinsons 5,875 rows, 2,934 above the median, 1,867
female; Heart 253,680 rows, 21 features; CelebA official splits 162,770 / 19,867 / 19,962.
"""

from __future__ import annotations

import pytest
from realdata import pooled, real

from dpminimax.data import load_dataset

pytestmark = pytest.mark.usefixtures("offline_data")


@real("parkinsons")
def test_parkinsons():
    ds = load_dataset("parkinsons")
    assert (ds.meta["n_train"], ds.meta["n_test"], ds.meta["n_features"]) == (4_406, 1_469, 19)
    assert pooled(ds, "y").sum() == 2_934 and pooled(ds, "s").sum() == 1_867


@real("heart")
def test_heart():
    ds = load_dataset("heart")
    assert (ds.meta["n_train"], ds.meta["n_test"], ds.meta["n_features"]) == (177_576, 76_104, 21)
    assert pooled(ds, "y").mean() == pytest.approx(0.094, abs=5e-3)


@real("acs-employment")
def test_acs_employment():
    ds = load_dataset("acs-employment")
    assert ds.meta["n_features"] == 16 and ds.meta["n_groups"] == 9


@real("celeba")
def test_celeba():
    ds = load_dataset("celeba")
    assert (ds.meta["n_train"], ds.meta["n_test"]) == (162_770, 19_962)
    assert len(ds.meta["valid"]["image_ids"]) == 19_867
