"""Dominance between trade-off curves (report.compare.dominance): the two measures on hand-made
curves with a known answer, and their bootstrap over seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpminimax.report.claims.reference import load_claims
from dpminimax.report.compare.dominance import (
    dominance,
    dominated_share,
    error_at,
    error_gap,
    measured_dominance,
    pareto_front,
)

ROOT = Path(__file__).resolve().parents[4]

# (error, violation) of hand-made curves: A is a line from (v 0, e 0.3) to (v 0.2, e 0.1);
# CROSSING goes from (0, 0.25) to (0.2, 0.15), below A up to v = 0.1 and above it after.
A = (np.array([0.3, 0.2, 0.1]), np.array([0.0, 0.1, 0.2]))
CROSSING = (np.array([0.25, 0.15]), np.array([0.0, 0.2]))


def test_pareto_front_drops_dominated_points_and_sorts_by_violation():
    error = np.array([0.2, 0.1, 0.3, 0.1, 0.15, 0.25])
    violation = np.array([0.1, 0.3, 0.05, 0.3, 0.2, 0.2])  # (0.25, 0.2) is dominated
    front_error, front_violation = pareto_front(error, violation)
    assert front_error.tolist() == [0.3, 0.2, 0.15, 0.1]
    assert front_violation.tolist() == [0.05, 0.1, 0.2, 0.3]


def test_error_within_a_budget_is_linear_on_the_front_flat_above_and_undefined_below():
    front = pareto_front(*A)
    assert error_at(front, 0.05) == pytest.approx(0.25)
    assert error_at(front, 0.5) == pytest.approx(0.1)  # the last point is within any budget
    assert np.isnan(error_at(pareto_front(A[0], A[1] + 0.1), 0.05))


def test_error_gap_of_a_dominating_crossing_and_identical_curve():
    assert error_gap((A[0] - 0.05, A[1]), A) == pytest.approx(-0.05)
    assert error_gap(A, (A[0] - 0.05, A[1])) == pytest.approx(0.05)
    # A - CROSSING = 0.05 - v / 2 on [0, 0.2]: mean 0 (A worse below 0.1, better above)
    assert error_gap(A, CROSSING) == pytest.approx(0.0, abs=1e-12)
    assert error_gap(A, A) == 0.0


def test_error_gap_against_one_point_averages_over_the_budgets_from_its_violation():
    # Tran 2021b-like point (v 0.1, e 0.2): A's error over [0.1, 0.2] is 0.15 on average
    assert error_gap(A, (np.array([0.2]), np.array([0.1]))) == pytest.approx(-0.05)
    # a point at violation 0 (the majority predictor): compared over A's whole range
    assert error_gap(A, (np.array([0.25]), np.array([0.0]))) == pytest.approx(-0.05)


def test_dominated_share_of_a_dominating_crossing_and_identical_curve():
    assert dominated_share((A[0] - 0.05, A[1]), A) == 1.0
    assert dominated_share(A, (A[0] - 0.05, A[1])) == 0.0
    assert dominated_share(A, CROSSING) == 0.5     # (0.2, 0.15) is beaten, (0, 0.25) is not
    # (0, 0.3) is beaten, (0.1, 0.2) lies on CROSSING (equal: not beaten), (0.2, 0.1) is not
    assert dominated_share(CROSSING, A) == pytest.approx(1 / 3)
    assert dominated_share(A, A) == 0.0            # equal is not dominated


def _runs(offset: float, noise: float, seeds: int = 5, seed: int = 0) -> pd.DataFrame:
    """DP-FERMI on A's curve minus ``offset`` over lambda, Tran 2021a on A's curve over gamma and
    Tran 2021b at (v 0.1, e 0.2), with Gaussian noise per run; two epsilons, majority error 0.25."""
    rng = np.random.default_rng(seed)
    rows = []
    for eps in (1.0, 3.0):
        for s in range(seeds):
            for i, (e, v) in enumerate(zip(*A, strict=True)):
                rows.append({"method": "dpfermi", "p_lam": float(i), "test_error": e - offset,
                             "dp_violation": v})
                rows.append({"method": "tran2021a", "p_gamma": float(i), "test_error": e,
                             "dp_violation": v})
            rows.append({"method": "tran2021b", "p_alpha": 0.02, "test_error": 0.2,
                         "dp_violation": 0.1})
            for row in rows[-7:]:
                row.update(experiment="fig", dataset="adult", epsilon=eps, seed=s,
                           trivial_test_error=0.25, trivial_dp_violation=0.0)
    runs = pd.DataFrame(rows)
    runs["test_error"] += rng.normal(0.0, noise, len(runs))
    runs["dp_violation"] += rng.normal(0.0, noise, len(runs))
    return runs


SPEC = {"statistic": "error_gap", "violation": "dp_violation", "method": "dpfermi",
        "against": ["tran2021a", "tran2021b"], "over": "max"}


def test_bootstrap_interval_excludes_zero_for_a_dominating_curve():
    result = dominance(_runs(offset=0.05, noise=0.005), SPEC, draws=300)
    assert result["panels"] == 2
    assert result["high"] < 0.0
    assert result["low"] <= result["value"] <= result["high"]
    assert result["value"] == pytest.approx(-0.05, abs=0.01)


def test_bootstrap_interval_contains_zero_for_identical_curves():
    gap = dominance(_runs(offset=0.0, noise=0.005), {**SPEC, "against": ["tran2021a"],
                                                     "over": "mean"}, draws=300)
    assert gap["low"] < 0.0 < gap["high"]
    share = dominance(_runs(offset=0.0, noise=0.005),
                      {**SPEC, "statistic": "dominated_share", "against": ["tran2021a"],
                       "over": "mean"}, draws=300)
    assert share["low"] < 0.5 < share["high"]  # a coin flip per point


def test_bootstrap_is_deterministic_and_exact_without_noise():
    runs = _runs(offset=0.05, noise=0.005)
    assert dominance(runs, SPEC, draws=200) == dominance(runs, SPEC, draws=200)
    assert dominance(runs, SPEC, draws=200, seed=1) != dominance(runs, SPEC, draws=200)
    exact = dominance(_runs(offset=0.05, noise=0.0), SPEC, draws=50)
    assert exact["low"] == pytest.approx(exact["value"])
    assert exact["high"] == pytest.approx(exact["value"])


def test_the_trivial_point_replaces_the_method():
    result = dominance(_runs(offset=0.05, noise=0.0), SPEC, draws=20)
    # the majority point (0.25, 0) against Tran 2021a (A): over A's range, 0.25 - 0.2 = 0.05;
    # against Tran 2021b's point (0.2 at v >= 0.1): 0.05; the max is 0.05 (the trivial fails)
    assert result["trivial"]["value"] == pytest.approx(0.05)
    against_trivial = dominance(_runs(offset=0.05, noise=0.0),
                                {**SPEC, "against": ["trivial"]}, draws=20)
    assert against_trivial["value"] == pytest.approx((0.2 - 0.05) - 0.25)  # mean of A - 0.05
    assert against_trivial["trivial"]["value"] == 0.0  # the trivial point against itself
    without = _runs(offset=0.05, noise=0.0).drop(columns=["trivial_test_error"])
    assert "trivial" not in dominance(without, SPEC, draws=20)


def test_reported_curves_are_fixed_baselines_of_their_dataset_and_epsilon():
    reported = pd.DataFrame({"constraint": "demographic_parity", "dataset": "adult",
                             "epsilon": [1.0, 1.0, 9.0], "method": "tran2021a",
                             "test_error": [0.3, 0.1, 0.0], "violation": [0.0, 0.2, 0.0]})
    result = dominance(_runs(offset=0.05, noise=0.0),
                       {**SPEC, "against": ["tran2021a (reported)"], "over": "mean"},
                       reported=reported, draws=20)
    assert result["panels"] == 1  # eps 3 has no reported curve, eps 9 no run
    assert result["value"] == pytest.approx(-0.05)
    assert dominance(_runs(0.05, 0.0), {**SPEC, "against": ["jagielski2019"]}) is None


def test_panels_are_selected_by_experiment_dataset_and_epsilon():
    runs = _runs(offset=0.05, noise=0.0)
    assert dominance(runs, {**SPEC, "epsilons": [3.0]}, draws=5)["panels"] == 1
    assert dominance(runs, {**SPEC, "datasets": ["credit-card"]}, draws=5) is None
    assert dominance(runs, {**SPEC, "experiments": ["other"]}, draws=5) is None


def test_the_papers_dominance_claims_are_measured_from_their_blocks():
    claims = load_claims(ROOT / "papers" / "dpfermi" / "claims.yaml")
    runs = _runs(offset=0.05, noise=0.005).assign(experiment="fig2_adult_dp")
    measured = measured_dominance(runs, claims, draws=50)
    assert set(measured) == {"dp_outperforms_all_baselines", "adult_retired_superior_tradeoffs"}
    # A - 0.05 beats every point of Tran 2021a (A) and Tran 2021b, but its violation 0 only
    # up to the noise: (0.3, 0) is out of its reach in some panels
    share = measured["dp_outperforms_all_baselines"]
    assert 0.8 <= share["value"] <= 1.0 and share["low"] <= share["value"] <= share["high"]
    exact = measured_dominance(_runs(offset=0.05, noise=0.0).assign(experiment="fig2_adult_dp"),
                               claims, draws=5)["dp_outperforms_all_baselines"]
    assert exact["value"] == 1.0
    # the majority point (0.25, 0) beats Tran 2021a's (0.3, 0) only: 1/3 and 0, mean 1/6
    assert exact["trivial"]["value"] == pytest.approx(1 / 6)
    racodp = load_claims(ROOT / "papers" / "racodp" / "claims.yaml")
    blocks = [c for c in racodp if "dominance" in c["measure"]]
    assert {c["measure"]["metric"] for c in blocks} == {"dominated_share"}


def test_a_groups_bootstrap_does_not_depend_on_the_other_groups():
    """Adding an experiment to a paper's runs leaves every other group's resampled means (and
    the claims' intervals built on them) as they were; the draws are the seed's and the key's."""
    from dpminimax.report.compare.dominance import group_seed, resampled_means

    rng = np.random.default_rng(0)
    runs = pd.DataFrame({"experiment": ["a"] * 5 + ["b"] * 5, "epsilon": 1.0,
                         "test_error": rng.random(10), "dp_violation": rng.random(10)})
    extra = pd.DataFrame({"experiment": ["0_first"] * 4, "epsilon": 1.0,
                          "test_error": rng.random(4), "dp_violation": rng.random(4)})
    keys, values = ["experiment", "epsilon"], ["test_error", "dp_violation"]
    groups, means = resampled_means(runs, keys, values, draws=50, seed=3)
    more_groups, more = resampled_means(pd.concat([extra, runs]), keys, values, draws=50, seed=3)
    assert list(more_groups["experiment"]) == ["0_first", "a", "b"]
    np.testing.assert_array_equal(more[:, 1:], means)
    assert not np.array_equal(resampled_means(runs, keys, values, draws=50, seed=4)[1], means)
    assert group_seed(("a", 1)) == group_seed(("a", np.float64(1.0))) != group_seed(("b", 1.0))
