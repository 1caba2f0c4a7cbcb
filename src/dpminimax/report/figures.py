"""Paper-style figures from the long results table: a metric (or an attack) against epsilon.

One panel per dataset; one line per method (colours, markers and labels from :mod:`.style`) with
its mean over seeds and a band for the 95% Student-t interval (:func:`.aggregate.summarize`; no
band with a single seed; an error bar when there is a single epsilon). The epsilon axis is
logarithmic with ticks at the grid values; non-private runs (``epsilon = inf``) are a horizontal
dashed reference line with their band; where the runs have it, the trivial baseline of the
metric (``trivial_<metric>``: it spends no budget) is a grey dashed level (:mod:`.trivial`).

Figures are ``matplotlib.figure.Figure`` objects, never registered with pyplot: nothing to close,
no GUI backend; PNGs are rendered by Agg and PDFs by the PDF backend.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from dpminimax.atomic import atomic_path
from dpminimax.data.standin import STANDIN_NOTE
from dpminimax.metrics.dp_ceiling import dp_advantage_ceiling, dp_auc_ceiling, dp_tpr_ceiling
from dpminimax.report.aggregate import ResultsTableError, epsilon_label, summarize
from dpminimax.report.claims.trivial import draw_trivial_level, has_trivial, trivial_label
from dpminimax.report.style import (
    BAND_ALPHA,
    CEILING_COLOUR,
    CHANCE_COLOUR,
    PANEL_SIZE,
    SAVE_DPI,
    SeriesStyle,
    paper_style,
    series_styles,
)
from dpminimax.trivial import column

EPSILON_AXIS_LABEL = "Privacy budget ε"
DEFAULT_EPSILON_RANGE = (0.1, 10.0)  # x range of the ceiling when there are no private runs



@dataclass(frozen=True)
class AttackAxis:
    """How an attack metric is drawn: its label, its DP ceiling and its chance level.

    TPRs at a low FPR are drawn on a symmetric-log axis, linear below the chance level (so a TPR
    of exactly 0 stays visible) and logarithmic above, as in the low-FPR attack literature.
    """

    ylabel: str
    ceiling: Callable[[np.ndarray, float], np.ndarray]
    chance: float
    log_scale: bool = False


ATTACK_METRICS: dict[str, AttackAxis] = {
    "attack_auc": AttackAxis("Membership-inference AUC", dp_auc_ceiling, 0.5),
    "attack_tpr_at_1pct_fpr": AttackAxis(
        "Attack TPR at 1% FPR", partial(dp_tpr_ceiling, 0.01), 0.01, log_scale=True
    ),
    "attack_tpr_at_01pct_fpr": AttackAxis(
        "Attack TPR at 0.1% FPR", partial(dp_tpr_ceiling, 0.001), 0.001, log_scale=True
    ),
    "attack_advantage": AttackAxis("Membership advantage (TPR − FPR)", dp_advantage_ceiling, 0.0),
}

Decorate = Callable[[Axes, tuple[float, float]], None]


def plot_metric_vs_epsilon(
    df: pd.DataFrame,
    metric: str,
    *,
    ylabel: str,
    out_paths: Sequence[str | os.PathLike],
    title: str | None = None,
) -> Figure:
    """``metric`` (mean over seeds, 95% band) against epsilon, one panel per dataset."""
    fig = _epsilon_figure(df, metric, ylabel=ylabel, title=title)
    save_figure(fig, out_paths)
    return fig


def plot_attack_vs_epsilon(
    df: pd.DataFrame,
    *,
    metric: str = "attack_auc",
    delta: float,
    out_paths: Sequence[str | os.PathLike],
    title: str | None = None,
) -> Figure:
    """An attack metric against epsilon, under the ceiling (epsilon, delta)-DP puts on any attack.

    The ceiling (Kairouz et al. 2015; :mod:`dpminimax.metrics.dp_ceiling`) is drawn over a dense
    epsilon range, with the chance level of the metric (AUC 0.5, TPR = the FPR, advantage 0).
    """
    if metric not in ATTACK_METRICS:
        raise ValueError(f"no DP ceiling for {metric!r}; known: {sorted(ATTACK_METRICS)}")
    axis = ATTACK_METRICS[metric]

    def draw_ceiling(ax: Axes, eps_range: tuple[float, float]) -> None:
        eps = np.geomspace(*eps_range, 300)
        ax.plot(eps, axis.ceiling(eps, delta), color=CEILING_COLOUR, linewidth=1.2, zorder=1,
                label=f"(ε, δ)-DP ceiling (δ = {delta:.0e})")
        ax.axhline(axis.chance, color=CHANCE_COLOUR, linestyle=(0, (4, 3)), linewidth=1.0,
                   zorder=1, label="chance")
        if axis.log_scale:
            ax.set_yscale("symlog", linthresh=axis.chance, linscale=0.5)

    fig = _epsilon_figure(df, metric, ylabel=axis.ylabel, title=title, decorate=draw_ceiling)
    save_figure(fig, out_paths)
    return fig


def standin_datasets(table: pd.DataFrame) -> list[str]:
    """The datasets of ``table`` whose runs were trained on a synthetic stand-in."""
    if "data_standin" not in table.columns:
        return []
    return sorted(table.loc[table["data_standin"].astype(bool), "dataset"].unique())


def stamp_standin(fig: Figure, datasets: Sequence[str]) -> None:
    """Mark a figure drawn (partly) from stand-in data, across its face and in its title."""
    names = ", ".join(datasets)
    fig.text(0.5, 0.5, f"NOT RUN: {names} unavailable\nsynthetic stand-in, not a result",
             ha="center", va="center", fontsize=18, color="#B00020", alpha=0.35, rotation=20,
             zorder=100)
    fig.suptitle(f"{STANDIN_NOTE}: {names}", color="#B00020", fontsize=9)


#: The attribute a drawer whose points are not seed means sets on its figure: its own note.
SEED_NOTE = "seed_note"


def stamp_seeds(fig: Figure, table: pd.DataFrame) -> None:
    """Say under the figure (as the title of its figure legend, where it has one) how many
    seeds each point averages and what its interval is (or the figure's own
    :data:`SEED_NOTE`)."""
    counts = table.groupby(["dataset", "method", "epsilon"])["seed"].nunique()
    if counts.empty:
        return
    low, high = int(counts.min()), int(counts.max())
    seeds = f"{low}" if low == high else f"{low}-{high}"
    note = getattr(fig, SEED_NOTE, None) or (f"mean over {seeds} seed(s) per point; intervals: "
                                             "95% Student-t, clipped to the metric's range")
    if fig.legends:  # a text under the figure overlapped the last row of a legend there
        legend = fig.legends[-1]
        legend.set_title(note, prop={"size": 6})
        legend.get_title().set_color("#555555")
        return
    # below the axes' area (the saved bounding box grows to hold it): never over an x label
    fig.text(0.99, 0.0, note, ha="right", va="top", fontsize=6, color="#555555")


def save_figure(fig: Figure, out_paths: Sequence[str | os.PathLike]) -> None:
    """Save ``fig`` to every path, atomically, in the format its suffix names (pdf, png ...)."""
    with paper_style():
        for path in map(Path, out_paths):
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=path.suffix.lstrip("."), dpi=SAVE_DPI,
                            bbox_inches="tight")


def _epsilon_figure(
    df: pd.DataFrame, metric: str, *, ylabel: str, title: str | None,
    decorate: Decorate | None = None,
) -> Figure:
    summary = _summary(df, metric)
    datasets = sorted(summary["dataset"].unique())
    styles = series_styles(summary["method"])
    grid = np.sort(summary.loc[np.isfinite(summary["epsilon"]), "epsilon"].unique())
    eps_range = (grid[0] / 1.5, grid[-1] * 1.5) if grid.size else DEFAULT_EPSILON_RANGE
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * len(datasets), PANEL_SIZE[1]), layout="constrained")
        axes = fig.subplots(1, len(datasets), squeeze=False, sharex=True)[0]
        for ax, dataset in zip(axes, datasets, strict=True):
            panel = summary.loc[summary["dataset"] == dataset]
            if decorate is not None:
                decorate(ax, eps_range)
            for method, style in styles.items():
                _draw_series(ax, panel.loc[panel["method"] == method], style)
            if has_trivial(df, metric):  # a level: the trivial output uses no budget
                own = df.loc[df["dataset"] == dataset, column(metric)].dropna()
                if not own.empty:
                    draw_trivial_level(ax, float(own.mean()), trivial_label(df))
            _epsilon_axis(ax, grid, eps_range)
            ax.set_title(dataset)
        axes[0].set_ylabel(ylabel)
        _figure_legend(fig, axes)
        if title is not None:
            fig.suptitle(title)
    return fig


def _summary(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    missing = [c for c in ("dataset", "method", "epsilon", metric) if c not in df.columns]
    if missing:
        raise ResultsTableError(f"cannot plot {metric!r}: no column(s) {missing}")
    rows = df.loc[df[metric].notna()]
    if rows.empty:
        raise ValueError(f"cannot plot {metric!r}: no row has a value")
    return summarize(rows, [metric], by=["dataset", "method", "epsilon"])


def _draw_series(ax: Axes, rows: pd.DataFrame, style: SeriesStyle) -> None:
    """A private curve (finite epsilons) and a reference line (epsilon = inf), each with a band."""
    finite = np.isfinite(rows["epsilon"])
    private = rows.loc[finite].sort_values("epsilon")
    if not private.empty:
        ax.plot(private["epsilon"], private["mean"], color=style.color, marker=style.marker,
                linestyle=style.linestyle, label=style.label, zorder=3)
        if len(private) > 1:
            ax.fill_between(private["epsilon"], private["ci_low"], private["ci_high"],
                            color=style.color, alpha=BAND_ALPHA, linewidth=0, zorder=2)
        else:  # a band over one epsilon has no width: an error bar instead
            ax.errorbar(private["epsilon"], private["mean"], color=style.color, capsize=3,
                        yerr=[private["mean"] - private["ci_low"],
                              private["ci_high"] - private["mean"]], zorder=2)
    for _, ref in rows.loc[~finite].iterrows():
        ax.axhline(ref["mean"], color=style.color, linestyle="--", linewidth=1.3, zorder=2,
                   label=f"{style.label} (ε = ∞)")
        if np.isfinite(ref["ci_low"]):
            ax.axhspan(ref["ci_low"], ref["ci_high"], color=style.color, alpha=BAND_ALPHA,
                       linewidth=0, zorder=1)


def _epsilon_axis(ax: Axes, grid: np.ndarray, eps_range: tuple[float, float]) -> None:
    ax.set_xscale("log")
    ax.set_xlim(*eps_range)
    ax.set_xticks(grid, labels=[epsilon_label(e) for e in grid])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(EPSILON_AXIS_LABEL)


def _figure_legend(fig: Figure, axes: Sequence[Axes]) -> None:
    """One legend for all panels (a method missing from a panel is still listed once)."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    fig.legend(list(entries.values()), list(entries), loc="outside lower center",
               ncols=min(len(entries), 2 * len(axes), 4), frameon=False)
