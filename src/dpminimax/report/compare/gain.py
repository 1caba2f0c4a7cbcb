"""DP-FERMI's headline "performance gain" (paper Sec. 4).

The paper reports that DP-FERMI's fairness violation is "79.648% better than Tran et al. (2021b)
on average, and 65.89% better on median" (demographic parity; 96.65% / 90.02% for equalized
odds) "for fixed accuracy level", without a formula. We reconstruct it: per (dataset,
epsilon), with Tran et al. 2021b's single point (error e_T, violation v_T) and DP-FERMI's curve over
lambda, interpolate DP-FERMI's violation linearly in the error at e_T (v_F) and take

    gain = (v_T - v_F) / v_F,

skipping panels where e_T lies outside DP-FERMI's error range (no extrapolation). On the paper's
own plotted numbers this gives the reported median exactly (65.89%) and the mean within 0.32 pp
(79.33%); the equalized-odds figures are not reproduced by it.

On our runs the curve is DP-FERMI's seed means per lambda and the point Tran et al. 2021b's seed
mean; the 95% interval of each summary (mean, median, smallest gain over the panels) is a
percentile bootstrap: the runs of every (experiment, dataset, epsilon, method, lambda) group
resampled with replacement and the whole summary recomputed (:mod:`.dominance`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpminimax.report.compare.dominance import (
    DRAWS,
    REPORTED_SUFFIX,
    percentile_interval,
    reported_curves,
    resampled_means,
)

KEYS = ("dataset", "epsilon")


def interpolated_violation(errors: np.ndarray, violations: np.ndarray,
                           error: float) -> tuple[float, bool]:
    """The curve's violation linearly interpolated at ``error`` (the curve sorted by error),
    and whether ``error`` lies inside the curve's error range (NaN outside: no
    extrapolation)."""
    order = np.argsort(errors, kind="stable")
    errors, violations = np.asarray(errors, float)[order], np.asarray(violations, float)[order]
    in_range = bool(errors[0] <= error <= errors[-1])
    return (float(np.interp(error, errors, violations)) if in_range else math.nan), in_range


def relative_gain(baseline_violation: float, curve_violation: float) -> float:
    """(v_T - v_F) / v_F; NaN where v_F is not > 0 (relative to a zero violation: undefined)
    or NaN."""
    if not curve_violation > 0:
        return math.nan
    return (baseline_violation - curve_violation) / curve_violation


def performance_gains(curve: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, epsilon) panel with both methods: the baseline point, DP-FERMI's
    interpolated violation at the baseline's error, ``gain`` (NaN when out of range) and
    ``in_range``.

    ``curve`` and ``points`` have columns ``dataset``, ``epsilon``, ``test_error`` and
    ``violation`` (one row per lambda of the curve; one row per panel of the points).
    """
    rows = []
    for (dataset, eps), baseline in points.groupby(list(KEYS)):
        ours = curve.loc[(curve["dataset"] == dataset) & (curve["epsilon"] == eps)]
        if ours.empty:
            continue
        if len(baseline) != 1:
            raise ValueError(f"{dataset} eps={eps}: expected one baseline point, "
                             f"got {len(baseline)}")
        error, violation = float(baseline["test_error"].iloc[0]), float(
            baseline["violation"].iloc[0])
        interpolated, in_range = interpolated_violation(
            ours["test_error"].to_numpy(), ours["violation"].to_numpy(), error)
        rows.append({"dataset": dataset, "epsilon": eps, "baseline_error": error,
                     "baseline_violation": violation, "curve_violation": interpolated,
                     "gain": relative_gain(violation, interpolated), "in_range": in_range})
    return pd.DataFrame(rows)


def summarize_gains(gains: pd.DataFrame) -> dict[str, float]:
    """Mean and median gain (in percent) over the in-range panels where it is defined (the
    curve's interpolated violation is > 0), and how many panels there were."""
    used = gains.loc[gains["in_range"], "gain"].dropna() * 100.0
    return {"mean_percent": float(used.mean()), "median_percent": float(used.median()),
            "panels": int(len(used)), "panels_out_of_range": int((~gains["in_range"]).sum())}


#: violation column -> the prefix of the DP-FERMI claim ids that hold its gains
GAIN_CLAIMS = {"dp_violation": "dp", "eo_violation": "eo"}
FAIRNESS_OF = {"dp_violation": "demographic_parity", "eo_violation": "equalized_odds"}
PANEL = ("experiment", *KEYS)
#: The summaries of the gains over the panels, as in the claim ids ``<dp|eo>_gain_<summary>``.
SUMMARIES = {"mean": np.mean, "median": np.median, "min_positive": np.min}


def resampled_gains(runs: pd.DataFrame, violation: str, *, curve_method: str = "dpfermi",
                    point_method: str = "tran2021b", reported: pd.DataFrame | None = None,
                    draws: int = DRAWS, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """The panels (experiment, dataset, finite epsilon) with both methods, over the runs
    trained for the fairness notion ``violation`` measures (``p_fairness``), and their gains
    (draws + 1, panels): row 0 on the seed means (``curve_method`` per lambda,
    ``point_method`` per panel), rows 1.. on the runs resampled within every (experiment,
    dataset, epsilon, method, lambda). Experiments are never pooled: the same method and
    epsilon can run in two experiments with different delta or grids.

    A method named ``<method> (reported)`` is the paper's plotted curve or point of
    ``reported`` (the same in every draw; panels are those of the other method's runs): our
    DP-FERMI against the paper's Tran et al. 2021b, or the paper's DP-FERMI against ours,
    separates the two sides of a gain that is not reproduced."""
    rows = runs if "experiment" in runs.columns else runs.assign(experiment="")
    rows = rows.assign(epsilon=pd.to_numeric(rows["epsilon"]).astype(float))
    rows = rows.loc[np.isfinite(rows["epsilon"])
                    & rows["method"].isin([curve_method, point_method])]
    if "p_fairness" in rows.columns:
        rows = rows.loc[rows["p_fairness"] == FAIRNESS_OF[violation]]
    if "p_lam" not in rows.columns:
        rows = rows.assign(p_lam=math.nan)
    rows = rows.dropna(subset=["test_error", violation])
    empty = pd.DataFrame(columns=list(PANEL)), np.empty((draws + 1, 0))
    if rows.empty:
        return empty
    groups, means = resampled_means(rows, [*PANEL, "method", "p_lam"],
                                    ["test_error", violation], draws, seed)
    plotted = reported_curves(reported, violation)
    panels, gains = [], []
    for panel, members in groups.groupby(list(PANEL), sort=True):
        curve = _draws_of(curve_method, members, means, plotted, panel)
        point = _draws_of(point_method, members, means, plotted, panel)
        if curve is None or point is None:
            continue
        if point.shape[1] != 1:
            raise ValueError(f"{panel}: expected one {point_method} point, "
                             f"got {point.shape[1]}")
        panels.append(panel)
        gains.append([relative_gain(point[d, 0, 1], interpolated_violation(
            curve[d, :, 0], curve[d, :, 1], point[d, 0, 0])[0]) for d in range(draws + 1)])
    if not panels:
        return empty
    return pd.DataFrame(panels, columns=list(PANEL)), np.array(gains).T


def _draws_of(method: str, members: pd.DataFrame, means: np.ndarray,
              plotted: Mapping[tuple, tuple[np.ndarray, np.ndarray]],
              panel: tuple) -> np.ndarray | None:
    """``method``'s points in ``panel`` per draw, (draws + 1, points, 2): its groups' resampled
    means, or the paper's plotted points repeated; None where it has none there."""
    if method.endswith(REPORTED_SUFFIX):
        curve = plotted.get((panel[1], float(panel[2]), method))
        if curve is None:
            return None
        points = np.column_stack(curve)
        return np.broadcast_to(points, (len(means), *points.shape))
    index = members.index[members["method"] == method].to_numpy()
    return means[:, index, :] if len(index) else None


def gains_from_runs(runs: pd.DataFrame, violation: str, *, curve_method: str = "dpfermi",
                    point_method: str = "tran2021b") -> pd.DataFrame:
    """:func:`resampled_gains`' panels with their gain on the seed means (``gain``, NaN where
    undefined)."""
    panels, gains = resampled_gains(runs, violation, curve_method=curve_method,
                                    point_method=point_method, draws=0)
    return panels.assign(gain=gains[0] if gains.size else [])


def gain_experiments(claims: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Claim prefix (``dp``, ``eo``) -> the experiments whose panels its gains are taken over,
    from ``measure.experiments`` of the claims ``<prefix>_gain_mean`` (the paper's figures; our
    own cross-paper experiment must not count)."""
    return {claim["id"].removesuffix("_gain_mean"): list(claim["measure"]["experiments"])
            for claim in claims
            if claim["id"] in {f"{prefix}_gain_mean" for prefix in GAIN_CLAIMS.values()}
            and "experiments" in claim.get("measure", {})}


def measured_gains(runs: pd.DataFrame,
                   experiments: Mapping[str, Sequence[str]] | None = None, *,
                   draws: int = DRAWS) -> dict[str, dict[str, float]]:
    """The DP-FERMI claims ``<dp|eo>_gain_mean``, ``_median`` and ``_min_positive`` measured on
    our runs, in percent, each ``{value, low, high}`` (the 95% bootstrap interval of
    :func:`resampled_gains`, every summary over the panels where the gain is defined):
    absent when no panel has both methods, a NaN value when panels have both but none has the
    baseline's error inside DP-FERMI's range (the gain is undefined there, not unmeasured).
    ``experiments`` (:func:`gain_experiments`) restricts each prefix to its experiments."""
    measured = {}
    for violation, prefix in GAIN_CLAIMS.items():
        if violation not in runs.columns:
            continue
        rows = runs
        if experiments and prefix in experiments and "experiment" in runs.columns:
            rows = runs.loc[runs["experiment"].isin(experiments[prefix])]
        _, gains = resampled_gains(rows, violation, draws=draws)
        if gains.size:
            measured |= {f"{prefix}_gain_{name}": value
                         for name, value in _summaries(gains).items()}
    return measured


def measured_crossed_gains(runs: pd.DataFrame, claims: Sequence[Mapping[str, Any]], *,
                           reported: pd.DataFrame | None = None,
                           draws: int = DRAWS) -> dict[str, dict[str, float]]:
    """Claim id -> the gain summary of every claim whose ``measure`` has a ``gain`` block
    (``{violation, curve, point}``, a method of our runs or ``<method> (reported)``, the
    paper's plotted numbers) over ``measure.experiments``; ``measure.metric`` names the
    summary (``performance_gain.<mean|median|min_positive>_percent``). Absent where no panel
    has both."""
    measured = {}
    for claim in claims:
        spec = claim.get("measure", {}).get("gain")
        if spec is None or spec["violation"] not in runs.columns:
            continue
        rows = runs
        if "experiments" in claim["measure"] and "experiment" in runs.columns:
            rows = runs.loc[runs["experiment"].isin(claim["measure"]["experiments"])]
        _, gains = resampled_gains(rows, spec["violation"], curve_method=spec["curve"],
                                   point_method=spec["point"], reported=reported, draws=draws)
        summary = claim["measure"]["metric"].removeprefix("performance_gain.").removesuffix(
            "_percent")
        if gains.size:
            measured[claim["id"]] = _summaries(gains)[summary]
    return measured


def _summaries(gains: np.ndarray) -> dict[str, dict[str, float]]:
    """Each of :data:`SUMMARIES` over the panels of ``gains`` (draws + 1, panels), in percent,
    ``{value, low, high}``: row 0's value and the 95% percentile interval of the others (NaN
    where no panel's gain is defined on the means)."""
    result = {}
    for name, summary in SUMMARIES.items():
        totals = np.array([100.0 * summary(g[np.isfinite(g)]) if np.isfinite(g).any()
                           else math.nan for g in gains])
        low, high = (percentile_interval(totals[1:]) if np.isfinite(totals[0])
                     else (math.nan, math.nan))  # undefined on the means: no interval
        result[name] = {"value": float(totals[0]), "low": low, "high": high}
    return result
