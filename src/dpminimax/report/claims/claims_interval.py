"""A claim's measured value from the runs table, with its 95% interval (issue 36).

:func:`estimate` evaluates a claim's ``measure`` (vocabulary in :mod:`.claims`) and its
interval of the declared kind:

* ``bootstrap`` (default): the matching runs are resampled with replacement within every ``by``
  group (and the reference runs of ``relative_to`` within theirs), and the whole measure (the
  group means, the ratio, the aggregation or the log-log slope) is recomputed on each of
  :data:`DRAWS` draws; the interval is the 2.5 and 97.5 percentiles, widened to hold the value
  itself (a max over groups' means resamples above it). The generator is seeded
  from the claim id, so a table is the same on every call, and the trivial baseline's column is
  resampled with the same draws. Vectorised: one ``(draws, runs)`` index matrix per group.
* ``t``: Student-t over the runs, ``mean +- t_{0.975, n-1} s / sqrt(n)`` (``agg: mean`` with
  neither ``by`` nor ``relative_to``).
* ``exact``: a deterministic quantity; the interval is the value.

With a single run in every group a bootstrap or t interval does not exist (NaN): one run says
nothing about the spread, and the verdict is then inconclusive (:mod:`.claims`).

Rate claims (``agg: loglog_slope``) fit only the x inside ``measure.window`` (inclusive,
declared before the run) and report beside the global slope its fit residual (the RMS of the
log residuals of the group means), the slope over the window's last two x with its bootstrap
interval, and ``power_law``: **False when the last-two-point slope's interval and the global
slope's interval are disjoint, with a gap of more than** :data:`MIN_BEND` **(0.05) in the
exponent between them** (the curve bends inside the window, so one exponent does not describe
it; the gap keeps a bend of 0.002 on a near-deterministic cost curve from counting); NaN (no
test) with fewer than three x or without intervals. The verdict is unchanged; the table's
``note`` says the curve is not a power law over the window.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpminimax.report.claims.claim_rules import ROUND_OFF, matching_runs

#: Bootstrap draws of a claim's interval (percentile interval, 95%).
DRAWS = 1000
#: Smallest gap between the global and the last-two-point slope's intervals that says a rate
#: curve is not a power law over its window (module docstring).
MIN_BEND = 0.05


@dataclass
class Rate:
    """The rate diagnostics of a log-log slope (module docstring)."""

    window: tuple[float, float]
    residual: float = math.nan
    last_two: float = math.nan
    last_two_low: float = math.nan
    last_two_high: float = math.nan
    power_law: float = math.nan  # 1.0 / 0.0 / NaN (no test), a float so the table column is


@dataclass
class Estimate:
    """A measure's value, its interval and what it was computed from."""

    value: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n_runs: int = 0
    runs_per_group: int = 0
    reason: str = ""
    note: str = ""
    rate: Rate | None = field(default=None)


def claim_seed(claim_id: str) -> int:
    """The bootstrap generator's seed of a claim (stable across runs and platforms)."""
    return zlib.crc32(str(claim_id).encode("utf-8"))


def estimate(measure: Mapping[str, Any], runs: pd.DataFrame, *, interval: str = "bootstrap",
             seed: int = 0, metric: str | None = None, draws: int = DRAWS) -> Estimate:
    """``measure`` evaluated on ``runs`` (its ``metric`` replaced by ``metric`` if given, e.g. the
    trivial baseline's column), with its interval of kind ``interval``."""
    measure = {**measure, "metric": metric} if metric else dict(measure)
    rows, reason = matching_runs(measure, runs)
    if reason:
        return Estimate(reason=reason)
    groups = _groups(measure, rows)
    if not groups:
        return Estimate(n_runs=len(rows), reason=f"{measure['metric']!r} is missing for the "
                                                 "matching runs")
    reference = None
    if "relative_to" in measure:
        shifted = {**measure, "filter": {**(measure.get("filter") or {}),
                                         **measure["relative_to"]}}
        ref_rows, why = matching_runs(shifted, runs)
        reference = _groups(shifted, ref_rows) if not why else {}
        if why or not reference:
            why = why or f"{measure['metric']!r} is missing for the matching runs"
            return Estimate(n_runs=len(rows),
                            reason=f"reference runs ({dict(measure['relative_to'])}): {why}")
        if measure.get("by"):
            common = [k for k in groups if k in reference]
            if not common:
                return Estimate(n_runs=len(rows),
                                reason="no group in common with the reference runs")
            groups = {k: groups[k] for k in common}
            reference = {k: reference[k] for k in common}
    rng = np.random.default_rng(seed)
    if measure["agg"] == "loglog_slope":
        return _slope(measure, groups, len(rows), interval, rng, draws)
    sizes = [len(v) for v in groups.values()] + [len(v) for v in (reference or {}).values()]
    out = Estimate(n_runs=len(rows), runs_per_group=min(sizes))
    out.value = float(_aggregate(measure, [v[None, :] for v in groups.values()],
                                 None if reference is None else
                                 [v[None, :] for v in reference.values()])[0])
    if math.isnan(out.value):
        out.reason = f"{measure['metric']!r} is missing for the matching runs"
        return out
    if interval == "exact":
        out.low = out.high = out.value
    elif max(sizes) < 2:
        out.note = "one run per group: no interval"
    elif interval == "t":
        (values,) = groups.values()
        out.low, out.high = t_interval(values)
    else:
        boot = _aggregate(measure, [_resample(v, rng, draws) for v in groups.values()],
                          None if reference is None else
                          [_resample(v, rng, draws) for v in reference.values()])
        out.low, out.high = widened_percentiles(boot, out.value)
    return out


def t_interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% Student-t interval of the mean of ``values`` (at least two)."""
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
    return float(values.mean() - half), float(values.mean() + half)


def _groups(measure: Mapping[str, Any], rows: pd.DataFrame) -> dict[Any, np.ndarray]:
    """The matching runs' metric values (NaN dropped) per ``by`` group, or one group of all."""
    metric, by = measure["metric"], list(measure.get("by") or [])
    values = pd.to_numeric(rows[metric], errors="coerce")
    keep = values.notna().to_numpy()
    rows, values = rows.loc[keep], values.loc[keep]
    if not by:
        return {(): values.to_numpy(dtype=float)} if len(values) else {}
    return {key: part.to_numpy(dtype=float)
            for key, part in values.groupby([rows[c] for c in by], dropna=False, sort=True)}


def _resample(values: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    """``draws`` resamples (rows) of ``values`` with replacement."""
    return values[rng.integers(0, len(values), size=(draws, len(values)))]


def _aggregate(measure: Mapping[str, Any], groups: list[np.ndarray],
               reference: list[np.ndarray] | None) -> np.ndarray:
    """The measure (``agg`` over the groups' means, or over the runs without ``by``) for every
    row of the ``(draws, runs)`` matrices ``groups``."""
    agg = measure["agg"]
    if not measure.get("by"):
        (runs,) = groups
        if reference is not None:  # mean over mean; agg of a single ratio is the ratio
            return runs.mean(axis=1) / reference[0].mean(axis=1)
        return getattr(np, agg)(runs, axis=1)
    means = np.stack([g.mean(axis=1) for g in groups], axis=1)
    if reference is not None:
        means = means / np.stack([g.mean(axis=1) for g in reference], axis=1)
    return getattr(np, agg)(means, axis=1)


def _slope(measure: Mapping[str, Any], groups: dict[Any, np.ndarray], n_runs: int,
           interval: str, rng: np.random.Generator, draws: int) -> Estimate:
    """The log-log slope of the group means against x over the window, and its diagnostics."""
    window = measure["window"]
    lo, hi = float(window.get("min", -math.inf)), float(window.get("max", math.inf))
    xs = {key: float(pd.to_numeric(pd.Series([key[0] if isinstance(key, tuple) else key]),
                                   errors="coerce").iloc[0]) for key in groups}
    inside = sorted((x, key) for key, x in xs.items()
                    if lo - ROUND_OFF * abs(lo) <= x <= hi + ROUND_OFF * abs(hi))
    out = Estimate(n_runs=n_runs, rate=Rate(window=(lo, hi)))
    if len(inside) < 2 or inside[0][0] <= 0:
        out.reason = (f"a log-log slope needs >= 2 groups with positive x inside the window "
                      f"[{lo:g}, {hi:g}]")
        return out
    lx = np.log([x for x, _ in inside])
    values = [groups[key] for _, key in inside]
    out.n_runs = sum(len(v) for v in values)
    out.runs_per_group = min(len(v) for v in values)
    means = np.array([v.mean() for v in values])
    if np.any(means <= 0):
        out.reason = "a log-log slope needs a positive metric in every group"
        return out
    slope, last_two = _fit(lx, np.log(means)[None, :])
    out.value, out.rate.last_two = float(slope[0]), float(last_two[0])
    fitted = out.value * (lx - lx.mean()) + np.log(means).mean()
    out.rate.residual = float(np.sqrt(np.mean((np.log(means) - fitted) ** 2)))
    if interval == "exact":
        out.low = out.high = out.value
        out.rate.last_two_low = out.rate.last_two_high = out.rate.last_two
    elif max(len(v) for v in values) < 2:
        out.note = "one run per group: no interval"
    else:
        boot_means = np.stack([_resample(v, rng, draws).mean(axis=1) for v in values], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            boot, boot_two = _fit(lx, np.log(np.where(boot_means > 0, boot_means, np.nan)))
        out.low, out.high = widened_percentiles(boot, out.value)
        out.rate.last_two_low, out.rate.last_two_high = widened_percentiles(
            boot_two, out.rate.last_two)
    if len(inside) >= 3 and not math.isnan(out.low) and not math.isnan(out.rate.last_two_low):
        gap = max(out.low - out.rate.last_two_high, out.rate.last_two_low - out.high)
        bent = gap > MIN_BEND
        out.rate.power_law = 0.0 if bent else 1.0
        if bent:
            out.note = (f"not a power law over [{lo:g}, {hi:g}]: the slope over the last two x, "
                        f"{out.rate.last_two:.3g} [{out.rate.last_two_low:.3g}, "
                        f"{out.rate.last_two_high:.3g}], is more than {MIN_BEND:g} outside "
                        "the global slope's interval")
    return out


def _fit(lx: np.ndarray, ly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slopes of every row of ``ly`` against ``lx`` (sorted), and the slopes
    through their last two points."""
    centred = lx - lx.mean()
    slope = (ly * centred).sum(axis=1) / (centred ** 2).sum()
    last_two = (ly[:, -1] - ly[:, -2]) / (lx[-1] - lx[-2])
    return slope, last_two


def widened_percentiles(boot: np.ndarray, value: float) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of the finite draws, widened to hold ``value`` (the
    bootstrap of a max or min over groups is biased away from it); NaN if fewer than half of
    the draws are finite."""
    finite = boot[np.isfinite(boot)]
    if len(finite) < len(boot) / 2:
        return math.nan, math.nan
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(min(low, value)), float(max(high, value))
