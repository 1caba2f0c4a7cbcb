"""The long results table: reading, validating, summarising, writing."""

import math

import numpy as np
import pandas as pd
import pytest

from dpminimax.report import (
    IDENTITY_COLUMNS,
    ResultsTableError,
    concat_results,
    epsilon_label,
    series_table,
    summarize,
    write_table,
)
from dpminimax.report.aggregate import metric_range


def results(method="dpfermi", epsilon=1.0, accuracies=(0.8, 0.9)):
    return pd.DataFrame({
        "paper": "dpfermi", "experiment": "tradeoff", "dataset": "adult", "method": method,
        "epsilon": epsilon, "delta": 1e-5, "seed": range(len(accuracies)),
        "p_lam": 1.0, "test_accuracy": list(accuracies), "run_id": "r",
    })


def test_concat_reads_parquet_and_csv(tmp_path):
    results().to_parquet(tmp_path / "a.parquet")
    results("dp_sgd_nonprivate", math.inf).to_csv(tmp_path / "b.csv", index=False)
    table = concat_results([tmp_path / "a.parquet", str(tmp_path / "b.csv")])
    assert len(table) == 4 and set(IDENTITY_COLUMNS) <= set(table.columns)
    assert table["epsilon"].dtype == float and math.isinf(table["epsilon"].iloc[-1])


def test_concat_makes_a_text_and_number_parameter_text(tmp_path):
    """clip_dual is "bound" in one job and 5.0 in another: the stacked table holds text (the
    mixed column could not be written to parquet) and keeps missing values missing."""
    results().assign(p_clip="bound").to_parquet(tmp_path / "a.parquet")
    results().assign(p_clip=5.0).to_parquet(tmp_path / "b.parquet")
    results().to_parquet(tmp_path / "c.parquet")
    table = concat_results([tmp_path / name for name in ("a.parquet", "b.parquet", "c.parquet")])
    assert table["p_clip"].tolist()[:4] == ["bound", "bound", "5.0", "5.0"]
    assert table["p_clip"].iloc[4:].isna().all() and table["p_lam"].dtype == float
    table.to_parquet(tmp_path / "all.parquet")


def test_missing_column_names_file_and_column(tmp_path):
    path = tmp_path / "broken.parquet"
    results().drop(columns=["seed"]).to_parquet(path)
    with pytest.raises(ResultsTableError, match=r"broken\.parquet.*'seed'"):
        concat_results([path])


def test_no_files_and_unknown_format(tmp_path):
    with pytest.raises(ResultsTableError, match="no results files"):
        concat_results([])
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ResultsTableError, match="unknown results format"):
        concat_results([tmp_path / "x.json"])


def test_summarize_hand_table():
    table = pd.concat([
        results(accuracies=(1.0, 2.0, 3.0)),
        results("dp_sgd_nonprivate", math.inf, accuracies=(5.0,)),
    ]).rename(columns={"test_accuracy": "score"})  # an unbounded metric: no clipping
    summary = summarize(table, ["score"]).set_index("method")
    row = summary.loc["dpfermi"]
    assert row["mean"] == 2.0 and row["std"] == 1.0 and row["n"] == 3
    assert row["sem"] == pytest.approx(1 / np.sqrt(3))
    t_975_2 = 4.302652729911275  # Student t quantile, 2 degrees of freedom
    assert row["ci_low"] == pytest.approx(2 - t_975_2 / np.sqrt(3))
    assert row["ci_high"] == pytest.approx(2 + t_975_2 / np.sqrt(3))
    single = summary.loc["dp_sgd_nonprivate"]
    assert single["mean"] == 5.0 and single["n"] == 1
    assert np.isnan(single[["std", "sem", "ci_low", "ci_high"]].astype(float)).all()


def test_intervals_stay_in_the_metric_range():
    """Two seeds (t = 12.7) near the ends of [0, 1]: the interval is clipped to the range."""
    table = results(accuracies=(0.97, 0.99)).assign(train_loss=[0.01, 0.2], score=[0.97, 0.99])
    summary = summarize(table, ["test_accuracy", "train_loss", "score"]).set_index("metric")
    assert summary.loc["test_accuracy", "ci_high"] == 1.0
    assert summary.loc["test_accuracy", "ci_low"] > 0.8
    assert summary.loc["train_loss", "ci_low"] == 0.0
    assert summary.loc["score", "ci_high"] > 1.0  # unknown metric: unclipped
    assert metric_range("dp_violation") == (0.0, 1.0)
    assert metric_range("test_max_constraint_violation") == (-1.0, 1.0)
    assert metric_range("epsilon_spent") == (0.0, math.inf)


def test_series_labels_name_only_the_parameters_a_method_has():
    """DP-SGD has no gamma: its series is "dp_sgd", not "dp_sgd [gamma=nan]"."""
    table = pd.concat([results("racodp").assign(p_gamma=[0.01, 0.05]),
                       results("dp_sgd").assign(p_gamma=np.nan)])
    table.loc[table["method"] == "dp_sgd", "p_lam"] = [1.0, 2.0]
    labels = set(series_table(table)["method"])
    assert labels == {"racodp [lam=1.0,gamma=0.01]", "racodp [lam=1.0,gamma=0.05]",
                      "dp_sgd [lam=1.0]", "dp_sgd [lam=2.0]"}
    assert not any("nan" in label for label in labels)


def test_summarize_ignores_missing_values_and_checks_columns():
    table = results(accuracies=(0.5, 0.7, 0.9)).assign(attack_auc=[0.5, np.nan, 0.7])
    summary = summarize(table, ["test_accuracy", "attack_auc"], by=["method"])
    assert list(summary["metric"]) == ["attack_auc", "test_accuracy"]
    assert list(summary["n"]) == [2, 3]
    assert summary["mean"].tolist() == pytest.approx([0.6, 0.7])
    with pytest.raises(ResultsTableError, match="eo_violation"):
        summarize(table, ["eo_violation"])


def test_write_table_atomically(tmp_path):
    path = tmp_path / "tables" / "summary.csv"
    write_table(results(), path)
    assert pd.read_csv(path).equals(results())
    assert [p.name for p in path.parent.iterdir()] == ["summary.csv"]


def test_epsilon_label():
    assert epsilon_label(math.inf) == "∞ (non-private)"
    assert epsilon_label(0.5) == "0.5"
    assert epsilon_label(10.0) == "10"


def test_summary_columns_put_each_metrics_summary_side_by_side():
    """One row per group, each metric's mean and interval under its label, as summarize
    gives them; a group without a metric's runs has NaN there (DP-Grid's released loss)."""
    from dpminimax.report.aggregate import summarize, summary_columns

    runs = pd.DataFrame({"method": ["a"] * 3 + ["b"] * 3, "m1": [1.0, 2.0, 3.0, 4.0, 5.0, 7.0],
                         "m2": [0.1, 0.2, 0.6, None, None, None]})
    wide = summary_columns(runs, {"first": "m1", "second": "m2"}, ["method"])
    assert list(wide["method"]) == ["a", "b"]
    expected = summarize(runs, ["m1"], by=["method"])
    assert list(wide["first"]) == list(expected["mean"])
    assert list(wide["first_ci_high"]) == list(expected["ci_high"])
    assert wide.loc[0, "second"] == pytest.approx(0.3) and pd.isna(wide.loc[1, "second"])
