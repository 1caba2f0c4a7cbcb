"""What a claim may say and how its interval is judged (issue 36): the verdicts, the vocabulary
of a claim's keys and ``measure`` (:func:`check_claim`), the runs a measure's filter keeps
(:func:`matching_runs`) and the accepted set of a comparison (:func:`interval_verdict`). The
table that applies them is :mod:`.claims`; the intervals are :mod:`.claims_interval`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: Interval kinds of a claim (``interval:``), computed by :mod:`.claims_interval`.
INTERVALS = ("bootstrap", "t", "exact")
#: Relative round-off under which two numbers count as equal (filters, the accepted set's edges).
ROUND_OFF = 1e-9

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
