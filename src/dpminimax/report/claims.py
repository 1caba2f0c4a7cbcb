"""The "paper says / we measure" table: every claim of a paper beside our number and a verdict.

Input: the claims of ``papers/<paper>/claims.yaml`` (:func:`.reference.load_claims`;
the papers' figures and text) and the long runs table (:mod:`.aggregate`). Output: one
row per claim with the paper's value, ours and its 95% interval, the comparison, the tolerance,
the accepted range, the trivial baseline's value and a verdict: ``reproduced``, ``not
reproduced``, ``inconclusive``, ``uninformative``, ``holds`` / ``fails`` (consistency),
``measured`` (diagnostic), ``qualitative`` (judged by a figure, not a number) or ``not run:
<reason>``.

Where our number comes from, in this order:

1. ``measured[claim id]``: values computed elsewhere (benchmark timings and their ratios, the
   DP-FERMI performance gain of :mod:`.gain`, dataset sizes and feature counts, parameter counts).
2. The claim's machine-readable ``measure`` (its prose ``how`` stays beside it)::

       measure:
         metric: test_accuracy                 # a column of the runs table
         filter: {dataset: adult, method: racodp, epsilon: 1.0, p_gamma: [0.05, 0.1],
                  p_clip: {min: 0, max: 2}}    # value | list of values | inclusive range
         by: [experiment, p_gamma]             # optional: mean over the runs (seeds) of each group
         agg: max                              # mean | median | max | min (over runs or groups)
                                               # | loglog_slope (see below)
         window: {min: 1024, max: 65536}       # loglog_slope only, required: the fit's x range

   Numeric columns match within a relative 1e-9 (``inf`` matches ``inf``). ``agg:
   loglog_slope`` with one ``by`` column x (a rate claim: "the error decays like n^-2") is the
   least-squares slope of log(mean metric) against log(x) over the groups whose x is inside
   ``window`` (declared before the run); its fit residual, the slope over the window's last
   two x and whether the curve is a power law there are reported beside it
   (:mod:`.claims_interval`). ``relative_to:
   {column: value}`` (not with ``loglog_slope``) makes a ratio claim ("method A's error is
   within a factor 3 of method B's"): the mean metric of each ``by`` group (of all the
   matching runs without ``by``) over the same of the runs the filter with these entries
   replaced keeps, then ``agg`` over the groups both have.

A claim none of whose datasets appears in the runs is ``not run: data unavailable`` unless a
measured value is given.

Verdicts (issue 36), by the measured value's 95% interval ``[a, b]``
(:mod:`.claims_interval`: ``interval: bootstrap | t | exact``) against the accepted band of
``comparison`` and ``tolerance: {kind, value: t}`` (paper value ``v``): the band ``[lo, hi]`` is
``v -+ t`` (absolute), ``v (1 -+ t)`` (relative, ``v > 0``), ``v 10^(-+t)`` (log10, ``v > 0``);
``approx`` accepts ``[lo, hi]``, ``at_least`` ``[lo, inf)``, ``at_most`` ``(-inf, hi]``,
``above`` ``(lo, inf)``, ``below`` ``(-inf, hi)``. ``reproduced``: the interval lies inside the
accepted set (``at_most`` on its upper end, ``at_least`` on its lower end); ``not
reproduced``: it is disjoint from it; ``inconclusive``: it straddles an edge (or there is no
interval), with ``seeds_to_decide``, the runs per group at which the interval would stop
straddling if its width shrinks like 1 / sqrt(runs). Round-off of a relative 1e-9 counts as on
the edge: inside for the inclusive comparisons, outside for the strict ones.

Claim kinds: ``reproduction`` (default; counted), ``consistency`` (true by construction:
``fails`` only when its interval, or its value where it has none, is disjoint from the band, as
an audit is above its DP ceiling only beyond its interval; else ``holds``), ``diagnostic``
(``measured``, no verdict). A reproduction claim that is reproduced or inconclusive is
``uninformative`` when the trivial baseline is not ``not reproduced`` itself: the same measure
on the runs' ``trivial_<metric>`` column (or ``trivial: {metric: <column>}``), or with
``trivial: measured`` the ``trivial`` entry of the value measured outside the runs table; none
with ``trivial: none`` and ``trivial_reason``. A claim that nothing measures says why in
``not_run``. Measured values from outside the runs table are a float (exact with ``interval:
exact``, else without an interval) or ``{value, low, high}``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpminimax.atomic import atomic_path
from dpminimax.report.aggregate import write_table
from dpminimax.report.claims_interval import INTERVALS, ROUND_OFF, Estimate, claim_seed, estimate
from dpminimax.report.reference import ReferenceFileError

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
UNINFORMATIVE = "uninformative"
HOLDS = "holds"
FAILS = "fails"
MEASURED = "measured"
QUALITATIVE = "qualitative"
NOT_RUN = "not run"

KINDS = ("reproduction", "consistency", "diagnostic")
COMPARISONS = ("approx", "at_least", "at_most", "above", "below", "qualitative")
TOLERANCE_KINDS = ("absolute", "relative", "log10")
AGGREGATIONS = ("mean", "median", "max", "min", "loglog_slope")
TABLE_COLUMNS = (
    "id", "kind", "figure", "dataset", "epsilon", "method", "quantity", "unit", "paper_value",
    "measured_value", "measured_ci_low", "measured_ci_high", "interval", "comparison",
    "tolerance", "accepted", "verdict", "seeds_to_decide", "trivial_value", "trivial_ci_low",
    "trivial_ci_high", "trivial_verdict", "trivial_note", "window", "fit_residual",
    "slope_last_two", "slope_last_two_ci_low", "slope_last_two_ci_high", "power_law", "note",
    "source", "n_runs", "measure",
)


def accepted_band(value: float, tolerance: Mapping[str, Any]) -> tuple[float, float]:
    """The band ``[lo, hi]`` around the paper's ``value`` that ``tolerance`` accepts."""
    kind, t = tolerance.get("kind"), float(tolerance.get("value"))
    if kind not in TOLERANCE_KINDS:
        raise ValueError(f"unknown tolerance kind {kind!r}; expected one of {TOLERANCE_KINDS}")
    if t < 0:
        raise ValueError(f"tolerance must be >= 0, got {t}")
    if kind == "absolute":
        return value - t, value + t
    if value <= 0:
        raise ValueError(f"a {kind} tolerance needs a positive paper value, got {value}")
    if kind == "relative":
        return value * (1.0 - t), value * (1.0 + t)
    return value * 10.0 ** -t, value * 10.0 ** t


def accepted_set(value: float, comparison: str,
                 tolerance: Mapping[str, Any]) -> tuple[float, float, bool]:
    """``(lo, hi, strict)``: what ``comparison`` accepts, ``[lo, hi]`` (``(lo, hi)`` if
    strict), each bound widened (inclusive) or narrowed (strict) by round-off."""
    lo, hi = accepted_band(value, tolerance)
    slack_lo, slack_hi = ROUND_OFF * max(abs(lo), 1.0), ROUND_OFF * max(abs(hi), 1.0)
    sets = {"approx": (lo - slack_lo, hi + slack_hi, False),
            "at_least": (lo - slack_lo, math.inf, False),
            "at_most": (-math.inf, hi + slack_hi, False),
            "above": (lo + slack_lo, math.inf, True),
            "below": (-math.inf, hi - slack_hi, True)}
    if comparison not in sets:
        raise ValueError(f"comparison {comparison!r} has no numeric verdict; "
                         f"expected one of {tuple(sets)}")
    return sets[comparison]


def interval_verdict(low: float, high: float, value: float, comparison: str,
                     tolerance: Mapping[str, Any]) -> str:
    """``reproduced`` / ``not reproduced`` / ``inconclusive`` of the interval ``[low, high]``
    against what the claim accepts (module docstring); ``inconclusive`` without an interval."""
    lo, hi, strict = accepted_set(value, comparison, tolerance)
    if math.isnan(low) or math.isnan(high):
        return INCONCLUSIVE
    if strict:
        inside, disjoint = lo < low and high < hi, high <= lo or low >= hi
    else:
        inside, disjoint = lo <= low and high <= hi, high < lo or low > hi
    return REPRODUCED if inside else NOT_REPRODUCED if disjoint else INCONCLUSIVE


def is_reproduced(measured: float, value: float, comparison: str,
                  tolerance: Mapping[str, Any]) -> bool:
    """Whether the single number ``measured`` (a zero-width interval) reproduces ``value``."""
    return interval_verdict(measured, measured, value, comparison, tolerance) == REPRODUCED


def seeds_to_decide(estimate_: Estimate, value: float, comparison: str,
                    tolerance: Mapping[str, Any]) -> float:
    """Runs per group at which the interval stops straddling the accepted set's edges, if its
    half-widths on either side of the value shrink like 1 / sqrt(runs); NaN without an
    interval, inf where the value sits on an edge."""
    point, low, high = estimate_.value, estimate_.low, estimate_.high
    if math.isnan(low) or math.isnan(high) or estimate_.runs_per_group < 1:
        return math.nan
    lo, hi = accepted_band(value, tolerance)
    edges = {"approx": (lo, hi), "at_least": (lo,), "above": (lo,), "at_most": (hi,),
             "below": (hi,)}[comparison]
    factor = 0.0
    for edge in edges:
        slack = ROUND_OFF * max(abs(edge), 1.0)
        if low - slack <= edge <= high + slack:
            distance = abs(edge - point)
            half = (high - point) if edge >= point else (point - low)
            factor = max(factor, math.inf if distance <= slack else half / distance)
    if not math.isfinite(factor):
        return math.inf
    return float(max(estimate_.runs_per_group + 1,
                     math.ceil(estimate_.runs_per_group * factor ** 2)))


def check_claim(claim: Mapping[str, Any]) -> None:
    """The issue-36 keys of a claim (``kind``, ``interval``, ``trivial``, a rate's
    ``measure.window``) and its measure's vocabulary; ``ValueError`` otherwise."""
    kind = claim.get("kind", "reproduction")
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    interval = claim.get("interval", "bootstrap")
    if interval not in INTERVALS:
        raise ValueError(f"unknown interval {interval!r}; expected one of {INTERVALS}")
    trivial = claim.get("trivial")
    if trivial == "none":
        if not str(claim.get("trivial_reason") or "").strip():
            raise ValueError("trivial: none needs a trivial_reason")
    elif trivial not in (None, "measured") and not (
            isinstance(trivial, Mapping) and set(trivial) == {"metric"}
            and isinstance(trivial["metric"], str)):
        raise ValueError(f"trivial must be absent, 'none', 'measured' or {{metric: <column>}}, "
                         f"got {trivial!r}")
    measure = claim.get("measure") or {}
    if "filter" in measure or "agg" in measure:
        check_measure(measure)
        if interval == "t" and (measure["agg"] != "mean" or measure.get("by")
                                or "relative_to" in measure):
            raise ValueError("interval t is only for agg mean without by or relative_to")


def check_measure(measure: Mapping[str, Any]) -> None:
    """The machine-readable part of a measure has the vocabulary of the module docstring."""
    agg = measure.get("agg")
    if agg not in AGGREGATIONS:
        raise ValueError(f"measure.agg must be one of {AGGREGATIONS}, got {agg!r}")
    if not isinstance(measure.get("by", []), list):
        raise ValueError("measure.by must be a list of columns")
    if agg == "loglog_slope":
        if len(measure.get("by") or []) != 1:
            raise ValueError("measure.agg loglog_slope needs exactly one 'by' column (the x axis)")
        window = measure.get("window")
        if not (isinstance(window, Mapping) and set(window) == {"min", "max"}
                and float(window["min"]) <= float(window["max"])):
            raise ValueError("agg loglog_slope needs measure.window: {min: <x>, max: <x>} "
                             f"(min <= max), the fit's x range declared before the run; "
                             f"got {window!r}")
    if not isinstance(measure.get("filter", {}), Mapping):
        raise ValueError("measure.filter must be a mapping {column: value}")
    if "relative_to" in measure and (not isinstance(measure["relative_to"], Mapping)
                                     or agg == "loglog_slope"):
        raise ValueError("measure.relative_to must be a mapping {column: value} of the "
                         "reference runs' filter, and not with agg loglog_slope")


def measure_from_runs(measure: Mapping[str, Any], runs: pd.DataFrame) -> tuple[float, int, str]:
    """``(value, matching runs, "")`` from the runs table, or ``(nan, n, reason)``."""
    found = estimate(measure, runs, interval="exact")
    return found.value if not found.reason else math.nan, found.n_runs, found.reason


def matching_runs(measure: Mapping[str, Any], runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The runs a measure's filter keeps, or an empty table and the reason."""
    check_measure(measure)
    by = list(measure.get("by") or [])
    filters = dict(measure.get("filter") or {})
    missing = [c for c in dict.fromkeys([measure["metric"], *filters, *by])
               if c not in runs.columns]
    if missing:
        return runs.iloc[:0], f"no column {', '.join(map(repr, missing))} in the runs"
    keep = np.ones(len(runs), dtype=bool)
    for column, wanted in filters.items():
        keep &= _matches(runs[column], wanted)
    rows = runs.loc[keep]
    return rows, "" if len(rows) else "no matching runs"


def claims_table(claims: Sequence[Mapping[str, Any]], runs: pd.DataFrame | None, *,
                 measured: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per claim (columns :data:`TABLE_COLUMNS`), in the order of ``claims``.

    ``runs`` is the long runs table (``None`` or empty: nothing was run); ``measured`` maps claim
    ids to values computed outside the runs table (a float or ``{value, low, high}``). Raises
    :class:`.ReferenceFileError` naming the claim when a key is not of the vocabulary above,
    and ``ValueError`` when ``measured`` names a claim that does not exist.
    """
    measured = dict(measured or {})
    unknown = sorted(set(measured) - {c["id"] for c in claims})
    if unknown:
        raise ValueError(f"measured values for unknown claim id(s) {unknown}")
    runs = pd.DataFrame() if runs is None else runs
    present = set(runs["dataset"].astype(str)) if "dataset" in runs.columns else set()
    rows = []
    for claim in claims:
        try:
            rows.append(_claim_row(claim, runs, present, measured))
        except (KeyError, TypeError, ValueError) as exc:
            raise ReferenceFileError(f"claim {claim.get('id')!r}: {exc}") from exc
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def render_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table of ``table`` (numbers to 4 significant digits)."""
    header = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def write_claims_table(table: pd.DataFrame, csv_path: str | os.PathLike,
                       markdown_path: str | os.PathLike) -> None:
    """Write the table as CSV and as Markdown (the scorecard above the table), atomically."""
    from dpminimax.report.scorecard import render_scorecard, scorecard

    write_table(table, csv_path)
    with atomic_path(markdown_path) as tmp:
        tmp.write_text(render_scorecard(scorecard(table)) + "\n" + render_markdown(table),
                       encoding="utf-8")


def _claim_row(claim: Mapping[str, Any], runs: pd.DataFrame, present: set[str],
               measured: Mapping[str, Any]) -> dict[str, Any]:
    comparison = claim.get("comparison")
    if comparison not in COMPARISONS:
        raise ValueError(f"unknown comparison {comparison!r}; expected one of {COMPARISONS}")
    check_claim(claim)
    kind, interval = claim.get("kind", "reproduction"), claim.get("interval", "bootstrap")
    measure = claim["measure"]
    machine = "filter" in measure or "agg" in measure
    row = dict.fromkeys(TABLE_COLUMNS, math.nan) | {
        "id": claim["id"], "kind": kind, "figure": claim.get("figure"),
        "dataset": _label(claim.get("dataset")), "epsilon": _label(claim.get("epsilon")),
        "method": _label(claim.get("method")), "quantity": claim.get("quantity"),
        "unit": claim.get("unit"), "paper_value": _number(claim.get("value")),
        "interval": interval, "comparison": comparison,
        "tolerance": _tolerance_label(claim.get("tolerance")), "accepted": "", "verdict": "",
        "trivial_verdict": "", "trivial_note": "", "window": _window_label(measure),
        "note": "", "source": "", "n_runs": 0, "measure": _measure_label(measure),
    }
    if comparison == "qualitative":  # a measured number is shown, the figure decides
        if claim["id"] in measured:
            found = _measured_estimate(measured[claim["id"]], interval)
            row.update(measured_value=found.value, measured_ci_low=found.low,
                       measured_ci_high=found.high, source="measured")
        return {**row, "verdict": QUALITATIVE}
    value, tolerance = float(claim["value"]), claim["tolerance"]
    row["accepted"] = _accepted_label(value, comparison, tolerance)
    datasets = _as_list(claim.get("dataset"))
    if claim["id"] in measured:
        found, source = _measured_estimate(measured[claim["id"]], interval), "measured"
    elif datasets and not present.intersection(map(str, datasets)):
        return {**row, "verdict": f"{NOT_RUN}: data unavailable"}
    elif machine:
        found = estimate(measure, runs, interval=interval, seed=claim_seed(claim["id"]))
        source = "runs"
    else:
        reason = " ".join(str(claim.get("not_run") or "no measured value given (not "
                                                   "computable from the runs table)").split())
        return {**row, "verdict": f"{NOT_RUN}: {reason}"}
    row.update(measured_value=found.value, measured_ci_low=found.low,
               measured_ci_high=found.high, source=source, n_runs=found.n_runs,
               note=found.note, **_rate_columns(found))
    if found.reason:
        return {**row, "measured_value": math.nan, "verdict": f"{NOT_RUN}: {found.reason}"}
    verdict = interval_verdict(found.low, found.high, value, comparison, tolerance)
    if kind == "diagnostic":
        return {**row, "verdict": MEASURED}
    if kind == "consistency":  # fails only beyond its interval (on the value where none)
        if math.isnan(found.low):
            verdict = interval_verdict(found.value, found.value, value, comparison, tolerance)
        return {**row, "verdict": FAILS if verdict == NOT_REPRODUCED else HOLDS}
    if verdict == INCONCLUSIVE:
        row["seeds_to_decide"] = seeds_to_decide(found, value, comparison, tolerance)
    trivial, note = _trivial(claim, runs, source, interval, measured.get(claim["id"]))
    row["trivial_note"] = note
    if trivial is not None:
        # without an interval (one run per group) the trivial output is judged on its value
        low, high = ((trivial.value, trivial.value) if math.isnan(trivial.low)
                     or math.isnan(trivial.high) else (trivial.low, trivial.high))
        trivial_verdict = interval_verdict(low, high, value, comparison, tolerance)
        row.update(trivial_value=trivial.value, trivial_ci_low=trivial.low,
                   trivial_ci_high=trivial.high, trivial_verdict=trivial_verdict)
        if verdict != NOT_REPRODUCED and trivial_verdict != NOT_REPRODUCED:
            verdict = UNINFORMATIVE
    return {**row, "verdict": verdict}


def _trivial(claim: Mapping[str, Any], runs: pd.DataFrame, source: str, interval: str,
             given: Any = None) -> tuple[Estimate | None, str]:
    """The trivial baseline's estimate (the claim's measure on its trivial column, or with
    ``trivial: measured`` the ``trivial`` entry ``{value, low, high}`` of the value measured
    outside the runs table), or None and why there is none."""
    trivial = claim.get("trivial")
    if trivial == "none":
        return None, f"none: {' '.join(str(claim['trivial_reason']).split())}"
    if trivial == "measured":
        entry = given.get("trivial") if isinstance(given, Mapping) else None
        if not isinstance(entry, Mapping):
            return None, "n/a: no trivial value measured beside the claim's value"
        found = _measured_estimate(entry, interval)
        return (None, f"n/a: {found.reason}") if found.reason else (found, "measured")
    if source != "runs":
        return None, "n/a: the value is measured outside the runs table"
    measure = claim["measure"]
    column = trivial["metric"] if trivial else f"trivial_{measure['metric']}"
    if column not in runs.columns:
        return None, f"n/a: no column {column!r} in the runs"
    found = estimate(measure, runs, interval=interval, seed=claim_seed(claim["id"]),
                     metric=column)
    if found.reason:
        return None, f"n/a: {found.reason}"
    return found, column


def _measured_estimate(given: Any, interval: str) -> Estimate:
    """A value measured outside the runs table: ``{value, low, high}``, or a float (exact
    only for ``interval: exact``)."""
    if isinstance(given, Mapping):
        found = Estimate(value=float(given["value"]), low=float(given["low"]),
                         high=float(given["high"]))
    else:
        found = Estimate(value=float(given))
        if interval == "exact":
            found.low = found.high = found.value
        else:
            found.note = "no interval given for the measured value"
    if math.isnan(found.value):
        found.reason = "measured value is NaN (undefined on these runs; see the measure)"
    return found


def _rate_columns(found: Estimate) -> dict[str, Any]:
    if found.rate is None:
        return {}
    rate = found.rate
    return {"fit_residual": rate.residual, "slope_last_two": rate.last_two,
            "slope_last_two_ci_low": rate.last_two_low,
            "slope_last_two_ci_high": rate.last_two_high,
            "power_law": ("" if math.isnan(rate.power_law)
                          else "yes" if rate.power_law else "no")}


def _matches(column: pd.Series, wanted: Any) -> np.ndarray:
    """Rows of ``column`` equal to ``wanted`` (a value, a list of values or ``{min, max}``)."""
    if isinstance(wanted, Mapping):
        extra = set(wanted) - {"min", "max"}
        if extra:
            raise ValueError(f"a range filter has only 'min' and 'max', got {sorted(extra)}")
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        lo, hi = float(wanted.get("min", -math.inf)), float(wanted.get("max", math.inf))
        return (values >= lo) & (values <= hi)
    keep = np.zeros(len(column), dtype=bool)
    numeric = pd.api.types.is_numeric_dtype(column)
    for item in wanted if isinstance(wanted, list) else [wanted]:
        if numeric and isinstance(item, (int, float)) and not isinstance(item, bool):
            values = column.to_numpy(dtype=float)
            keep |= np.isclose(values, float(item), rtol=ROUND_OFF, atol=0.0)
        else:
            keep |= (column.astype(str) == str(item)).to_numpy()
    return keep


def _accepted_label(value: float, comparison: str, tolerance: Mapping[str, Any]) -> str:
    lo, hi = accepted_band(value, tolerance)
    return {"approx": f"[{lo:.4g}, {hi:.4g}]", "at_least": f">= {lo:.4g}",
            "at_most": f"<= {hi:.4g}", "above": f"> {lo:.4g}", "below": f"< {hi:.4g}"}[comparison]


def _tolerance_label(tolerance: Mapping[str, Any] | None) -> str:
    return "" if tolerance is None else f"{tolerance['kind']} {float(tolerance['value']):g}"


def _window_label(measure: Mapping[str, Any]) -> str:
    window = measure.get("window")
    return "" if not window else f"[{float(window['min']):g}, {float(window['max']):g}]"


def _measure_label(measure: Mapping[str, Any]) -> str:
    how = " ".join(str(measure.get("how", "")).split())
    return f"{measure['metric']}: {how}" if how else str(measure["metric"])


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _label(value: Any) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in _as_list(value))


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        text = "" if math.isnan(value) else f"{value:.4g}"
    else:
        text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")
