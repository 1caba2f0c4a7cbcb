"""The "paper says / we measure" table: every claim of a paper beside our number and a verdict.

The ``claims.yaml`` format (``measure``, ``relative_to``, ``loglog_slope``), the order our number is
taken from and the verdict rules: ``docs/claims.md``."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dpminimax.atomic import atomic_path
from dpminimax.report.aggregate import write_table
from dpminimax.report.claims.claim_rules import (
    COMPARISONS,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    MEASURED,
    NOT_REPRODUCED,
    NOT_RUN,
    QUALITATIVE,
    ROUND_OFF,
    UNINFORMATIVE,
    accepted_band,
    check_claim,
    interval_verdict,
)
from dpminimax.report.claims.claims_interval import Estimate, claim_seed, estimate
from dpminimax.report.claims.reference import ReferenceFileError
from dpminimax.report.claims.scorecard import render_scorecard, scorecard

TABLE_COLUMNS = (
    "id", "kind", "figure", "dataset", "epsilon", "method", "quantity", "unit", "paper_value",
    "measured_value", "measured_ci_low", "measured_ci_high", "interval", "comparison",
    "tolerance", "accepted", "verdict", "seeds_to_decide", "trivial_value", "trivial_ci_low",
    "trivial_ci_high", "trivial_verdict", "trivial_note", "window", "fit_residual",
    "slope_last_two", "slope_last_two_ci_low", "slope_last_two_ci_high", "power_law", "note",
    "source", "n_runs", "measure",
)


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


def measure_from_runs(measure: Mapping[str, Any], runs: pd.DataFrame) -> tuple[float, int, str]:
    """``(value, matching runs, "")`` from the runs table, or ``(nan, n, reason)``."""
    found = estimate(measure, runs, interval="exact")
    return found.value if not found.reason else math.nan, found.n_runs, found.reason


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
