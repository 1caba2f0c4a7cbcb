"""RaCO-DP Fig. 8b (App. E.4): soft against hard dual updates.

The dual ascent of Algorithm 1 post-processes the noisy histogram of softmax probabilities
("soft", the analysed default) or of arg-max predictions ("hard", ``p_dual_update``). The paper:
"Trade-off between test error and demographic parity. Dashed lines show target constraints, with
soft (hollow circles) and hard (solid dots) implementations achieving similar performance."

One panel per (dataset, epsilon); x = test misclassification error, y = the test violation; each
point is the mean over seeds of one (dual update, target gamma) with 95% Student-t error bars in x
and y (the summaries of :func:`.tradeoff.plot_tradeoff`), coloured by gamma, hollow for soft and
solid for hard; a thin grey line links the points of one dual update in the order of gamma
(dotted: soft, solid: hard); the dashed line in each gamma's colour is that target.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from dpminimax.report.aggregate import ResultsTableError, epsilon_label
from dpminimax.report.fair.tradeoff import (
    ERROR_AXIS_LABEL,
    TRACE_COLUMN,
    VIOLATION_LABELS,
    _our_summary,
)
from dpminimax.report.figures import save_figure
from dpminimax.report.style import PANEL_SIZE, paper_style

DUAL_COLUMN = "p_dual_update"
#: dual update -> (label, marker face filled, linking line style)
DUALS = {"soft": ("Soft dual update", False, ":"), "hard": ("Hard dual update", True, "-")}
LINK_COLOUR = "0.55"


def plot_dual_update(df: pd.DataFrame, *, violation: str,
                     out_paths: Sequence[str | os.PathLike], method: str = "racodp") -> Figure:
    """Test error (x) against ``violation`` (y) of ``method``'s soft and hard dual updates."""
    if DUAL_COLUMN not in df.columns:
        raise ResultsTableError(f"dual update figure: no column {DUAL_COLUMN!r}")
    rows = df.loc[(df["method"] == method) & df[DUAL_COLUMN].isin(list(DUALS))]
    if rows.empty:
        raise ValueError(f"dual update figure: no {method!r} run with a soft or hard dual update")
    # one "method" per dual update, so the trade-off summary keeps them apart
    summary = _our_summary(rows.assign(method=rows[DUAL_COLUMN]), violation)
    if summary[TRACE_COLUMN].isna().any():
        raise ValueError("dual update figure: every run needs its constraint target p_gamma")
    panels = list(summary[["dataset", "epsilon"]].drop_duplicates()
                  .sort_values(["dataset", "epsilon"]).itertuples(index=False, name=None))
    gammas = np.sort(summary[TRACE_COLUMN].unique())
    colours = dict(zip(gammas, sns.color_palette("viridis", len(gammas)), strict=True))
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * len(panels), PANEL_SIZE[1] * 1.15),
                     layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
        for ax, (dataset, eps) in zip(axes, panels, strict=True):
            here = summary.loc[(summary["dataset"] == dataset) & (summary["epsilon"] == eps)]
            for gamma in np.sort(here[TRACE_COLUMN].unique()):
                ax.axhline(gamma, color=colours[gamma], linestyle="--", linewidth=1.0, zorder=1)
            for dual in DUALS:
                _draw_dual(ax, here.loc[here["method"] == dual], dual, colours)
            ax.set_title(f"{dataset}, ε = {epsilon_label(eps)}")
            ax.set_xlabel(ERROR_AXIS_LABEL)
        axes[0].set_ylabel(VIOLATION_LABELS.get(violation, violation))
        fig.legend(handles=_legend_handles(colours), loc="outside lower center",
                   ncols=min(4, len(colours) + len(DUALS)), frameon=False)
    save_figure(fig, out_paths)
    return fig


def _draw_dual(ax: Axes, rows: pd.DataFrame, dual: str, colours: dict) -> None:
    if rows.empty:
        return
    label, filled, link = DUALS[dual]
    rows = rows.sort_values(TRACE_COLUMN)
    ax.plot(rows["x"], rows["y"], color=LINK_COLOUR, linestyle=link, linewidth=0.9, zorder=2)
    for point in rows.itertuples(index=False):
        colour = colours[getattr(point, TRACE_COLUMN)]
        ax.plot([point.x], [point.y], linestyle="none", marker="o", markersize=6.5,
                color=colour, markerfacecolor=colour if filled else "none",
                markeredgewidth=1.4, zorder=4, gid=dual)
        if np.isfinite(point.x_low) and np.isfinite(point.y_low):
            ax.errorbar([point.x], [point.y], xerr=[[point.x - point.x_low],
                                                    [point.x_high - point.x]],
                        yerr=[[point.y - point.y_low], [point.y_high - point.y]],
                        fmt="none", ecolor=colour, elinewidth=0.9, capsize=2, zorder=3)


def _legend_handles(colours: dict) -> list[Line2D]:
    duals = [Line2D([], [], color=LINK_COLOUR, linestyle=link, marker="o",
                    markerfacecolor=LINK_COLOUR if filled else "none", label=label)
             for label, filled, link in DUALS.values()]
    targets = [Line2D([], [], color=colour, linestyle="--", label=f"target γ = {gamma:g}")
               for gamma, colour in colours.items()]
    return duals + targets
