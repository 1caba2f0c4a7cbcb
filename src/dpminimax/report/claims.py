"""The "paper says / we measure" table: every claim of a paper beside our number and a verdict.

Input: the claims of ``papers/<paper>/claims.yaml`` (:func:`.reference.load_claims`; RaCO-DP
spec 000 §8, DP-FERMI spec 001 §8.2) and the long runs table (:mod:`.aggregate`). Output: one
row per claim with the paper's value, ours, the comparison, the tolerance, the accepted range and
a verdict: ``reproduced``, ``not reproduced``, ``qualitative`` (judged by a figure, not a
number) or ``not run: <reason>``.

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

   Numeric columns match within a relative 1e-9 (``inf`` matches ``inf``). ``agg:
   loglog_slope`` with one ``by`` column x (a rate claim: "the error decays like n^-2") is the
   least-squares slope of log(mean metric) against log(x) over the groups; its 95% bootstrap
   interval (the runs resampled within every x) is reported beside it. ``relative_to:
   {column: value}`` (not with ``loglog_slope``) makes a ratio claim ("method A's error is
   within a factor 3 of method B's"): the mean metric of each ``by`` group (of all the
   matching runs without ``by``) over the same of the runs the filter with these entries
   replaced keeps, then ``agg`` over the groups both have.

A claim none of whose datasets appears in the runs is ``not run: data unavailable`` unless a
measured value is given.

Verdicts (``comparison`` and ``tolerance: {kind, value: t}`` of the claim; paper value ``v``):
the tolerance gives an accepted band ``[lo, hi]``: ``v -+ t`` (absolute), ``v (1 -+ t)``
(relative, for ``v > 0``), ``v 10^(-+t)`` (log10, ``v > 0``); then ``approx``: ``lo <= ours <=
hi``, ``at_least``: ``ours >= lo``, ``at_most``: ``ours <= hi``, ``above``: ``ours > lo``,
``below``: ``ours < hi``. Round-off of a relative 1e-9 counts as on the bound: inside for the
inclusive comparisons, outside for the strict ones.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpminimax.atomic import atomic_path
from dpminimax.report.aggregate import bootstrap_slope, loglog_slope, write_table
from dpminimax.report.reference import ReferenceFileError

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
QUALITATIVE = "qualitative"
NOT_RUN = "not run"

COMPARISONS = ("approx", "at_least", "at_most", "above", "below", "qualitative")
TOLERANCE_KINDS = ("absolute", "relative", "log10")
AGGREGATIONS = ("mean", "median", "max", "min", "loglog_slope")
TABLE_COLUMNS = (
    "id", "figure", "dataset", "epsilon", "method", "quantity", "unit", "paper_value",
    "measured_value", "measured_ci_low", "measured_ci_high", "comparison", "tolerance",
    "accepted", "verdict", "source", "n_runs", "measure",
)
ROUND_OFF = 1e-9


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


def is_reproduced(measured: float, value: float, comparison: str,
                  tolerance: Mapping[str, Any]) -> bool:
    """Whether our ``measured`` number reproduces the paper's ``value`` (module docstring)."""
    lo, hi = accepted_band(value, tolerance)
    slack_lo, slack_hi = ROUND_OFF * max(abs(lo), 1.0), ROUND_OFF * max(abs(hi), 1.0)
    checks = {
        "approx": lambda: lo - slack_lo <= measured <= hi + slack_hi,
        "at_least": lambda: measured >= lo - slack_lo,
        "at_most": lambda: measured <= hi + slack_hi,
        "above": lambda: measured > lo + slack_lo,
        "below": lambda: measured < hi - slack_hi,
    }
    if comparison not in checks:
        raise ValueError(f"comparison {comparison!r} has no numeric verdict; "
                         f"expected one of {tuple(checks)}")
    return bool(checks[comparison]())


def measure_from_runs(measure: Mapping[str, Any], runs: pd.DataFrame) -> tuple[float, int, str]:
    """``(value, matching runs, "")`` from the runs table, or ``(nan, n, reason)``."""
    rows, reason = _matching_runs(measure, runs)
    if reason:
        return math.nan, 0, reason
    metric, agg = measure["metric"], measure["agg"]
    by = list(measure.get("by") or [])
    values = rows.groupby(by, dropna=False)[metric].mean() if by else rows[metric]
    if "relative_to" in measure:
        values, reason = _relative(measure, runs, values)
        if reason:
            return math.nan, len(rows), reason
    if agg == "loglog_slope":
        return _loglog_slope(values, len(rows))
    value = float(getattr(values.astype(float), agg)())
    if math.isnan(value):
        return value, len(rows), f"{metric!r} is missing for the matching runs"
    return value, len(rows), ""


def slope_interval(measure: Mapping[str, Any], runs: pd.DataFrame,
                   seed: int = 0) -> tuple[float, float]:
    """The 95% bootstrap interval of an ``agg: loglog_slope`` measure (the matching runs
    resampled within every x); NaN for another measure or where the slope is undefined."""
    rows, reason = _matching_runs(measure, runs)
    if reason or measure["agg"] != "loglog_slope":
        return math.nan, math.nan
    x = pd.to_numeric(rows[measure["by"][0]], errors="coerce")
    by_x = {float(value): group[measure["metric"]].to_numpy(dtype=float)
            for value, group in rows.groupby(x)}
    if len(by_x) < 2:
        return math.nan, math.nan
    _, low, high = bootstrap_slope(by_x, np.random.default_rng(seed))
    return low, high


def _relative(measure: Mapping[str, Any], runs: pd.DataFrame,
              values: pd.Series) -> tuple[pd.Series, str]:
    """``values`` (the groups' mean metric, or the matching runs' metric) over the same of the
    reference runs (the filter with ``relative_to``'s entries replaced), group by group."""
    reference = {**measure, "filter": {**(measure.get("filter") or {}),
                                       **measure["relative_to"]}}
    rows, reason = _matching_runs(reference, runs)
    if reason:
        return values, f"reference runs ({dict(measure['relative_to'])}): {reason}"
    metric, by = measure["metric"], list(measure.get("by") or [])
    if not by:
        return pd.Series([values.mean() / rows[metric].mean()]), ""
    ratios = (values / rows.groupby(by, dropna=False)[metric].mean()).dropna()
    return ratios, "" if len(ratios) else "no group in common with the reference runs"


def _matching_runs(measure: Mapping[str, Any],
                   runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The runs a measure's filter keeps, or an empty table and the reason."""
    _check_measure(measure)
    by = list(measure.get("by") or [])
    filters = dict(measure.get("filter") or {})
    missing = [c for c in [measure["metric"], *filters, *by] if c not in runs.columns]
    if missing:
        return runs.iloc[:0], f"no column {', '.join(map(repr, missing))} in the runs"
    keep = np.ones(len(runs), dtype=bool)
    for column, wanted in filters.items():
        keep &= _matches(runs[column], wanted)
    rows = runs.loc[keep]
    return rows, "" if len(rows) else "no matching runs"


def claims_table(claims: Sequence[Mapping[str, Any]], runs: pd.DataFrame | None, *,
                 measured: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per claim (columns :data:`TABLE_COLUMNS`), in the order of ``claims``.

    ``runs`` is the long runs table (``None`` or empty: nothing was run); ``measured`` maps claim
    ids to numbers computed outside the runs table. Raises :class:`.ReferenceFileError` naming the
    claim when its comparison, tolerance or measure is not of the vocabulary above, and
    ``ValueError`` when ``measured`` names a claim that does not exist.
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
    """Write the table as CSV and as Markdown, each atomically."""
    write_table(table, csv_path)
    with atomic_path(markdown_path) as tmp:
        tmp.write_text(render_markdown(table), encoding="utf-8")


def _claim_row(claim: Mapping[str, Any], runs: pd.DataFrame, present: set[str],
               measured: Mapping[str, float]) -> dict[str, Any]:
    comparison = claim.get("comparison")
    if comparison not in COMPARISONS:
        raise ValueError(f"unknown comparison {comparison!r}; expected one of {COMPARISONS}")
    measure = claim["measure"]
    machine = "filter" in measure or "agg" in measure
    row = {
        "id": claim["id"], "figure": claim.get("figure"),
        "dataset": _label(claim.get("dataset")), "epsilon": _label(claim.get("epsilon")),
        "method": _label(claim.get("method")), "quantity": claim.get("quantity"),
        "unit": claim.get("unit"), "paper_value": _number(claim.get("value")),
        "measured_value": math.nan, "measured_ci_low": math.nan,
        "measured_ci_high": math.nan, "comparison": comparison,
        "tolerance": _tolerance_label(claim.get("tolerance")), "accepted": "",
        "verdict": "", "source": "", "n_runs": 0, "measure": _measure_label(measure),
    }
    if comparison == "qualitative":  # a measured number is shown, the figure decides
        if claim["id"] in measured:
            row.update(measured_value=float(measured[claim["id"]]), source="measured")
        return {**row, "verdict": QUALITATIVE}
    value, tolerance = float(claim["value"]), claim["tolerance"]
    row["accepted"] = _accepted_label(value, comparison, tolerance)
    if machine:  # checked even when a measured value overrides it
        _check_measure(measure)
    datasets = _as_list(claim.get("dataset"))
    if claim["id"] in measured:
        ours, source, n_runs, reason = float(measured[claim["id"]]), "measured", 0, ""
        if math.isnan(ours):
            reason = "measured value is NaN (undefined on these runs; see the measure)"
    elif datasets and not present.intersection(map(str, datasets)):
        return {**row, "verdict": f"{NOT_RUN}: data unavailable"}
    elif machine:
        ours, n_runs, reason = measure_from_runs(measure, runs)
        low, high = slope_interval(measure, runs)
        row.update(measured_ci_low=low, measured_ci_high=high)
        source = "runs"
    else:
        return {**row, "verdict": f"{NOT_RUN}: no measured value given (not computable from "
                                  "the runs table)"}
    row.update(measured_value=ours, source=source, n_runs=n_runs)
    if reason:
        return {**row, "verdict": f"{NOT_RUN}: {reason}"}
    reproduced = is_reproduced(ours, value, comparison, tolerance)
    return {**row, "verdict": REPRODUCED if reproduced else NOT_REPRODUCED}


def _loglog_slope(means: pd.Series, n_runs: int) -> tuple[float, int, str]:
    """The slope of log(mean) against log(x) over the groups x of ``means``."""
    x = pd.to_numeric(pd.Series(means.index), errors="coerce").to_numpy(dtype=float)
    slope = loglog_slope(x, means.to_numpy(dtype=float))
    if math.isnan(slope):
        return math.nan, n_runs, "a log-log slope needs >= 2 groups with positive x and metric"
    return slope, n_runs, ""


def _check_measure(measure: Mapping[str, Any]) -> None:
    """The machine-readable part of a measure has the vocabulary of the module docstring."""
    if measure.get("agg") not in AGGREGATIONS:
        raise ValueError(f"measure.agg must be one of {AGGREGATIONS}, got {measure.get('agg')!r}")
    if measure.get("agg") == "loglog_slope" and len(measure.get("by") or []) != 1:
        raise ValueError("measure.agg loglog_slope needs exactly one 'by' column (the x axis)")
    if not isinstance(measure.get("filter", {}), Mapping):
        raise ValueError("measure.filter must be a mapping {column: value}")
    if "relative_to" in measure and (not isinstance(measure["relative_to"], Mapping)
                                     or measure.get("agg") == "loglog_slope"):
        raise ValueError("measure.relative_to must be a mapping {column: value} of the "
                         "reference runs' filter, and not with agg loglog_slope")
    if not isinstance(measure.get("by", []), list):
        raise ValueError("measure.by must be a list of columns")


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
