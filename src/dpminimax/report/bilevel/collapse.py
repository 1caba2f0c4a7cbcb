"""The collapse plot of DP bilevel's rate study (our plot): every private
configuration's measured ||G_{F_S,eta}(x_out)|| (mean over seeds, 95% interval) against a
prediction, log-log, with each method's least-squares slope (95% bootstrap interval, seeds
resampled within every configuration) and a dotted slope-1 line: the prediction is tight where
the points fall on a line of slope 1. Two predictions (``against``):

* ``rate``: Theorem 4.1's rate without its constants,
  P(n, epsilon, d_x, d_y) = (sqrt(d_x) / (epsilon n))^(1/2) + (sqrt(d_y) / (epsilon n))^(1/3);
* ``alpha_pred``: Thm. 4.1's a-priori alpha_pred of A1-OP with every constant explicit
  (:mod:`dpminimax.algorithms.bilevel.bilevel_alpha_pred`), computed per configuration (problem,
  instance, n, epsilon, delta, d_x, d_y, gamma: the runs' columns); measured = alpha_pred, the
  bound itself, is drawn dashed. The runs keep their own lambda and T (fixed or Thm. 4.1's
  schedule), not alpha_pred's parameter set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpminimax.report.aggregate import bootstrap_slope, require_columns, summarize
from dpminimax.report.claims.trivial import (
    draw_trivial_points,
    has_trivial,
    trivial_label,
    trivial_means,
)
from dpminimax.report.figures import save_figure
from dpminimax.report.minimax.rates import series_colours, series_label
from dpminimax.report.style import PANEL_SIZE, method_style, paper_style

COLUMNS = ("method", "epsilon", "p_n", "d_x", "d_y")
#: The further columns alpha_pred reads: the problem and its instance, delta, gamma.
ALPHA_COLUMNS = ("p_problem", "p_instance", "delta", "p_gamma")
#: alpha_pred's parameter set and binding term, recorded beside it.
PREDICTION_COLUMNS = ("alpha_pred", "alpha_pred_lam", "alpha_pred_steps", "alpha_pred_binding")
XLABELS = {"rate": "(√d_x / εn)^(1/2) + (√d_y / εn)^(1/3)",
           "alpha_pred": "α_pred (Thm. 4.1, a-priori, explicit constants)"}


def predicted_rate(n, epsilon, d_x, d_y):
    """Theorem 4.1's two terms without their constants (module docstring)."""
    scale = np.asarray(epsilon, dtype=float) * np.asarray(n, dtype=float)
    return (np.sqrt(d_x) / scale) ** 0.5 + (np.sqrt(d_y) / scale) ** (1 / 3)


def with_alpha_pred(table: pd.DataFrame,
                    experiments: Sequence[str] | None = None) -> pd.DataFrame:
    """``table`` with :data:`PREDICTION_COLUMNS` on its private bilevel rows (of
    ``experiments`` only, where given; NaN elsewhere), one solve per distinct configuration."""
    from dpminimax.algorithms.bilevel.bilevel_alpha_pred import predicted_alpha  # imports torch

    keys = [*COLUMNS[1:], *ALPHA_COLUMNS]
    rows = table
    if experiments is not None:
        rows = rows[rows["experiment"].isin(experiments)] if "experiment" in rows else rows[:0]
        if rows.empty:  # none of the experiments ran: nothing to predict
            return table.assign(**dict.fromkeys(PREDICTION_COLUMNS, np.nan))
    require_columns(rows, keys, "alpha_pred", "bilevel runs record their problem and gamma")
    rows = rows[np.isfinite(rows["epsilon"]) & rows[keys].notna().all(axis=1)]
    configs = rows[keys].drop_duplicates()
    values = []
    for config in configs.itertuples(index=False):
        prediction = predicted_alpha(
            {"problem": config.p_problem, "instance": int(config.p_instance),
             "d_x": int(config.d_x), "d_y": int(config.d_y), "gamma": float(config.p_gamma)},
            int(config.p_n), float(config.epsilon), float(config.delta))
        values.append((prediction.alpha, prediction.lam, prediction.outer_steps,
                       prediction.binding))
    predictions = configs.assign(**dict(zip(PREDICTION_COLUMNS, zip(*values, strict=True),
                                            strict=True))) if values else configs.assign(
        **{column: pd.Series(dtype=float) for column in PREDICTION_COLUMNS})
    return table.drop(columns=[c for c in PREDICTION_COLUMNS if c in table.columns]).merge(
        predictions, on=keys, how="left")


def alpha_pred_experiments(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """The experiments of the claims measured against alpha_pred (``by: [alpha_pred]``): the
    rows :func:`with_alpha_pred` must fill before the claims table is made."""
    found: set[str] = set()
    for claim in claims:
        measure = claim.get("measure", {})
        if "alpha_pred" in measure.get("by", []):
            experiment = measure.get("filter", {}).get("experiment", [])
            found |= {experiment} if isinstance(experiment, str) else set(experiment)
    return sorted(found)


def predicted_runs(table: pd.DataFrame, metric: str, against: str = "rate") -> pd.DataFrame:
    """The private runs measuring ``metric``, with their prediction ``predicted``."""
    require_columns(table, [*COLUMNS, metric], "the collapse plot",
                    "bilevel runs record d_x and d_y")
    private = table[np.isfinite(table["epsilon"]) & table[metric].notna()]
    if against == "alpha_pred":
        private = with_alpha_pred(private)
        return private[private["alpha_pred"].notna()].assign(predicted=private["alpha_pred"])
    return private.assign(predicted=predicted_rate(private["p_n"], private["epsilon"],
                                                   private["d_x"], private["d_y"]))


def collapse_points(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per configuration of :func:`predicted_runs`' ``runs``: the seed-mean
    ``metric`` (and its interval) and the prediction ``predicted``."""
    return summarize(runs, [metric], by=[*COLUMNS, "predicted"])


def collapse_slope(runs: pd.DataFrame, metric: str,
                   rng: np.random.Generator) -> tuple[float, float, float]:
    """The log-log slope of the seed-mean ``metric`` against ``predicted`` and its 95%
    bootstrap interval (:func:`.aggregate.bootstrap_slope`; configurations with the same
    prediction pooled); NaN where fewer than two predictions differ."""
    by_x = {x: group[metric].to_numpy(dtype=float) for x, group in runs.groupby("predicted")}
    return bootstrap_slope(by_x, rng) if len(by_x) > 1 else (np.nan, np.nan, np.nan)


def collapse_table(table: pd.DataFrame, metric: str, against: str = "alpha_pred",
                   seed: int = 0) -> pd.DataFrame:
    """Per method: the configurations, the fitted slope against the prediction with its
    bootstrap interval, and the ratio mean / prediction over the configurations (min, median,
    max: how far the points sit from measured = prediction); for ``alpha_pred`` also the
    range of its lambda and T and the binding term(s)."""
    runs = predicted_runs(table, metric, against)
    points = collapse_points(runs, metric)
    rng = np.random.default_rng(seed)
    rows = []
    for method, group in runs.groupby("method"):
        ratio = (points.loc[points["method"] == method, "mean"]
                 / points.loc[points["method"] == method, "predicted"])
        slope, low, high = collapse_slope(group, metric, rng)
        row = {"method": method, "metric": metric, "against": against,
               "configurations": int(len(ratio)), "seeds": int(group.groupby(
                   list(COLUMNS[1:]))[metric].count().min()),
               "predicted_min": float(group["predicted"].min()),
               "predicted_max": float(group["predicted"].max()),
               "slope": slope, "slope_ci_low": low, "slope_ci_high": high,
               "ratio_min": float(ratio.min()), "ratio_median": float(ratio.median()),
               "ratio_max": float(ratio.max())}
        if against == "alpha_pred":
            row |= {"lam_min": float(group["alpha_pred_lam"].min()),
                    "lam_max": float(group["alpha_pred_lam"].max()),
                    "steps_min": int(group["alpha_pred_steps"].min()),
                    "steps_max": int(group["alpha_pred_steps"].max()),
                    "binding": ",".join(sorted(group["alpha_pred_binding"].unique()))}
        rows.append(row)
    return pd.DataFrame(rows)


def plot_collapse(table: pd.DataFrame, metric: str, *, ylabel: str,
                  out_paths: Sequence[str | os.PathLike], against: str = "rate") -> Figure:
    """The collapse plot of ``metric`` against ``against`` (module docstring)."""
    runs = predicted_runs(table, metric, against)
    points = collapse_points(runs, metric)
    methods = sorted(points["method"].unique())
    rng = np.random.default_rng(0)
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.6, PANEL_SIZE[1] * 1.6), layout="constrained")
        ax = fig.subplots()
        for colour, method in zip(series_colours(len(methods)), methods, strict=True):
            rows = points[points["method"] == method]
            slope, low, high = collapse_slope(runs[runs["method"] == method], metric, rng)
            ax.errorbar(rows["predicted"], rows["mean"],
                        yerr=[rows["mean"] - rows["ci_low"].clip(lower=rows["mean"] * 1e-3),
                              rows["ci_high"] - rows["mean"]],
                        color=colour, marker=method_style(method).marker, linestyle="none",
                        capsize=2,
                        label=f"{series_label(method)} ({_slope_label(slope, low, high)})")
        if has_trivial(runs, metric):  # x0's value at each configuration
            trivial = trivial_means(runs, metric, [*COLUMNS, "predicted"])
            draw_trivial_points(ax, trivial["predicted"], trivial["trivial"],
                                trivial_label(runs))
        xs = np.geomspace(points["predicted"].min(), points["predicted"].max(), 50)
        centre = np.exp(np.mean(np.log(points["mean"]))) / np.exp(
            np.mean(np.log(points["predicted"])))
        ax.plot(xs, centre * xs, color="#777777", linestyle=":", label="slope 1 (tight rate)")
        if against == "alpha_pred":
            ax.plot(xs, xs, color="#333333", linestyle="--", linewidth=1.0,
                    label="measured = α_pred (the bound)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(XLABELS[against])
        ax.set_ylabel(ylabel)
        ax.legend(loc="best", fontsize="small")
        save_figure(fig, out_paths)
    return fig


def _slope_label(slope: float, low: float, high: float) -> str:
    """A legend's fitted slope with its interval (none where every prediction is equal)."""
    return ("one prediction: no slope" if np.isnan(slope)
            else f"slope {slope:.2f} [{low:.2f}, {high:.2f}]")
