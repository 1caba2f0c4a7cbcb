"""Pareto dominance between fairness trade-off curves as numbers with a bootstrap over seeds
(DP-FERMI Figs. 2-10, RaCO-DP Figs. 4 and 6: "our curve lies below / left of the baselines'").

A method's *curve* in a panel (experiment, dataset, epsilon) is its seed-mean points (test
error, violation), one per value of its trace parameter (:data:`.tradeoff.TRACE_PARAMETERS`); a
single point for a method without one (Tran et al. 2021b, the trivial predictor). Its *front*
is the points no other of its points dominates, sorted by violation. ``error_at(front, v)`` is
the lowest error the method reaches within a violation budget ``v``: linear between consecutive
front points (a classifier that picks one of the two models at random reaches every point of
the segment: its error is the mixture of the errors and its demographic-parity or
equalized-odds gap at most the mixture of the gaps), the error of the last front point beyond
the front's largest violation, undefined (NaN) below its smallest.

Two measures of method A against method B (:data:`STATISTICS`):

* ``error_gap``: the mean of ``error_at(A, v) - error_at(B, v)`` over an even grid of budgets
  from the smallest that both reach (the larger of their smallest violations) to the largest
  either reaches; negative: A has the lower error at matched violation. 0 for identical curves.
* ``dominated_share``: the share of B's points that A's front dominates (A reaches a strictly
  lower error within the point's violation); 1: every point of B is beaten, 0 for identical
  curves.

A claim compares A with each of its baselines in every panel and aggregates the (panel,
baseline) values (``over: max`` for "in every panel": the worst case for A's error gap;
``min`` the same for a share; ``mean``). Its 95% interval is a percentile bootstrap: the runs
of every (experiment, dataset, epsilon, method, trace value) group are resampled with
replacement, every curve and the aggregate recomputed (:data:`DRAWS` times, a fixed seed).
Baselines are the claim's other methods in our runs, the numbers a paper plotted (``"<method>
(reported)"``: fixed points, not resampled) or ``trivial``: the constant majority-class
predictor, one point (``trivial_test_error``, ``trivial_<violation>``: its gap is 0). The same
measure with A replaced by the trivial point is the claim's trivial baseline value (a trade-off
claim the majority predictor also meets is uninformative).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpminimax.epsilon import Epsilon
from dpminimax.report.claims.reference import CONSTRAINT_VIOLATION
from dpminimax.report.fair.tradeoff import TRACE_COLUMN, trace_values

#: Bootstrap draws of every interval (percentile method, 95%).
DRAWS = 1000
#: Budgets of the ``error_gap`` grid.
GRID = 51
TRIVIAL = "trivial"
REPORTED_SUFFIX = " (reported)"
PANEL = ("experiment", "dataset", "epsilon")
GROUP = (*PANEL, "method", TRACE_COLUMN)
AGGREGATES: dict[str, Callable[..., np.ndarray]] = {
    "max": np.nanmax, "min": np.nanmin, "mean": np.nanmean}

Curve = tuple[np.ndarray, np.ndarray]  # (error, violation) of a method's points


def pareto_front(error: np.ndarray, violation: np.ndarray) -> Curve:
    """The points of (``error``, ``violation``) that no other point dominates (lower-or-equal
    in both, strictly lower in one; one of equal points), sorted by violation (so by
    decreasing error)."""
    error, violation = np.asarray(error, float), np.asarray(violation, float)
    keep = ~np.isnan(error) & ~np.isnan(violation)
    error, violation = error[keep], violation[keep]
    order = np.lexsort((error, violation))
    error, violation = error[order], violation[order]
    best_before = np.concatenate([[math.inf], np.minimum.accumulate(error)[:-1]])
    front = error < best_before  # lower than every point of smaller or equal violation
    return error[front], violation[front]


def error_at(front: Curve, budget: np.ndarray | float) -> np.ndarray:
    """The lowest error a method with this Pareto ``front`` reaches within violation
    ``budget`` (module docstring): NaN below its smallest violation."""
    error, violation = front
    budget = np.asarray(budget, float)
    if error.size == 0:
        return np.full(budget.shape, math.nan)
    inside = np.interp(budget, violation, error)  # constant beyond the last front point
    return np.where(budget < violation[0], math.nan, inside)


def error_gap(a: Curve, b: Curve) -> float:
    """Mean of A's minus B's lowest error over the budgets both reach, up to the largest
    violation either reaches (negative: A is better); NaN if either curve is empty."""
    front_a, front_b = pareto_front(*a), pareto_front(*b)
    if front_a[0].size == 0 or front_b[0].size == 0:
        return math.nan
    low = max(front_a[1][0], front_b[1][0])
    high = max(low, front_a[1][-1], front_b[1][-1])
    grid = np.linspace(low, high, GRID)
    return float(np.mean(error_at(front_a, grid) - error_at(front_b, grid)))


def dominated_share(a: Curve, b: Curve) -> float:
    """The share of B's points that A's front dominates (strictly lower error within the
    point's violation); NaN if either curve is empty."""
    front_a = pareto_front(*a)
    error, violation = (np.asarray(x, float) for x in b)
    keep = ~np.isnan(error) & ~np.isnan(violation)
    if front_a[0].size == 0 or not keep.any():
        return math.nan
    reached = error_at(front_a, violation[keep])  # NaN (out of A's reach) compares False
    return np.count_nonzero(reached < error[keep]) / np.count_nonzero(keep)


STATISTICS: dict[str, Callable[[Curve, Curve], float]] = {
    "error_gap": error_gap, "dominated_share": dominated_share}


def resampled_means(runs: pd.DataFrame, keys: Sequence[str], values: Sequence[str],
                    draws: int = DRAWS, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """The groups of ``runs`` by ``keys`` (one row each, sorted) and their mean ``values``:
    an array (draws + 1, groups, values) whose row 0 is the mean over the group's runs and rows
    1.. the means of the runs resampled with replacement within every group, each group from
    its own generator seeded by ``seed`` and its key (:func:`group_seed`): a group's draws do
    not depend on which other groups the runs hold."""
    grouped = runs.groupby(list(keys), sort=True, dropna=False)
    groups = []
    means = np.empty((draws + 1, grouped.ngroups, len(values)))
    for g, (key, rows) in enumerate(grouped):
        data = rows[list(values)].to_numpy(dtype=float)
        means[0, g] = data.mean(axis=0)
        rng = np.random.default_rng([seed, group_seed(key)])
        picks = rng.integers(0, len(data), size=(draws, len(data)))
        means[1:, g] = data[picks].mean(axis=1)
        groups.append(key)
    return pd.DataFrame(groups, columns=list(keys)), means


def group_seed(key: Any) -> int:
    """A stable 32-bit seed of a group key (a value or a tuple of values; numbers by their
    float value, so 3, 3.0 and numpy's 3.0 agree)."""
    def canonical(value: Any) -> str:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            return str(value)
        return repr(float(value))

    parts = key if isinstance(key, tuple) else (key,)
    return zlib.crc32("\x1f".join(canonical(v) for v in parts).encode())


def percentile_interval(draws: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of the finite ``draws`` (NaN if none)."""
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return math.nan, math.nan
    return float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))


def dominance(runs: pd.DataFrame, spec: Mapping[str, Any], *,
              reported: pd.DataFrame | None = None, draws: int = DRAWS,
              seed: int = 0) -> dict[str, Any] | None:
    """The claim measure ``spec`` (keys ``statistic``, ``violation``, ``method``, ``against``,
    optional ``experiments``, ``datasets``, ``epsilons``, ``over``: default ``mean``) on
    ``runs``: ``{value, low, high, panels}`` and, where the runs have the trivial columns,
    ``trivial`` (the same with ``method`` replaced by the trivial point). None when the runs
    lack the columns or no panel has ``method`` and a baseline."""
    curves = resampled_curves(runs, spec["violation"], reported=reported, draws=draws,
                              seed=seed)
    return None if curves is None else curves.measure(spec)


def measured_dominance(runs: pd.DataFrame, claims: Sequence[Mapping[str, Any]], *,
                       reported: pd.DataFrame | None = None,
                       draws: int = DRAWS) -> dict[str, dict[str, Any]]:
    """Claim id -> :func:`dominance` of every claim whose ``measure`` has a ``dominance``
    block (its ``dataset`` and ``epsilon`` select the panels unless the block names them).
    The claims on one violation share one bootstrap (and each (panel, pair)'s statistic is
    computed once)."""
    measured, curves = {}, {}
    for claim in claims:
        spec = claim.get("measure", {}).get("dominance")
        if spec is None:
            continue
        spec = {"statistic": claim["measure"]["metric"], "datasets": claim.get("dataset"),
                "epsilons": claim.get("epsilon"), **spec}
        violation = spec["violation"]
        if violation not in curves:
            curves[violation] = resampled_curves(runs, violation, reported=reported,
                                                 draws=draws)
        value = None if curves[violation] is None else curves[violation].measure(spec)
        if value is not None:
            measured[claim["id"]] = value
    return measured


def resampled_curves(runs: pd.DataFrame, violation: str, *,
                     reported: pd.DataFrame | None = None, draws: int = DRAWS,
                     seed: int = 0) -> _Curves | None:
    """Every method's curve in every panel of ``runs`` (and the trivial point's, where the
    runs have its columns) on the seed means and on ``draws`` bootstrap resamples, beside the
    ``reported`` curves of ``violation``; None when the runs lack the columns."""
    if any(c not in runs.columns for c in (*PANEL, "method", "test_error", violation)):
        return None
    points = runs.assign(epsilon=pd.to_numeric(runs["epsilon"]).astype(float),
                         **{TRACE_COLUMN: trace_values(runs)})
    trivial_columns = ["trivial_test_error", f"trivial_{violation}"]
    if all(c in runs.columns for c in trivial_columns):
        trivial = points.assign(method=TRIVIAL, test_error=points[trivial_columns[0]],
                                **{violation: points[trivial_columns[1]],
                                   TRACE_COLUMN: math.nan})
        points = pd.concat([points, trivial], ignore_index=True)
    points = points.dropna(subset=["test_error", violation])
    if points.empty:
        return None
    groups, means = resampled_means(points, GROUP, ["test_error", violation], draws, seed)
    return _Curves(groups, means, reported_curves(reported, violation))


def reported_curves(reported: pd.DataFrame | None, violation: str) -> dict[tuple, Curve]:
    """(dataset, epsilon, "<method> (reported)") -> the plotted points of the constraint that
    ``violation`` measures."""
    if reported is None:
        return {}
    constraints = [c for c, v in CONSTRAINT_VIOLATION.items() if v == violation]
    rows = reported.loc[reported["constraint"].isin(constraints)]
    return {(dataset, float(eps), method + REPORTED_SUFFIX):
            (group["test_error"].to_numpy(float), group["violation"].to_numpy(float))
            for (dataset, eps, method), group in rows.groupby(["dataset", "epsilon", "method"])}


class _Curves:
    """Every group's resampled mean points, looked up by panel and method, and the
    statistics of the (panel, method, baseline) pairs computed so far."""

    def __init__(self, groups: pd.DataFrame, means: np.ndarray,
                 reported: Mapping[tuple, Curve]) -> None:
        self.means, self.reported = means, reported
        self.index = {key: rows.index.to_numpy()
                      for key, rows in groups.groupby([*PANEL, "method"], sort=True)}
        self.pairs: dict[tuple, np.ndarray] = {}

    def measure(self, spec: Mapping[str, Any]) -> dict[str, Any] | None:
        """:func:`dominance` of ``spec`` on these curves."""
        method, against = spec["method"], list(spec["against"])
        panels = [p for p in self.panels(method, spec)
                  if any(self.has(p, m) for m in against)]
        if not panels:
            return None
        result = {**self._aggregated(spec, panels, method), "panels": len(panels)}
        if all(self.has(p, TRIVIAL) for p in panels):
            result["trivial"] = self._aggregated(spec, panels, TRIVIAL)
        return result

    def panels(self, method: str, spec: Mapping[str, Any]) -> list[tuple]:
        """The panels (experiment, dataset, epsilon) of ``method`` that ``spec`` selects."""
        selected = []
        for experiment, dataset, eps, name in self.index:
            if name != method or any(
                    spec.get(key) is not None and value not in _as_list(spec[key])
                    for key, value in (("experiments", experiment), ("datasets", dataset))):
                continue
            if spec.get("epsilons") is None or np.isclose(
                    eps, [float(Epsilon.parse(e, "claim epsilon"))
                          for e in _as_list(spec["epsilons"])], rtol=1e-9, atol=0.0).any():
                selected.append((experiment, dataset, eps))
        return selected

    def has(self, panel: tuple, method: str) -> bool:
        return self._reported_key(panel, method) in self.reported or (*panel, method) in self.index

    def curve(self, panel: tuple, method: str, draw: int) -> Curve:
        if method.endswith(REPORTED_SUFFIX):
            return self.reported[self._reported_key(panel, method)]
        rows = self.index[(*panel, method)]
        return self.means[draw, rows, 0], self.means[draw, rows, 1]

    def statistic(self, name: str, panel: tuple, method: str, baseline: str) -> np.ndarray:
        """``name`` of ``method`` against ``baseline`` in ``panel``, on every draw (row 0:
        the seed means)."""
        key = (name, panel, method, baseline)
        if key not in self.pairs:
            self.pairs[key] = np.array([
                STATISTICS[name](self.curve(panel, method, draw),
                                 self.curve(panel, baseline, draw))
                for draw in range(self.means.shape[0])])
        return self.pairs[key]

    def _aggregated(self, spec: Mapping[str, Any], panels: Sequence[tuple],
                    method: str) -> dict[str, float]:
        """``{value, low, high}``: the spec's aggregate over the (panel, baseline) pairs of its
        statistic, on the seed means (value) and on every bootstrap draw (the interval)."""
        values = np.array([self.statistic(spec["statistic"], p, method, m)
                           for p in panels for m in spec["against"] if self.has(p, m)])
        defined = np.isfinite(values).any(axis=0)
        totals = np.full(values.shape[1], math.nan)
        totals[defined] = AGGREGATES[spec.get("over", "mean")](values[:, defined], axis=0)
        low, high = (percentile_interval(totals[1:]) if np.isfinite(totals[0])
                     else (math.nan, math.nan))  # undefined on the means: no interval
        return {"value": float(totals[0]), "low": low, "high": high}

    @staticmethod
    def _reported_key(panel: tuple, method: str) -> tuple:
        return panel[1], float(panel[2]), method


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]
