"""RaCO-DP Fig. 8a (App. E.6): the clipping norm C against the constraint value it lets the
descent-ascent reach.

The paper's study: the FNR constraint on Adult with the strict target gamma = 0 and no privacy
noise (sigma = 0, b = inf; here non-private SGDA with a finite ``clip``), sweeping C. "With a small
clipping norm (C <= 2) the empirical FNR violation is still above 0.6 ... once C >= 12.5, the FNR
aligns with the target (red line)": the obstacle is the clipping bias, not the noise.

One panel per dataset; x = C (``p_clip``, log axis, ticks at the swept values), y = the achieved
hard constraint value (:mod:`.constraint_value`) on the training set (solid) and the test set
(dashed), mean over seeds with 95% Student-t error bars; one colour per series (method, epsilon,
gamma); the red dashed line is the target gamma. Runs without clipping (C = inf) are left out.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from dpminimax.report.aggregate import ResultsTableError, summarize
from dpminimax.report.fair.constraint_value import (
    CONSTRAINT_NAMES,
    SPLITS,
    TARGET_COLUMN,
    value_column,
    with_constraint_values,
)
from dpminimax.report.figures import _figure_legend, save_figure
from dpminimax.report.style import PANEL_SIZE, method_style, paper_style

CLIP_COLUMN = "p_clip"
SPLIT_STYLES = {"train": "-", "test": "--"}
TARGET_COLOUR = "#D62728"  # the paper's red target line


def plot_clip_sweep(df: pd.DataFrame, *, constraint: str,
                    out_paths: Sequence[str | os.PathLike]) -> Figure:
    """Achieved ``constraint`` value (train and test) against the clipping norm, per dataset."""
    rows = with_constraint_values(df, constraint)
    if CLIP_COLUMN not in rows.columns:
        raise ResultsTableError(f"clip sweep: no column {CLIP_COLUMN!r}")
    rows = rows.assign(**{CLIP_COLUMN: pd.to_numeric(rows[CLIP_COLUMN]).astype(float),
                          "epsilon": pd.to_numeric(rows["epsilon"]).astype(float)})
    rows = rows.loc[np.isfinite(rows[CLIP_COLUMN])]
    if rows.empty:
        raise ValueError(f"clip sweep: no {constraint!r} run with a finite clipping norm")
    series_keys = ["method", "epsilon", TARGET_COLUMN]
    summary = summarize(rows, [value_column(s) for s in SPLITS],
                        by=["dataset", *series_keys, CLIP_COLUMN])
    series = list(summary[series_keys].drop_duplicates().itertuples(index=False, name=None))
    colours = dict(zip(series, sns.color_palette("colorblind", len(series)), strict=True))
    datasets = sorted(summary["dataset"].unique())
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * len(datasets), PANEL_SIZE[1] * 1.1),
                     layout="constrained")
        axes = fig.subplots(1, len(datasets), squeeze=False)[0]
        for ax, dataset in zip(axes, datasets, strict=True):
            panel = summary.loc[summary["dataset"] == dataset]
            for gamma in np.sort(panel[TARGET_COLUMN].unique()):
                ax.axhline(gamma, color=TARGET_COLOUR, linestyle="--", linewidth=1.1, zorder=1,
                           label=f"target γ = {gamma:g}")
            for key, mine in panel.groupby(series_keys, sort=True):
                for split in SPLITS:
                    line = mine.loc[mine["metric"] == value_column(split)]
                    if line.empty:
                        continue
                    line = line.sort_values(CLIP_COLUMN)
                    ax.errorbar(line[CLIP_COLUMN], line["mean"], capsize=2, marker="o",
                                markersize=3.5, color=colours[key],
                                linestyle=SPLIT_STYLES[split], zorder=3,
                                yerr=[line["mean"] - line["ci_low"],
                                      line["ci_high"] - line["mean"]],
                                label=f"{_series_label(*key)}, {split}")
            clips = np.sort(panel[CLIP_COLUMN].unique())
            ax.set_xscale("log")
            ax.set_xticks(clips, [f"{c:g}" for c in clips])
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_title(dataset)
            ax.set_xlabel("Clipping norm C")
        axes[0].set_ylabel(f"Achieved {CONSTRAINT_NAMES.get(constraint, constraint)} (hard)")
        _figure_legend(fig, axes)
    save_figure(fig, out_paths)
    return fig


def _series_label(method: str, epsilon: float, gamma: float) -> str:
    budget = "" if math.isinf(epsilon) else f" (ε = {epsilon:g})"
    return f"{method_style(method).label}{budget}, γ = {gamma:g}"
