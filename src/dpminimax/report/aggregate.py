"""The long results table: one row per seed x grid point x method x dataset x epsilon.

Columns (benchopt style): the run's identity (:data:`IDENTITY_COLUMNS`; ``epsilon`` is a float,
``math.inf`` for non-private runs), hyper-parameters as ``p_<param>`` columns, metric columns
(``test_accuracy``, ``test_error``, ``dp_violation``, ``eo_violation``, ``train_loss``,
``attack_auc``, ``attack_tpr_at_1pct_fpr`` ...) and provenance columns (``accountant``,
``epsilon_spent``, ``code_version``, ``run_id``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from dpminimax.atomic import atomic_path

IDENTITY_COLUMNS = ("paper", "experiment", "dataset", "method", "epsilon", "delta", "seed")
SUMMARY_BY = ("experiment", "dataset", "method", "epsilon")
SUMMARY_COLUMNS = ("mean", "std", "n", "sem", "ci_low", "ci_high")


class ResultsTableError(ValueError):
    """A results file does not have the columns of the long results table."""


def require_columns(table: pd.DataFrame, columns: Sequence[str], what: str, hint: str) -> None:
    """Refuse a runs table without ``columns``: ``what`` needs them (``hint``: which runs
    have them)."""
    missing = [c for c in dict.fromkeys(columns) if c not in table.columns]
    if missing:
        raise ResultsTableError(f"{what} needs column(s) {missing} ({hint})")


def concat_results(
    paths: Iterable[str | os.PathLike], required: Sequence[str] = IDENTITY_COLUMNS
) -> pd.DataFrame:
    """Read results files (``.parquet`` or ``.csv``) and stack them into one long table.

    Every file must have the ``required`` columns; otherwise :class:`ResultsTableError` names the
    file and the missing columns. ``epsilon`` is returned as float (``inf`` for non-private).
    """
    tables = []
    for path in map(Path, paths):
        table = _read(path)
        missing = [c for c in required if c not in table.columns]
        if missing:
            raise ResultsTableError(
                f"{path}: missing required column(s) {', '.join(map(repr, missing))} "
                f"(has {', '.join(map(str, table.columns))})"
            )
        tables.append(table)
    if not tables:
        raise ResultsTableError("concat_results: no results files given")
    results = _uniform_parameter_types(pd.concat(tables, ignore_index=True))
    if "epsilon" in results.columns:
        results["epsilon"] = pd.to_numeric(results["epsilon"]).astype(float)
    return results


def _uniform_parameter_types(table: pd.DataFrame) -> pd.DataFrame:
    """A parameter column whose values mix text and numbers (``clip_dual`` is ``"bound"`` or a
    number) holds text throughout, so the stacked table can be written to parquet."""
    for column in (c for c in table.columns if c.startswith("p_")):
        values = table[column].dropna()
        kinds = {isinstance(v, str) for v in values}
        if kinds == {True, False}:
            table[column] = table[column].map(lambda v: v if pd.isna(v) else str(v))
    return table


def summarize(
    df: pd.DataFrame, metrics: Sequence[str], by: Sequence[str] = SUMMARY_BY
) -> pd.DataFrame:
    """Mean, spread and 95% confidence interval of every metric over the rows of each group.

    Returns one row per group and metric with columns ``*by, metric, mean, std, n, sem, ci_low,
    ci_high``: ``std`` is the sample standard deviation (ddof 1), ``n`` counts non-missing values,
    ``sem = std / sqrt(n)`` and the interval is Student-t: ``mean ± t_{0.975, n-1} sem``,
    clipped to the metric's range (:func:`metric_range`: a rate's interval stays in [0, 1]).
    With ``n = 1`` the std, sem and interval are NaN (one seed says nothing about the spread).
    """
    missing = [c for c in [*by, *metrics] if c not in df.columns]
    if missing:
        raise ResultsTableError(f"summarize: no column(s) {missing} in the results table")
    long = df.melt(id_vars=list(by), value_vars=list(metrics), var_name="metric")
    grouped = long.groupby([*by, "metric"], dropna=False, sort=True)["value"]
    summary = grouped.agg(mean="mean", std="std", n="count").reset_index()
    summary["sem"] = summary["std"] / np.sqrt(summary["n"])
    dof = summary["n"].to_numpy(dtype=float) - 1
    t_quantile = stats.t.ppf(0.975, np.where(dof >= 1, dof, np.nan))
    half_width = t_quantile * summary["sem"].to_numpy(dtype=float)
    low, high = np.array([metric_range(m) for m in summary["metric"]], dtype=float).reshape(
        -1, 2).T
    summary["ci_low"] = np.maximum(summary["mean"] - half_width, low)
    summary["ci_high"] = np.minimum(summary["mean"] + half_width, high)
    return summary


def summary_columns(table: pd.DataFrame, metrics: Mapping[str, str],
                    by: Sequence[str]) -> pd.DataFrame:
    """Each metric's mean and 95% interval over its runs (:func:`summarize`) side by side, one
    row per group of ``by``: columns ``label``, ``label_ci_low``, ``label_ci_high`` for each
    ``label -> metric`` of ``metrics`` (a group without a metric's runs has NaN there)."""
    merged = None
    for label, metric in metrics.items():
        summary = summarize(table[table[metric].notna()], [metric], by=by)
        part = summary[[*by, "mean", "ci_low", "ci_high"]].rename(columns={
            "mean": label, "ci_low": f"{label}_ci_low", "ci_high": f"{label}_ci_high"})
        merged = part if merged is None else merged.merge(part, on=list(by), how="outer")
    return merged.sort_values(list(by)).reset_index(drop=True)


#: Metric-name fragments of rates and probabilities (values in [0, 1]); a classification
#: error ends in "error" (``inner_error_max``, a distance, does not).
_RATE_METRICS = ("accuracy", "auc", "tpr", "fpr", "dp_violation", "eo_violation")


def metric_range(metric: str) -> tuple[float, float]:
    """The values ``metric`` can take: [0, 1] for rates and fairness gaps, [-1, 1] for a
    signed constraint value, [0, inf) for losses and epsilons, unbounded otherwise."""
    if "constraint_violation" in metric or "constraint_value" in metric:
        return -1.0, 1.0
    if metric.endswith("error") or any(part in metric for part in _RATE_METRICS):
        return 0.0, 1.0
    if "loss" in metric or "epsilon" in metric:
        return 0.0, math.inf
    return -math.inf, math.inf


#: Bootstrap draws of a fitted log-log slope's interval.
BOOTSTRAP = 2000


def loglog_slope(xs: np.ndarray, values: np.ndarray) -> float:
    """The least-squares slope of log(values) against log(xs) (NaN unless all are positive)."""
    if len(xs) < 2 or not (np.all(xs > 0) and np.all(values > 0)):
        return float("nan")
    return float(np.polyfit(np.log(xs), np.log(values), 1)[0])


def bootstrap_slope(by_x: dict[float, np.ndarray], rng: np.random.Generator,
                    draws: int = BOOTSTRAP) -> tuple[float, float, float]:
    """The log-log slope of the group means of ``by_x`` (x -> the runs' values, e.g. one per
    seed) against x, and its 95% bootstrap interval (the runs resampled within every x)."""
    xs = np.array(sorted(by_x), dtype=float)
    groups = [np.asarray(by_x[x], dtype=float) for x in sorted(by_x)]
    boot = [loglog_slope(xs, np.array([rng.choice(g, size=len(g)).mean() for g in groups]))
            for _ in range(draws)]
    return (loglog_slope(xs, np.array([g.mean() for g in groups])),
            float(np.nanpercentile(boot, 2.5)), float(np.nanpercentile(boot, 97.5)))


def write_table(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` as CSV (no index), atomically: a temporary file moved into place."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def epsilon_label(eps: float) -> str:
    """Human label of a privacy budget: ``"0.5"``, ``"10"``, ``"∞ (non-private)"``."""
    return "∞ (non-private)" if math.isinf(eps) else f"{eps:g}"


def _read(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"results file {path} does not exist")
    if path.suffix in {".parquet", ".pq"}:
        return pd.read_parquet(path)
    if path.suffix == ".csv":
        return pd.read_csv(path)
    raise ResultsTableError(f"{path}: unknown results format {path.suffix!r} (parquet or csv)")


def series_table(table: pd.DataFrame) -> pd.DataFrame:
    """Runs that differ in a swept parameter become separate series (``method [p=v]``)."""
    swept = [
        c for c in table.columns
        if c.startswith("p_") and c not in ("p_noise_multiplier", "p_sampling_rate", "p_steps")
        and table.groupby(["dataset", "method", "epsilon"])[c].nunique(dropna=False).max() > 1
    ]
    if swept:
        labels = table[swept].apply(
            lambda row: ",".join(f"{c[2:]}={v}" for c, v in row.items() if not pd.isna(v)),
            axis=1,
        )
        bracket = labels.map(lambda label: f" [{label}]" if label else "")
        table = table.assign(method=table["method"] + bracket)
    return table
