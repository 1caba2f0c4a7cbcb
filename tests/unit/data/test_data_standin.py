"""Stand-ins: data that is neither local nor downloadable is replaced by a MARKED synthetic
sample in the canonical format, only when asked, and the mark reaches figures and claims."""

from __future__ import annotations

import pandas as pd
import pytest

from dpminimax import api
from dpminimax.data import DatasetNotFoundError, load_dataset
from dpminimax.data.standin import STANDIN_NOTE, STANDIN_ROWS
from dpminimax.report.figures import standin_datasets


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """An empty, offline search path."""
    for var, value in {"DPMINIMAX_DATA_RAW": tmp_path / "raw", "DPMINIMAX_DATA": tmp_path / "x",
                       "DPMINIMAX_CACHE": tmp_path / "cache", "DPMINIMAX_OFFLINE": "1"}.items():
        monkeypatch.setenv(var, str(value))
    return tmp_path


def test_missing_data_fails_by_default(nowhere):
    with pytest.raises(DatasetNotFoundError, match="parkinsons"):
        load_dataset("parkinsons")


def test_standin_goes_through_the_real_loader_and_is_marked(nowhere):
    data = load_dataset("parkinsons", missing_data="standin")
    assert data.meta["standin"] is True and data.meta["standin_note"] == STANDIN_NOTE
    assert "not found locally" in data.meta["standin_reason"]
    assert len(data.y_train) + len(data.y_test) == STANDIN_ROWS
    assert data.x_train.shape[1] == 19            # the real preprocessing: 19 features
    assert all("synthetic stand-in" in f["verified_by"] for f in data.meta["source_files"])


def test_real_data_is_never_replaced(nowhere, monkeypatch):
    data = load_dataset("synthetic-fair", missing_data="standin")  # no files needed
    assert "standin" not in data.meta


def test_unknown_mode_is_refused(nowhere):
    with pytest.raises(ValueError, match="missing_data"):
        load_dataset("parkinsons", missing_data="guess")


def test_standin_runs_are_stamped_in_figures_and_dropped_from_claims(tmp_path):
    runs = pd.DataFrame({
        "experiment": ["e"] * 2, "dataset": ["heart", "adult"], "method": ["dp_sgd"] * 2,
        "epsilon": [1.0, 1.0], "delta": [1e-5] * 2, "seed": [0, 0],
        "test_accuracy": [0.9, 0.8], "test_error": [0.1, 0.2], "dp_violation": [0.1, 0.1],
        "data_standin": [True, False]})
    assert standin_datasets(runs) == ["heart"]
    runs.to_parquet(tmp_path / "runs.parquet")
    out = [tmp_path / "f.png"]
    api.make_figure(tmp_path / "runs.parquet", "accuracy_vs_epsilon", out, experiment="e")
    assert out[0].stat().st_size > 0
    claims = tmp_path / "claims.yaml"
    claims.write_text("""claims:
  - id: heart_acc
    figure: Fig. 5b
    dataset: heart
    epsilon: 1.0
    method: dp_sgd
    quantity: accuracy
    value: 0.9
    unit: fraction
    comparison: approx
    tolerance: {kind: absolute, value: 0.01}
    source_quote: "x"
    measure: {metric: test_accuracy, how: mean, filter: {dataset: heart}, agg: mean}
""")
    table = api.make_claims_table(claims, tmp_path / "runs.parquet", tmp_path / "c.csv",
                                  tmp_path / "c.md")
    assert table["verdict"].iloc[0].startswith("not run: data unavailable")
