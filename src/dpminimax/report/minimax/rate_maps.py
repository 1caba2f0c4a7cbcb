"""BYOA rate-study figures over the whole grid.

Item 7, the measured/bound heat-map: one panel per (problem, method [variant]), the seed mean of
``<metric>_over_bound`` (the run's value over the paper's printed bound on its expectation) in
every (n, epsilon) cell on a logarithmic colour scale centred at 1, the value written in the
cell and a box around every cell at or above 1 (a violated bound), a grey dashed box around
every cell no better than the trivial output x = 0 (:mod:`.trivial`); runs without a bound are
left out. Item 5, utility against cost: one panel per (problem, n, epsilon), the seed mean of
the metric against the seed mean of ``gradient_evaluations_per_sample``, one marker per
(method, base solver) (marker: method, colour: solver) and the Pareto front of the counted
points; a run without a count (the exact solver counts none) is a dotted horizontal line at
its metric; the trivial output's error is a grey dashed level.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from dpminimax.report.aggregate import ResultsTableError, require_columns
from dpminimax.report.claims.trivial import (
    box_cells_no_better,
    draw_trivial_level,
    has_trivial,
    trivial_label,
    trivial_means,
)
from dpminimax.report.compare.pareto import pareto_front
from dpminimax.report.figures import save_figure
from dpminimax.report.minimax.rates import (
    AXES,
    panel_title,
    rate_panels,
    series_colours,
    series_label,
    with_column,
    with_variants,
)
from dpminimax.report.style import method_style, paper_style
from dpminimax.trivial import column

RATIO_TITLE = "measured / printed bound (≤ 1 means the bound holds)"
VIOLATION_COLOUR = "#000000"
BOX = 0.92  # side of a violation's box, in cells (inside the cell: never clipped)
#: Logarithmic colour scale of the ratios, centred at 1 (blue: the bound holds; red: not).
RATIO_COLOURS = mpl.colormaps["RdBu_r"].with_extremes(bad="#DDDDDD")
COST = "gradient_evaluations_per_sample"
COST_LABEL = "Gradient evaluations per sample (oracle calls / n)"
NO_SOLVER = "none"


def plot_ratio_heatmap(table: pd.DataFrame, metric: str, *,
                       out_paths: Sequence[str | os.PathLike]) -> Figure:
    """Heat-maps of ``<metric>_over_bound`` over (n, epsilon), violations boxed (module
    docstring)."""
    ratio = f"{metric}_over_bound"
    cells = _ratio_cells(table, ratio)
    panels = cells[["dataset", "method"]].drop_duplicates().sort_values(["dataset", "method"])
    norm = _ratio_norm(cells["mean"].to_numpy(dtype=float))
    trivial = has_trivial(table, ratio)
    with paper_style():
        fig, axes = rate_panels(len(panels))
        for ax, (problem, method) in zip(axes, panels.itertuples(index=False), strict=True):
            own = cells[(cells["dataset"] == problem) & (cells["method"] == method)]
            image = _heatmap(ax, own, norm)
            if trivial:  # the same bound over the error of x = 0
                box_cells_no_better(ax, _grid(own, "mean"), _grid(own, "trivial"),
                                    trivial_label(table))
            ax.set_title(f"{problem}\n{series_label(method)}", fontsize=8.5)
        fig.colorbar(image, ax=axes, label=f"{metric.replace('_', ' ')}: mean over seeds / bound")
        fig.suptitle(RATIO_TITLE)
        fig.legend(handles=[Rectangle((0, 0), 1, 1, fill=False, edgecolor=VIOLATION_COLOUR,
                                      linewidth=2, label="ratio ≥ 1: bound violated"),
                            *axes[0].get_legend_handles_labels()[0]],
                   loc="outside lower center", frameon=False)
        save_figure(fig, out_paths)
    return fig


def plot_utility_vs_cost(table: pd.DataFrame, metric: str, *, ylabel: str,
                         out_paths: Sequence[str | os.PathLike]) -> Figure:
    """``metric`` against the gradient evaluations per sample, one panel per (problem, n,
    epsilon), with the Pareto front (module docstring)."""
    points = _cost_points(table, metric)
    panels = points[["dataset", "p_n", "epsilon"]].drop_duplicates().sort_values(
        ["dataset", "p_n", "epsilon"])
    solvers = sorted(points["solver"].unique())
    colours = dict(zip(solvers, series_colours(len(solvers)), strict=True))
    with paper_style():
        fig, axes = rate_panels(len(panels))
        trivial = (trivial_means(table, metric, ["dataset", "p_n", "epsilon"])
                   if has_trivial(table, metric) else None)
        for i, ax in enumerate(axes):
            _draw_costs(ax, points.merge(panels.iloc[[i]]), colours)
            if trivial is not None:  # x = 0's error on the panel's instances
                level = trivial.merge(panels.iloc[[i]])["trivial"]
                if len(level):
                    draw_trivial_level(ax, float(level.mean()), trivial_label(table))
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.margins(0.1)
            ax.set_xlabel(COST_LABEL)
            ax.set_ylabel(ylabel)
            ax.set_title(panel_title(panels.iloc[i]))
        labelled = {label: handle for ax in axes
                    for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)}
        fig.legend(labelled.values(), labelled.keys(), loc="outside upper center", ncol=2,
                   frameon=False)
        save_figure(fig, out_paths)
    return fig


def _ratio_cells(table: pd.DataFrame, ratio: str) -> pd.DataFrame:
    """The seed mean of ``ratio`` per (problem, method [variant], epsilon, n), runs without a
    bound left out."""
    require_columns(table, ("dataset", "method", "epsilon", "p_n", ratio), "a bound heat-map",
                    "runs of a method that prints a bound, on a grid over n and epsilon")
    bounded = with_variants(table)[lambda t: t[ratio].notna()]
    if bounded.empty:
        raise ResultsTableError(f"no printed bound: {ratio!r} is missing on every run (none of "
                                "the methods prints a bound on this metric)")
    columns = {ratio: "mean", column(ratio): "trivial"}
    means = bounded.groupby(["dataset", "method", "epsilon", "p_n"])[
        [c for c in columns if c in bounded.columns]].mean()
    return means.rename(columns=columns).reset_index()


def _grid(cells: pd.DataFrame, values: str) -> np.ndarray:
    """A panel's (epsilon x n) grid of ``values`` (the rows and columns of :func:`_heatmap`)."""
    return cells.pivot(index="epsilon", columns="p_n", values=values).sort_index().sort_index(
        axis=1).to_numpy(dtype=float)


def _ratio_norm(values: np.ndarray) -> LogNorm:
    """A log scale symmetric about 1 that holds every positive ratio (at least 1/2 to 2)."""
    positive = values[np.isfinite(values) & (values > 0)]
    spread = float(np.max(np.maximum(positive, 1 / positive), initial=2.0))
    return LogNorm(vmin=1 / spread, vmax=spread)


def _heatmap(ax: Axes, cells: pd.DataFrame, norm: LogNorm):
    """One panel: the (epsilon x n) grid of ratios, written in the cells, violations boxed."""
    grid = cells.pivot(index="epsilon", columns="p_n", values="mean").sort_index().sort_index(
        axis=1)
    values = _grid(cells, "mean")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=RATIO_COLOURS, norm=norm,
                      origin="lower", aspect="auto")
    for (row, col), value in np.ndenumerate(values):
        if not np.isfinite(value):
            continue
        far = value > 0 and abs(np.log(value)) > 0.6 * np.log(norm.vmax)
        ax.text(col, row, f"{value:.2g}", ha="center", va="center", fontsize=7,
                color="white" if far else "black")
        if value >= 1:
            ax.add_patch(Rectangle((col - BOX / 2, row - BOX / 2), BOX, BOX, fill=False,
                                   edgecolor=VIOLATION_COLOUR, linewidth=2))
    ax.grid(False)
    ax.set_xticks(range(len(grid.columns)), [f"{int(n)}" for n in grid.columns],
                  rotation=45, ha="right")
    ax.set_yticks(range(len(grid.index)), [f"{eps:g}".replace("inf", "∞") for eps in grid.index])
    ax.set_xlabel(AXES["p_n"].label)
    ax.set_ylabel(AXES["epsilon"].label)
    return image


def _cost_points(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Seed means of ``metric`` (``mean``) and of the gradient evaluations per sample
    (``cost``; NaN where the solver counts none) per (problem, n, epsilon, method, solver)."""
    table = with_column(table, "solver")
    require_columns(table, ("dataset", "method", "epsilon", "p_n", metric, COST),
                    "a utility-vs-cost figure",
                    "runs of BYOA's methods with an iterative base solver")
    if table[COST].notna().sum() == 0:
        raise ResultsTableError(f"no run counts its gradient evaluations ({COST!r} is missing "
                                "on every run: only exact solvers)")
    solver = table["solver"] if "solver" in table.columns else pd.Series(NO_SOLVER,
                                                                         index=table.index)
    keys = ["dataset", "p_n", "epsilon", "method", "solver"]
    return (table.assign(solver=solver.fillna(NO_SOLVER).astype(str))
            .groupby(keys)[[metric, COST]].mean()
            .rename(columns={metric: "mean", COST: "cost"}).reset_index())


def _draw_costs(ax: Axes, rows: pd.DataFrame, colours: dict[str, tuple]) -> None:
    """One panel: a marker per counted (method, solver), a dotted line per uncounted one,
    the Pareto front of the counted points in grey."""
    counted = rows[rows["cost"].notna()]
    for point in counted.itertuples(index=False):
        solver = "" if point.solver == NO_SOLVER else f", solver {point.solver}"
        ax.plot(point.cost, point.mean, linestyle="none", color=colours[point.solver],
                marker=method_style(point.method).marker, markersize=7,
                label=f"{series_label(point.method)}{solver}")
    for point in rows[rows["cost"].isna()].itertuples(index=False):
        ax.axhline(point.mean, color=method_style(point.method).color, linestyle=":",
                   linewidth=1.2, label=f"{series_label(point.method)} "
                                        "(no gradient count: dotted at its value)")
    if len(counted) > 1:
        front = pareto_front(counted.rename(columns={"cost": "error", "mean": "violation"}))
        ax.plot(front["error"], front["violation"], color="#777777", linewidth=1.0,
                zorder=0, label="Pareto front (fewest evaluations, lowest error)")
