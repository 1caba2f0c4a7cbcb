"""Cross-paper comparison: error-vs-violation Pareto fronts and which method dominates where.

Neither the RaCO-DP nor the DP-FERMI paper compares the methods under one protocol (RaCO-DP
plots numbers copied from the DP-FERMI repository, which were obtained under a different privacy
notion and accounting). Here every method is trained by us on the same split, with the same
example-level (add/remove) DP notion, the same accountant and delta. For each (dataset, epsilon)
and method, a *point* is the mean over seeds of (test error, violation) at one value of the
method's trace parameter (see :data:`.tradeoff.TRACE_PARAMETERS`); a method's *front* is its set of
points not dominated by another of its own points (lower-or-equal error and violation, one
strictly lower).

"Who dominates where" is read at violation budgets ``v``: the best error a method reaches with
mean violation <= v (``min`` error over its points with violation <= v; NaN if none), and the
method with the lowest such error (ties share the win). :func:`dominance_table` gives one row
per (dataset, epsilon, budget).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpminimax.report.aggregate import epsilon_label
from dpminimax.report.fair.tradeoff import (
    ERROR_AXIS_LABEL,
    TRACE_COLUMN,
    VIOLATION_LABELS,
    draw_majority,
    trace_values,
)
from dpminimax.report.figures import _figure_legend, save_figure
from dpminimax.report.style import PANEL_SIZE, method_style, paper_style

#: Violation budgets at which :func:`dominance_table` compares the methods.
DEFAULT_BUDGETS = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2)


def method_points(df: pd.DataFrame, violation: str) -> pd.DataFrame:
    """Mean test error and mean ``violation`` over seeds per (dataset, epsilon, method, trace
    value), with the number of seeds ``n``."""
    missing = [c for c in ("dataset", "method", "epsilon", "test_error", violation)
               if c not in df.columns]
    if missing:
        raise ValueError(f"cannot compare methods on {violation!r}: no column(s) {missing}")
    table = df.assign(**{TRACE_COLUMN: trace_values(df).fillna(-1.0),
                         "epsilon": pd.to_numeric(df["epsilon"]).astype(float)})
    points = (table.groupby(["dataset", "epsilon", "method", TRACE_COLUMN])
              .agg(error=("test_error", "mean"), violation=(violation, "mean"),
                   n=("test_error", "size"))
              .reset_index())
    points[TRACE_COLUMN] = points[TRACE_COLUMN].where(points[TRACE_COLUMN] >= 0)
    return points


def pareto_front(points: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``points`` (columns ``error``, ``violation``) that no other row dominates,
    sorted by error."""
    error = points["error"].to_numpy()
    viol = points["violation"].to_numpy()
    keep = []
    for i in range(len(points)):
        dominated = ((error <= error[i]) & (viol <= viol[i])
                     & ((error < error[i]) | (viol < viol[i])))
        keep.append(not dominated.any())
    return points.loc[keep].sort_values("error")


def best_error_within(points: pd.DataFrame, budget: float) -> float:
    """The lowest mean error among ``points`` with mean violation <= ``budget`` (NaN if none)."""
    inside = points.loc[points["violation"] <= budget, "error"]
    return float(inside.min()) if not inside.empty else math.nan


def dominance_table(df: pd.DataFrame, violation: str,
                    budgets: Sequence[float] = DEFAULT_BUDGETS) -> pd.DataFrame:
    """Per (dataset, epsilon, violation budget): every method's best error within the budget
    (columns ``error[<method>]``) and the winner(s) (``best_method``, ``best_error``).

    Non-private runs (epsilon = inf) are compared among themselves, like any epsilon."""
    points = method_points(df, violation)
    rows = []
    for (dataset, eps), panel in points.groupby(["dataset", "epsilon"]):
        methods = sorted(panel["method"].unique())
        for budget in budgets:
            errors = {m: best_error_within(panel.loc[panel["method"] == m], budget)
                      for m in methods}
            finite = {m: e for m, e in errors.items() if not math.isnan(e)}
            best = min(finite.values()) if finite else math.nan
            winners = sorted(m for m, e in finite.items() if e == best)
            rows.append({"dataset": dataset, "epsilon": eps, "violation_metric": violation,
                         "budget": budget, "best_method": "+".join(winners) or "none",
                         "best_error": best,
                         **{f"error[{m}]": errors[m] for m in methods}})
    return pd.DataFrame(rows)


def plot_pareto(df: pd.DataFrame, *, violation: str,
                out_paths: Sequence[str | os.PathLike]) -> Figure:
    """One panel per (dataset, epsilon): every method's points (faint) and its Pareto front
    (line), test error on x and ``violation`` on y."""
    points = method_points(df, violation)
    if points.empty:
        raise ValueError(f"cannot draw the {violation!r} Pareto comparison: no runs")
    datasets = sorted(points["dataset"].unique())
    epsilons = sorted(points["epsilon"].unique(), key=lambda e: (math.isinf(e), e))
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * len(epsilons), PANEL_SIZE[1] * len(datasets)),
                     layout="constrained")
        axes = fig.subplots(len(datasets), len(epsilons), squeeze=False, sharey="row")
        for i, dataset in enumerate(datasets):
            for j, eps in enumerate(epsilons):
                ax = axes[i, j]
                panel = points.loc[(points["dataset"] == dataset) & (points["epsilon"] == eps)]
                for method, rows in panel.groupby("method"):
                    style = method_style(method)
                    ax.scatter(rows["error"], rows["violation"], color=style.color,
                               marker=style.marker, alpha=0.3, s=14, linewidths=0)
                    front = pareto_front(rows)
                    ax.plot(front["error"], front["violation"], color=style.color,
                            marker=style.marker, linestyle=style.linestyle, label=style.label)
                draw_majority(ax, df, violation, dataset)
                ax.set_title(f"{dataset}, ε = {epsilon_label(eps)}")
                if i == len(datasets) - 1:
                    ax.set_xlabel(ERROR_AXIS_LABEL)
                if j == 0:
                    ax.set_ylabel(VIOLATION_LABELS.get(violation, violation))
        _figure_legend(fig, list(np.ravel(axes)))
        # one panel is narrower than the title: it takes two lines there
        fig.suptitle("Same split, example-level DP, one accountant:"
                     + ("\n" if len(epsilons) == 1 else " ") + "Pareto fronts (mean over seeds)")
    save_figure(fig, out_paths)
    return fig
