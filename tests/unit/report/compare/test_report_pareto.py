"""Cross-paper Pareto comparison: fronts, best error within a violation budget, the winner table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dpminimax.report.compare.pareto import (
    best_error_within,
    dominance_table,
    method_points,
    pareto_front,
    plot_pareto,
)


def _runs():
    """Two methods on one (dataset, epsilon), two seeds per point; A is better at loose budgets,
    B is the only one that reaches a tight budget."""
    rows = []
    for seed, jitter in ((0, -0.001), (1, 0.001)):
        for gamma, err, viol in ((0.1, 0.15, 0.12), (0.05, 0.16, 0.06), (0.2, 0.17, 0.13)):
            rows.append({"dataset": "d", "epsilon": 1.0, "method": "racodp", "seed": seed,
                         "p_gamma": gamma, "test_error": err + jitter,
                         "dp_violation": viol + jitter})
        for lam, err, viol in ((0.0, 0.155, 0.20), (1.0, 0.19, 0.008)):
            rows.append({"dataset": "d", "epsilon": 1.0, "method": "dpfermi", "seed": seed,
                         "p_lam": lam, "test_error": err + jitter,
                         "dp_violation": viol + jitter})
    return pd.DataFrame(rows)


def test_points_are_seed_means_per_trace_value():
    points = method_points(_runs(), "dp_violation")
    assert len(points) == 5 and set(points["n"]) == {2}
    row = points.loc[(points["method"] == "racodp") & (points["trace"] == 0.05)].iloc[0]
    assert row["error"] == pytest.approx(0.16) and row["violation"] == pytest.approx(0.06)


def test_front_drops_dominated_points_only():
    points = method_points(_runs(), "dp_violation")
    front = pareto_front(points.loc[points["method"] == "racodp"])
    # (0.17, 0.13) is dominated by (0.15, 0.12); the other two trade off
    assert sorted(front["trace"]) == [0.05, 0.1]


def test_best_error_within_budget():
    points = method_points(_runs(), "dp_violation")
    raco = points.loc[points["method"] == "racodp"]
    assert best_error_within(raco, 0.1) == pytest.approx(0.16)
    assert best_error_within(raco, 0.2) == pytest.approx(0.15)
    assert math.isnan(best_error_within(raco, 0.01))


def test_dominance_table_names_the_winner_at_each_budget():
    table = dominance_table(_runs(), "dp_violation", budgets=(0.01, 0.1, 0.2))
    winners = dict(zip(table["budget"], table["best_method"], strict=True))
    assert winners == {0.01: "dpfermi", 0.1: "racodp", 0.2: "racodp"}
    tight = table.loc[table["budget"] == 0.01].iloc[0]
    assert math.isnan(tight["error[racodp]"]) and tight["best_error"] == pytest.approx(0.19)


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="eo_violation"):
        method_points(_runs(), "eo_violation")


def test_figure_draws_one_front_per_method(tmp_path):
    fig = plot_pareto(_runs(), violation="dp_violation", out_paths=[tmp_path / "p.png"])
    assert (tmp_path / "p.png").stat().st_size > 0
    (ax,) = fig.axes
    assert sorted(line.get_label() for line in ax.get_lines()) == ["DP-FERMI", "RaCO-DP"]
