"""The trivial baseline in the figures (issue 36 item 2): every utility or rate figure draws,
beside the methods, the same metric of the task's data-independent output (the runs table's
``trivial_<metric>`` columns, :mod:`dpminimax.trivial`) in grey, dashed, labelled
``"trivial: <output>"`` (``trivial: x0 = 0``, ``trivial: initial model``): a line or a level
over a curve's x axis, a marked point in a trade-off panel, a dashed box around every cell of
a heat map whose method is no better than it. A figure draws nothing where the runs have no
trivial column for its metric (a cost, a privacy measure). A trade-off point with a
classification run not better than the majority class (``below_majority``, issue 38 item 4)
is drawn hollow (:func:`draw_hollow`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from dpminimax.trivial import BELOW_MAJORITY, OUTPUT, column

TRIVIAL_COLOUR = "#606060"
TRIVIAL_DASHES = (0, (5, 2))
#: Side of a heat-map cell's box (inside a violation's box of :mod:`.rate_maps`, 0.92).
CELL_BOX = 0.78
HOLLOW_LABEL = "hollow: ≥ 1 run not better than the majority class (McNemar, 95%)"


def has_trivial(table: pd.DataFrame, metric: str) -> bool:
    """Whether the runs have the trivial baseline of ``metric``."""
    name = column(metric)
    return name in table.columns and bool(table[name].notna().any())


def trivial_label(table: pd.DataFrame) -> str:
    """``"trivial: <output>"`` of the runs' trivial outputs (``trivial_output``), or
    ``"trivial baseline"`` where they do not say."""
    if OUTPUT not in table.columns or table[OUTPUT].isna().all():
        return "trivial baseline"
    return "trivial: " + ", ".join(sorted(table[OUTPUT].dropna().astype(str).unique()))


def trivial_means(table: pd.DataFrame, metric: str, by: Sequence[str]) -> pd.DataFrame:
    """The seed mean of ``trivial_<metric>`` (column ``trivial``) per group of ``by``."""
    rows = table[table[column(metric)].notna()]
    return (rows.groupby(list(by), dropna=False)[column(metric)].mean().rename("trivial")
            .reset_index())


def draw_trivial_line(ax: Axes, xs: Sequence[float], values: Sequence[float],
                      label: str | None) -> None:
    """The trivial baseline over an x axis (a level where it does not depend on x);
    ``label`` None: unlabelled (a second line of the same legend entry)."""
    ax.plot(xs, values, color=TRIVIAL_COLOUR, linestyle=TRIVIAL_DASHES, linewidth=1.4,
            marker="x", markersize=4, zorder=2,
            label="_nolegend_" if label is None else label)


def draw_trivial_level(ax: Axes, value: float, label: str | None) -> None:
    """The trivial baseline as a horizontal level."""
    ax.axhline(value, color=TRIVIAL_COLOUR, linestyle=TRIVIAL_DASHES, linewidth=1.4, zorder=2,
               label="_nolegend_" if label is None else label)


def draw_trivial_points(ax: Axes, xs: Sequence[float], ys: Sequence[float],
                        label: str | None) -> None:
    """The trivial baseline as marked points (a trade-off panel's one point, a collapse
    plot's configurations)."""
    ax.plot(xs, ys, color=TRIVIAL_COLOUR, marker="X", markersize=8, linestyle="none",
            zorder=4, label="_nolegend_" if label is None else label)


def box_cells_no_better(ax: Axes, values: np.ndarray, trivial: np.ndarray,
                        label: str) -> None:
    """A heat map's trivial baseline: a grey dashed box around every cell whose value is at
    or above the trivial output's (the method is no better than it), and one legend entry
    ``label`` (drawn even where no cell is boxed)."""
    for (row, col), value in np.ndenumerate(values):
        if np.isfinite(value) and np.isfinite(trivial[row, col]) and value >= trivial[row, col]:
            ax.add_patch(Rectangle((col - CELL_BOX / 2, row - CELL_BOX / 2), CELL_BOX,
                                   CELL_BOX, fill=False, edgecolor=TRIVIAL_COLOUR,
                                   linestyle="--", linewidth=1.4))
    ax.plot([], [], color=TRIVIAL_COLOUR, linestyle="--",
            label=f"{label} (dashed box: no better than it)")


def below_majority_points(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Per group of ``by``: whether any of its runs is ``below_majority`` (False where the runs
    do not say)."""
    flags = (table[BELOW_MAJORITY].eq(True) if BELOW_MAJORITY in table
             else pd.Series(False, index=table.index))
    return (table.assign(**{BELOW_MAJORITY: flags}).groupby(list(by), dropna=False)
            [BELOW_MAJORITY].any().reset_index())


def draw_hollow(ax: Axes, points: pd.DataFrame, color: object, marker: str,
                markersize: float | None = None) -> None:
    """Hollow (white-faced) markers over the drawn points ``x, y`` of ``points`` whose
    ``below_majority`` is set, and one legend entry :data:`HOLLOW_LABEL`."""
    flagged = points.loc[points[BELOW_MAJORITY].eq(True)]
    if flagged.empty:
        return
    ax.plot(flagged["x"], flagged["y"], color=color, marker=marker, markersize=markersize,
            markerfacecolor="white", linestyle="none", zorder=5, label="_nolegend_")
    ax.plot([], [], color=TRIVIAL_COLOUR, marker="o", markerfacecolor="white",
            linestyle="none", label=HOLLOW_LABEL)
