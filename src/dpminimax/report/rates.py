"""Rate studies on synthetic problems with exact answers (BYOA spec 003 §5.7): an error metric
against the sample size n (or against epsilon), and the fitted log-log slopes.

Figure: one panel per problem (the ``dataset`` column); one colour per (method, epsilon), the
mean over seeds with its 95% Student-t band (:func:`.aggregate.summarize`) on log-log axes, and
the paper's printed bound on the same metric (the task's ``<metric>_bound`` column) dashed in
the same colour; where a theorem states only a rate (DP bilevel's O~ bounds), grey dotted
reference lines of its predicted slopes. Table: per (problem, method, epsilon) the
least-squares slope of log(mean metric) against log(n) with a 95% bootstrap interval (seeds
resampled within every n), the slope of the printed bound over the same n, the largest ratio
of the mean to the bound, and for the private runs the predicted slopes beside the fit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpminimax.report.aggregate import (
    ResultsTableError,
    bootstrap_slope,
    epsilon_label,
    loglog_slope,
    summarize,
)
from dpminimax.report.figures import save_figure
from dpminimax.report.style import BAND_ALPHA, PANEL_SIZE, method_style, paper_style

SERIES = ("dataset", "method", "epsilon")
#: Parameters that make separate series where a job sweeps them (the noise calibration, the
#: base solver); every other parameter is fixed or planned from n.
VARIANTS = ("p_sigma", "p_solver")


#: The two axes of a rate figure: (column, axis label, log base, the other axis's column).
AXES = {"p_n": ("Sample size n", 2, "epsilon"), "epsilon": ("Privacy budget ε", 10, "p_n")}


def plot_rate(table: pd.DataFrame, metric: str, *, ylabel: str,
              out_paths: Sequence[str | os.PathLike], against: str = "p_n",
              reference: Mapping[str, float] | None = None) -> Figure:
    """``metric`` against n (one line per method and epsilon) or, with ``against="epsilon"``,
    against epsilon (one line per method and n; non-private runs left out), the printed bound
    dashed in each line's colour, and a dotted line of each ``reference`` slope (name ->
    slope) from the panel's highest first point (module docstring)."""
    _require(table, metric)
    xlabel, base, other = AXES[against]
    table = _with_variants(table)
    if against == "epsilon":
        table = table[np.isfinite(table["epsilon"])]
    bound = f"{metric}_bound"
    summary = summarize(table, [metric], by=(*SERIES, "p_n"))
    bounds = (table.groupby([*SERIES, "p_n"])[bound].mean() if bound in table.columns
              else None)
    problems = sorted(table["dataset"].unique())
    with paper_style():
        fig = Figure(figsize=(max(PANEL_SIZE[0] * 1.5 * len(problems), 6.0),
                              PANEL_SIZE[1] * 1.7), layout="constrained")
        axes = np.atleast_1d(fig.subplots(1, len(problems), squeeze=False)[0])
        for ax, problem in zip(axes, problems, strict=True):
            rows = summary[summary["dataset"] == problem]
            series = rows[["method", other]].drop_duplicates().sort_values(["method", other])
            colours = _series_colours(len(series))
            for colour, (method, fixed) in zip(colours, series.itertuples(index=False),
                                               strict=True):
                one = rows[(rows["method"] == method) & (rows[other] == fixed)].sort_values(
                    against)
                if len(one) < 2 and against == "epsilon":
                    continue
                method_base, variant = method.partition(" [")[::2]
                where = (f"ε = {epsilon_label(fixed)}" if other == "epsilon"
                         else f"n = {int(fixed)}")
                label = (f"{method_style(method_base).label}"
                         f"{f' [{variant}' if variant else ''}, {where}")
                ax.plot(one[against], one["mean"], color=colour,
                        marker=method_style(method_base).marker, label=label)
                ax.fill_between(one[against], one["ci_low"].clip(lower=one["mean"] * 1e-3),
                                one["ci_high"], color=colour, alpha=BAND_ALPHA, linewidth=0)
                if bounds is not None:
                    printed = bounds.xs((problem, method, fixed),
                                        level=("dataset", "method", other)).sort_index()
                    ax.plot(printed.index, printed.to_numpy(), color=colour, linestyle="--",
                            linewidth=1.0)
            _reference_lines(ax, rows, against, reference or {})
            ax.set_xscale("log", base=base)
            ax.set_yscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(problem)
        if bounds is not None:
            axes[-1].plot([], [], color="#555555", linestyle="--", linewidth=1.0,
                          label="printed bound (dashed)")
        fig.legend(*axes[-1].get_legend_handles_labels(), loc="outside upper center",
                   ncol=2, frameon=False)
        save_figure(fig, out_paths)
    return fig


def slopes_table(table: pd.DataFrame, metric: str, seed: int = 0,
                 predicted: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Fitted and printed-bound log-log slopes of ``metric`` in n, per (problem, method,
    epsilon), and a column ``predicted_slope_<name>`` per entry of ``predicted`` (name ->
    slope) on the private rows (module docstring)."""
    _require(table, metric)
    table = _with_variants(table)
    bound = f"{metric}_bound"
    rng = np.random.default_rng(seed)
    rows = []
    for key, runs in table[table[metric].notna()].groupby(list(SERIES)):
        by_n = {n: group[metric].to_numpy(dtype=float)
                for n, group in runs.groupby("p_n")}
        if len(by_n) < 2:
            continue
        ns = np.array(sorted(by_n), dtype=float)
        means = np.array([by_n[n].mean() for n in ns])
        slope, low, high = bootstrap_slope(by_n, rng)
        row = dict(zip(SERIES, key, strict=True))
        row.update(metric=metric, n_min=int(ns[0]), n_max=int(ns[-1]),
                   seeds=int(min(len(v) for v in by_n.values())),
                   slope=slope, slope_ci_low=low, slope_ci_high=high)
        if np.isfinite(row["epsilon"]):
            row.update({f"predicted_slope_{name}": value
                        for name, value in (predicted or {}).items()})
        if bound in runs.columns:
            printed = runs.groupby("p_n")[bound].mean().sort_index().to_numpy(dtype=float)
            if np.all(printed > 0):  # a zero bound (exact ERM's empirical risk) has no ratio
                row.update(bound_slope=loglog_slope(ns, printed),
                           max_mean_over_bound=float(np.max(means / printed)))
        rows.append(row)
    return pd.DataFrame(rows)


def _with_variants(table: pd.DataFrame) -> pd.DataFrame:
    """``method`` labelled with the :data:`VARIANTS` its (problem, method, epsilon) sweeps:
    ``"output_perturbation [sigma=calibrated]"``."""
    labels = pd.Series("", index=table.index)
    for column in (c for c in VARIANTS if c in table.columns):
        varies = table.groupby(list(SERIES))[column].transform(
            lambda values: values.nunique(dropna=False) > 1).astype(bool)
        part = f"{column[2:]}=" + table[column].astype(str)
        labels = labels.where(~varies, labels.where(labels == "", labels + ",") + part)
    return table.assign(method=table["method"].where(
        labels == "", table["method"] + " [" + labels + "]"))


def _reference_lines(ax, rows: pd.DataFrame, against: str,
                     reference: Mapping[str, float]) -> None:
    """A grey dotted line of each predicted slope over the panel's x range, starting at the
    largest mean at the smallest x (a guide for the eye: the rates fix slopes, not levels)."""
    if not reference or rows.empty:
        return
    xs = np.sort(rows[against].unique().astype(float))
    start = float(rows.loc[rows[against] == xs[0], "mean"].max())
    styles = (":", "-.", (0, (1, 4)))
    for i, (name, slope) in enumerate(reference.items()):
        ax.plot(xs, start * (xs / xs[0]) ** slope, color="#777777",
                linestyle=styles[i % len(styles)],
                linewidth=1.0, label=f"slope {slope:.2g} ({name.replace('_', ' ')})")


def _series_colours(count: int) -> list[tuple[float, float, float]]:
    import seaborn as sns

    return [tuple(c) for c in sns.color_palette("colorblind", max(count, 1))][:count]


def _require(table: pd.DataFrame, metric: str) -> None:
    missing = [c for c in (*SERIES, "p_n", metric) if c not in table.columns]
    if missing:
        raise ResultsTableError(f"a rate figure needs column(s) {missing} (runs on a synthetic "
                                "problem with a grid over n)")
