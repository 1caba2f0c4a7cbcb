"""RaCO-DP Fig. 4 / Fig. 6 trade-off figures: error vs violation per (dataset, epsilon)."""

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpminimax.report import ResultsTableError
from dpminimax.report.claims.reference import load_reported
from dpminimax.report.fair.tradeoff import plot_tradeoff

REPORTED = Path(__file__).resolve().parents[4] / "papers/racodp/reference/reported_baselines.csv"
EPSILONS = (0.5, 1.0, 9.0)


@pytest.fixture
def runs():
    rng = np.random.default_rng(0)
    rows = []
    for dataset, err0, viol0 in (("adult", 0.155, 0.19), ("credit-card", 0.19, 0.021)):
        for eps in (*EPSILONS, math.inf):
            for gamma in (0.2, 0.1, 0.05):
                for seed in range(3):
                    rows.append({
                        "dataset": dataset, "method": "racodp", "epsilon": eps, "seed": seed,
                        "p_gamma": gamma,
                        "test_error": err0 + 0.1 * (0.2 - gamma) + rng.normal(0, 0.002),
                        "dp_violation": viol0 * gamma / 0.2 + rng.normal(0, 0.003),
                        "eo_violation": viol0 * gamma / 0.1 + rng.normal(0, 0.003),
                    })
            if math.isfinite(eps):
                for seed in range(3):  # DP-SGD: no gamma, a single marker per panel
                    rows.append({
                        "dataset": dataset, "method": "dp_sgd", "epsilon": eps, "seed": seed,
                        "test_accuracy": 1 - err0 - rng.normal(0, 0.002),
                        "dp_violation": viol0 + rng.normal(0, 0.003),
                        "eo_violation": 2 * viol0 + rng.normal(0, 0.003),
                    })
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def reported():
    return load_reported(REPORTED)


def written(paths):
    return all(p.is_file() and p.stat().st_size > 1000 for p in paths)


def legend_texts(fig):
    return [t.get_text() for t in fig.legends[0].get_texts()]


def test_with_reported_baselines(runs, reported, tmp_path):
    paths = [tmp_path / "fig4.pdf", tmp_path / "fig4.png"]
    fig = plot_tradeoff(runs, violation="dp_violation", out_paths=paths, reported=reported)
    assert written(paths)
    assert paths[0].read_bytes().startswith(b"%PDF")
    assert paths[1].read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig4.pdf", "fig4.png"]
    # rows = datasets of our runs; columns = our epsilons and the reported ones (3 only reported)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [f"{d}, ε = {e:g}" for d in ("adult", "credit-card")
                      for e in (0.5, 1.0, 3.0, 9.0)]
    assert fig.axes[0].get_ylabel() == "Demographic parity violation"
    assert fig.axes[-1].get_xlabel() == "Misclassification error"
    labels = legend_texts(fig)
    for label in ("RaCO-DP", "RaCO-DP (ε = ∞)", "DP-SGD", "DP-FERMI (reported)",
                  "Tran et al. 2021a (reported)", "Tran et al. 2021b (reported)"):
        assert labels.count(label) == 1
    assert "Jagielski et al. 2019 (reported)" not in labels  # equalized odds only
    # the eps = 3 panel has no run of ours but still shows the reported curves
    eps3 = fig.axes[2]
    assert {line.get_label() for line in eps3.get_lines()} >= {"DP-FERMI (reported)"}
    assert plt.get_fignums() == []


def test_without_reported_and_single_seed(runs, tmp_path):
    one = runs.loc[runs["seed"] == 0]
    paths = [tmp_path / "one.pdf", tmp_path / "one.png"]
    fig = plot_tradeoff(one, violation="eo_violation", out_paths=paths)
    assert written(paths)
    assert fig.axes[0].get_ylabel() == "Equalized odds violation"
    assert len(fig.axes) == 2 * len(EPSILONS)
    assert not any("(reported)" in label for label in legend_texts(fig))


def test_equalized_odds_reported_only(reported, tmp_path):
    paths = [tmp_path / "fig6.pdf", tmp_path / "fig6.png"]
    empty = pd.DataFrame(columns=["dataset", "method", "epsilon", "seed", "test_error"])
    fig = plot_tradeoff(empty, violation="eo_violation", out_paths=paths, reported=reported,
                        datasets=["credit-card"])
    assert written(paths)
    assert [ax.get_title() for ax in fig.axes] == [
        "credit-card, ε = 0.5", "credit-card, ε = 1", "credit-card, ε = 3"]
    assert "Jagielski et al. 2019 (reported)" in legend_texts(fig)


def test_transposed_panels(runs, tmp_path):
    fig = plot_tradeoff(runs, violation="dp_violation", out_paths=[tmp_path / "t.png"],
                        panels=("epsilon", "dataset"))
    assert fig.axes[1].get_title() == "credit-card, ε = 0.5"
    with pytest.raises(ValueError, match="panels"):
        plot_tradeoff(runs, violation="dp_violation", out_paths=[], panels=("dataset", "seed"))


def test_missing_violation_column(runs, tmp_path):
    with pytest.raises(ResultsTableError, match="fnr"):
        plot_tradeoff(runs, violation="fnr", out_paths=[tmp_path / "x.png"])
    assert not (tmp_path / "x.png").exists()


def test_each_method_is_traced_over_its_own_parameter():
    from dpminimax.report.fair.tradeoff import trace_values

    runs = pd.DataFrame({"method": ["racodp", "dpfermi", "jagielski2019", "dp_sgd"],
                         "p_gamma": [0.05, None, None, None], "p_lam": [None, 0.5, None, None],
                         "p_tolerance": [None, None, 0.02, None]})
    values = trace_values(runs)
    assert values.iloc[:3].tolist() == [0.05, 0.5, 0.02]
    assert np.isnan(values.iloc[3])
