"""DP-FERMI's performance-gain metric, pinned on the numbers the paper plotted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpminimax.report.claims.reference import load_reported
from dpminimax.report.compare.gain import performance_gains, summarize_gains

REPORTED = (Path(__file__).resolve().parents[4] / "papers" / "racodp" / "reference"
            / "reported_baselines.csv")


def _paper_panels(constraint: str):
    table = load_reported(REPORTED)
    table = table.loc[(table["constraint"] == constraint) & (table["epsilon"] != float("inf"))]
    return (table.loc[table["method"] == "dpfermi"], table.loc[table["method"] == "tran2021b"])


def test_reconstructed_gain_is_close_to_the_papers_demographic_parity_numbers():
    gains = performance_gains(*_paper_panels("demographic_parity"))
    summary = summarize_gains(gains)
    # 15 in-range panels (Adult eps 0.5 is out of range). On the unrounded numbers
    # decoded from the repository one gets median 65.89% (the paper: 65.89%) and mean
    # 79.33% (the paper: 79.648%); our reference file holds them rounded to 4 decimals, which
    # moves the interpolation slightly: median 66.53%, mean 79.04% -- within 1 pp of the paper.
    assert summary["panels"] == 15 and summary["panels_out_of_range"] == 1
    assert summary["median_percent"] == pytest.approx(66.532, abs=0.01)
    assert summary["mean_percent"] == pytest.approx(79.039, abs=0.01)
    assert abs(summary["median_percent"] - 65.89) < 1.0
    assert abs(summary["mean_percent"] - 79.648) < 1.0
    adult_1 = gains.set_index(["dataset", "epsilon"]).loc[("adult", 1.0), "gain"]
    assert adult_1 * 100 == pytest.approx(148.00, abs=0.01)  # by hand from the 4-decimal file

def test_gain_interpolates_linearly_and_skips_out_of_range_points():
    curve = pd.DataFrame({"dataset": "d", "epsilon": 1.0, "test_error": [0.1, 0.2, 0.3],
                          "violation": [0.3, 0.1, 0.05]})
    points = pd.DataFrame({"dataset": ["d", "d"], "epsilon": [1.0, 2.0],
                           "test_error": [0.15, 0.15], "violation": [0.4, 0.4]})
    gains = performance_gains(curve, points)
    assert len(gains) == 1  # eps 2 has no curve
    assert gains["curve_violation"].iloc[0] == pytest.approx(0.2)
    assert gains["gain"].iloc[0] == pytest.approx(1.0)
    outside = performance_gains(curve, points.assign(test_error=0.35))
    assert not outside["in_range"].iloc[0] and pd.isna(outside["gain"].iloc[0])


def test_gains_measured_from_runs_use_seed_means_and_the_matching_fairness_notion():
    from dpminimax.report.compare.gain import measured_gains

    rows = []
    for seed, jitter in ((0, -0.002), (1, 0.002)):
        for lam, err, viol in ((0.0, 0.15, 0.20), (1.0, 0.19, 0.02)):
            rows.append({"method": "dpfermi", "dataset": "d", "epsilon": 1.0, "seed": seed,
                         "p_lam": lam, "p_fairness": "demographic_parity",
                         "test_error": err + jitter, "dp_violation": viol + jitter})
        rows.append({"method": "tran2021b", "dataset": "d", "epsilon": 1.0, "seed": seed,
                     "p_fairness": "demographic_parity", "test_error": 0.17 + jitter,
                     "dp_violation": 0.2 + jitter})
        # an equalized-odds run must not enter the demographic-parity gain
        rows.append({"method": "tran2021b", "dataset": "d", "epsilon": 1.0, "seed": seed,
                     "p_fairness": "equalized_odds", "test_error": 0.5, "dp_violation": 0.9})
    measured = measured_gains(pd.DataFrame(rows).assign(eo_violation=0.0))
    # DP-FERMI at error 0.17 (halfway): violation 0.11; gain (0.2 - 0.11) / 0.11
    assert measured["dp_gain_mean"]["value"] == pytest.approx(100 * 0.09 / 0.11)
    assert measured["dp_gain_median"]["value"] == measured["dp_gain_mean"]["value"]
    assert "eo_gain_mean" not in measured  # no EO panel at all
    # an EO panel whose baseline error lies outside DP-FERMI's range: the gain is undefined
    eo = pd.DataFrame(rows).assign(eo_violation=0.1)
    eo["p_fairness"] = "equalized_odds"
    eo.loc[eo["method"] == "tran2021b", "test_error"] = 0.5
    undefined = measured_gains(eo)
    assert {"eo_gain_mean", "eo_gain_median", "eo_gain_min_positive"} <= set(undefined)
    assert all(np.isnan(undefined[f"eo_gain_{kind}"][end])
               for kind in ("mean", "median", "min_positive") for end in ("value", "low", "high"))
    # just outside DP-FERMI's range on the seed means (0.19) but inside on draws where
    # both DP-FERMI seeds are seed 1's (0.192): undefined, with no interval
    eo.loc[eo["method"] == "tran2021b", "test_error"] = 0.1905
    edge = measured_gains(eo)["eo_gain_mean"]
    assert np.isnan(edge["value"]) and np.isnan(edge["low"]) and np.isnan(edge["high"])


def test_a_zero_curve_violation_leaves_the_gain_undefined_not_infinite():
    curve = pd.DataFrame({"dataset": ["d", "d"], "epsilon": [1.0, 1.0],
                          "test_error": [0.1, 0.2], "violation": [0.0, 0.0]})
    points = pd.DataFrame({"dataset": ["d"], "epsilon": [1.0], "test_error": [0.15],
                           "violation": [0.05]})
    gains = performance_gains(curve, points)
    assert bool(gains["in_range"].iloc[0]) and np.isnan(gains["gain"].iloc[0])
    assert summarize_gains(gains)["panels"] == 0


def test_gains_never_pool_experiments_and_count_only_the_claims_experiments():
    """The same method and epsilon in a figure experiment and in our cross-paper experiment are
    two panels, never one; the claims' ``measure.experiments`` keeps the figure's only."""
    from dpminimax.report.claims.reference import load_claims
    from dpminimax.report.compare.gain import gain_experiments, gains_from_runs, measured_gains

    rows = []
    for experiment, tran_error in (("fig", 0.17), ("cross", 0.19)):
        for lam, err, viol in ((0.0, 0.15, 0.20), (1.0, 0.19, 0.02)):
            rows.append({"experiment": experiment, "method": "dpfermi", "dataset": "d",
                         "epsilon": 1.0, "seed": 0, "p_lam": lam,
                         "p_fairness": "demographic_parity", "test_error": err,
                         "dp_violation": viol})
        rows.append({"experiment": experiment, "method": "tran2021b", "dataset": "d",
                     "epsilon": 1.0, "seed": 0, "p_fairness": "demographic_parity",
                     "test_error": tran_error, "dp_violation": 0.2})
    runs = pd.DataFrame(rows).assign(eo_violation=0.0)
    gains = gains_from_runs(runs, "dp_violation").set_index("experiment")
    assert gains.loc["fig", "gain"] == pytest.approx(0.09 / 0.11)     # at 0.17: 0.11
    assert gains.loc["cross", "gain"] == pytest.approx(0.18 / 0.02)   # at 0.19: 0.02
    only_figure = measured_gains(runs, {"dp": ["fig"]})
    assert only_figure["dp_gain_mean"]["value"] == pytest.approx(100 * 0.09 / 0.11)
    assert measured_gains(runs)["dp_gain_mean"]["value"] == pytest.approx(
        50 * (0.09 / 0.11 + 0.18 / 0.02))
    claims = load_claims(Path(__file__).parents[4] / "papers" / "dpfermi" / "claims.yaml")
    assert gain_experiments(claims) == {
        "dp": ["fig2_adult_dp", "fig7_credit_dp", "fig3_8_parkinsons_dp", "fig6_retired_dp"],
        "eo": ["fig9_adult_eo", "fig4_credit_eo", "fig10_retired_eo"]}


def _noisy_gain_runs(noise: float, seeds: int = 5) -> pd.DataFrame:
    """Two panels of DP-FERMI over lambda (error 0.15 -> 0.19, violation 0.2 -> 0.02) and Tran
    2021b at (0.17, 0.2): gain 0.09 / 0.11 on the means, Gaussian noise per run."""
    rng = np.random.default_rng(3)
    rows = []
    for eps in (1.0, 3.0):
        for seed in range(seeds):
            for lam, err, viol in ((0.0, 0.15, 0.20), (1.0, 0.19, 0.02)):
                rows.append({"experiment": "fig", "method": "dpfermi", "dataset": "d",
                             "epsilon": eps, "seed": seed, "p_lam": lam, "test_error": err,
                             "dp_violation": viol})
            rows.append({"experiment": "fig", "method": "tran2021b", "dataset": "d",
                         "epsilon": eps, "seed": seed, "test_error": 0.17,
                         "dp_violation": 0.2})
    runs = pd.DataFrame(rows)
    runs["dp_violation"] += rng.normal(0.0, noise, len(runs))
    return runs


def test_gain_intervals_are_a_deterministic_bootstrap_over_seeds():
    from dpminimax.report.compare.gain import measured_gains

    exact = measured_gains(_noisy_gain_runs(noise=0.0), draws=50)["dp_gain_mean"]
    assert exact == pytest.approx({"value": 100 * 0.09 / 0.11, "low": 100 * 0.09 / 0.11,
                                   "high": 100 * 0.09 / 0.11})
    runs = _noisy_gain_runs(noise=0.01)
    first = measured_gains(runs, draws=200)
    assert first == measured_gains(runs, draws=200)
    for name in ("mean", "median", "min_positive"):
        gain = first[f"dp_gain_{name}"]
        assert gain["low"] < gain["value"] < gain["high"]
        assert gain["high"] - gain["low"] > 1.0  # percent: the noise moves the gain
    assert first["dp_gain_min_positive"]["value"] <= first["dp_gain_mean"]["value"]


def test_crossed_gains_put_the_papers_plotted_side_against_ours():
    """The gain split in two (issue #38): our curve against the paper's plotted point and the
    paper's plotted curve against our point, by hand on one panel; the plotted side is the same
    in every bootstrap draw, so a crossed gain's interval is our side's spread only."""
    from dpminimax.report.compare.gain import measured_crossed_gains

    runs = pd.DataFrame([
        *({"experiment": "fig", "method": "dpfermi", "dataset": "d", "epsilon": 1.0,
           "seed": seed, "p_lam": lam, "p_fairness": "demographic_parity",
           "test_error": err, "dp_violation": viol}
          for seed in (0, 1) for lam, err, viol in ((0.0, 0.15, 0.20), (1.0, 0.19, 0.04))),
        {"experiment": "fig", "method": "tran2021b", "dataset": "d", "epsilon": 1.0, "seed": 0,
         "p_fairness": "demographic_parity", "test_error": 0.17, "dp_violation": 0.03},
    ])
    reported = pd.DataFrame({
        "constraint": "demographic_parity", "dataset": "d", "epsilon": 1.0,
        "method": ["dpfermi", "dpfermi", "tran2021b"], "test_error": [0.16, 0.18, 0.17],
        "violation": [0.10, 0.02, 0.09]})

    def claim(curve, point):
        return {"id": f"{curve}/{point}", "measure": {
            "metric": "performance_gain.mean_percent", "experiments": ["fig"],
            "gain": {"violation": "dp_violation", "curve": curve, "point": point}}}

    measured = measured_crossed_gains(runs, [
        claim("dpfermi", "tran2021b (reported)"), claim("dpfermi (reported)", "tran2021b"),
        claim("dpfermi (reported)", "tran2021b (reported)")], reported=reported)
    ours = measured["dpfermi/tran2021b (reported)"]            # ours at 0.17: 0.12
    assert ours["value"] == pytest.approx(100 * (0.09 - 0.12) / 0.12)
    assert ours["low"] == ours["high"] == pytest.approx(ours["value"])  # identical seeds
    theirs = measured["dpfermi (reported)/tran2021b"]           # paper's at 0.17: 0.06
    assert theirs["value"] == pytest.approx(100 * (0.03 - 0.06) / 0.06)
    assert "dpfermi (reported)/tran2021b (reported)" not in measured  # no runs: no panel
