"""The collapse plot of DP bilevel's rate study (spec 002 §6.2 plot 4): every private
configuration's measured ||G_{F_S,eta}(x_out)|| (mean over seeds, 95% interval) against
Theorem 4.1's rate without constants,

    P(n, epsilon, d_x, d_y) = (sqrt(d_x) / (epsilon n))^(1/2) + (sqrt(d_y) / (epsilon n))^(1/3),

log-log, with each method's least-squares slope and a dotted slope-1 line: the theorem's rate is
tight where the points fall on a line of slope 1.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dpminimax.report.aggregate import require_columns, summarize
from dpminimax.report.figures import save_figure
from dpminimax.report.rates import series_colours, series_label
from dpminimax.report.style import PANEL_SIZE, method_style, paper_style

COLUMNS = ("method", "epsilon", "p_n", "d_x", "d_y")


def predicted_rate(n, epsilon, d_x, d_y):
    """Theorem 4.1's two terms without their constants (module docstring)."""
    scale = np.asarray(epsilon, dtype=float) * np.asarray(n, dtype=float)
    return (np.sqrt(d_x) / scale) ** 0.5 + (np.sqrt(d_y) / scale) ** (1 / 3)


def collapse_points(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per private configuration: the seed-mean ``metric`` (and its interval) and
    the predicted rate ``predicted``."""
    require_columns(table, [*COLUMNS, metric], "the collapse plot",
                    "bilevel runs record d_x and d_y")
    private = table[np.isfinite(table["epsilon"]) & table[metric].notna()]
    summary = summarize(private, [metric], by=list(COLUMNS))
    return summary.assign(predicted=predicted_rate(summary["p_n"], summary["epsilon"],
                                                   summary["d_x"], summary["d_y"]))


def plot_collapse(table: pd.DataFrame, metric: str, *, ylabel: str,
                  out_paths: Sequence[str | os.PathLike]) -> Figure:
    """The collapse plot of ``metric`` (module docstring)."""
    points = collapse_points(table, metric)
    methods = sorted(points["method"].unique())
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.6, PANEL_SIZE[1] * 1.6), layout="constrained")
        ax = fig.subplots()
        for colour, method in zip(series_colours(len(methods)), methods, strict=True):
            rows = points[points["method"] == method]
            slope = np.polyfit(np.log(rows["predicted"]), np.log(rows["mean"]), 1)[0] if len(
                rows) > 1 else float("nan")
            ax.errorbar(rows["predicted"], rows["mean"],
                        yerr=[rows["mean"] - rows["ci_low"].clip(lower=rows["mean"] * 1e-3),
                              rows["ci_high"] - rows["mean"]],
                        color=colour, marker=method_style(method).marker, linestyle="none",
                        capsize=2, label=f"{series_label(method)} (slope {slope:.2f})")
        xs = np.geomspace(points["predicted"].min(), points["predicted"].max(), 50)
        centre = np.exp(np.mean(np.log(points["mean"]))) / np.exp(
            np.mean(np.log(points["predicted"])))
        ax.plot(xs, centre * xs, color="#777777", linestyle=":", label="slope 1 (tight rate)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("(√d_x / εn)^(1/2) + (√d_y / εn)^(1/3)")
        ax.set_ylabel(ylabel)
        ax.legend(loc="best", fontsize="small")
        save_figure(fig, out_paths)
    return fig
