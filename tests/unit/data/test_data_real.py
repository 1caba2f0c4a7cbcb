"""The real datasets (skipped unless their files are on the search path; CI sets DPMINIMAX_DATA).

Reference numbers: the public files (Adult 45,222 rows, 102 features, 24.8% positive, 32.5% female;
Credit 30,000 rows, 85 features, 22.1% default, 60.4% female) and the official MNIST and
Fashion-MNIST label counts.
"""

from __future__ import annotations

import numpy as np
import pytest
from realdata import pooled, real

from dpminimax.data import load_dataset

MNIST_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


pytestmark = pytest.mark.usefixtures("offline_data")


@real("adult")
def test_adult():
    ds = load_dataset("adult")
    assert (ds.meta["n_train"], ds.meta["n_test"]) == (33_916, 11_306)
    assert ds.x_train.shape[1] == len(ds.feature_names) == 102
    assert pooled(ds, "y").sum() == 11_208 and pooled(ds, "s").sum() == 14_695
    assert pooled(ds, "s").mean() == pytest.approx(0.325, abs=5e-4)
    assert pooled(ds, "y").mean() == pytest.approx(0.248, abs=5e-4)
    assert all(f["verified_by"] == "sha256" for f in ds.meta["source_files"])
    assert load_dataset("adult", max_rows=200).x_train.shape == (150, 102)


@real("credit-card")
def test_credit_card():
    ds = load_dataset("credit-card")
    assert (ds.meta["n_train"], ds.meta["n_test"]) == (22_500, 7_500)
    assert ds.x_train.shape[1] == len(ds.feature_names) == 85
    assert pooled(ds, "y").sum() == 6_636
    assert pooled(ds, "y").mean() == pytest.approx(0.221, abs=5e-4)
    assert pooled(ds, "s").mean() == pytest.approx(0.604, abs=5e-4)


@real("mnist")
def test_mnist():
    ds = load_dataset("mnist")
    assert ds.x_train.shape == (60_000, 1, 28, 28) and ds.x_test.shape == (10_000, 1, 28, 28)
    assert np.bincount(ds.y_train).tolist() == MNIST_TRAIN_COUNTS
    assert np.bincount(ds.y_test).tolist() == MNIST_TEST_COUNTS
    assert ds.x_train.dtype == np.float32 and ds.x_train.max() == 1.0


@real("fashion-mnist")
def test_fashion_mnist():
    ds = load_dataset("fashion-mnist", max_rows=1000)
    assert ds.x_train.shape == ds.x_test.shape == (1000, 1, 28, 28)
    assert ds.label_names[0] == "T-shirt/top" and len(ds.label_names) == 10
