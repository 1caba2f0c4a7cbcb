"""RaCO-DP Fig. 9 (App. E.8): the fairness/utility trade-off and its spread at small privacy
budgets (the paper: epsilon in {0.01, 0.1, 1}, Adult, demographic parity, 95% CIs).

One panel per dataset; one series per epsilon (a colour each), traced over the constraint target
gamma: x = test misclassification error, y = the test violation, each point the mean over seeds
with 95% Student-t error bars in x and y (the summaries of :func:`.tradeoff.plot_tradeoff`),
hollow where a run is not better than the majority class (``below_majority``). The method's
noiseless clipped control (``<method>_noise_off``, issue #38), where run, is drawn dashed in its
epsilon's colour with square markers: the same plan without its noise.

Under sound accounting a tiny budget buys very few steps (about five at
epsilon = 0.01 on Adult), so each series' label states the step count T its runs were given
(``p_steps``, the largest T within the budget): a point at epsilon = 0.01 is a model trained for
those T steps, not a converged one.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from dpminimax.report.aggregate import epsilon_label
from dpminimax.report.claims.trivial import draw_hollow
from dpminimax.report.fair.tradeoff import (
    ERROR_AXIS_LABEL,
    TRACE_COLUMN,
    VIOLATION_LABELS,
    _our_summary,
    draw_majority,
)
from dpminimax.report.figures import _figure_legend, save_figure
from dpminimax.report.style import NOISE_OFF_SUFFIX, PANEL_SIZE, paper_style

STEPS_COLUMN = "p_steps"


def plot_low_budget(df: pd.DataFrame, *, violation: str, out_paths: Sequence[str | os.PathLike],
                    method: str = "racodp") -> Figure:
    """Test error (x) against ``violation`` (y) of ``method`` at each of its private budgets,
    and of its noiseless control where the table has its runs."""
    finite = np.isfinite(pd.to_numeric(df["epsilon"]))
    series = [(df.loc[(df["method"] == name) & finite], control)
              for name, control in ((method, False), (method + NOISE_OFF_SUFFIX, True))]
    series = [(rows, control, _our_summary(rows, violation))
              for rows, control in series if not rows.empty]
    if not series or series[0][1]:
        raise ValueError(f"low-budget figure: no private {method!r} run")
    epsilons = np.sort(series[0][2]["epsilon"].unique())
    colours = dict(zip(epsilons, sns.color_palette("viridis", len(epsilons)), strict=True))
    datasets = sorted(series[0][2]["dataset"].unique())
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.2 * len(datasets), PANEL_SIZE[1] * 1.15),
                     layout="constrained")
        axes = fig.subplots(1, len(datasets), squeeze=False, sharey=True)[0]
        for ax, dataset in zip(axes, datasets, strict=True):
            for (rows, control, summary), eps in itertools.product(series, epsilons):
                line = summary.loc[(summary["dataset"] == dataset) & (summary["epsilon"] == eps)]
                if line.empty:
                    continue
                line = line.sort_values(TRACE_COLUMN)
                here = rows.loc[(rows["dataset"] == dataset)
                                & (pd.to_numeric(rows["epsilon"]) == eps)]
                marker, style = ("s", "--") if control else ("o", "-")
                ax.errorbar(line["x"], line["y"], color=colours[eps], marker=marker,
                            markersize=4.5, linestyle=style if len(line) > 1 else "none",
                            capsize=2, elinewidth=0.9, label=_label(eps, here, control),
                            xerr=[line["x"] - line["x_low"], line["x_high"] - line["x"]],
                            yerr=[line["y"] - line["y_low"], line["y_high"] - line["y"]])
                draw_hollow(ax, line, colours[eps], marker, markersize=4.5)
            draw_majority(ax, df, violation, dataset)
            ax.set_title(dataset)
            ax.set_xlabel(ERROR_AXIS_LABEL)
        axes[0].set_ylabel(VIOLATION_LABELS.get(violation, violation))
        _figure_legend(fig, axes)
    save_figure(fig, out_paths)
    return fig


def _label(eps: float, runs: pd.DataFrame, control: bool = False) -> str:
    """``ε = 0.01 (T = 5)``; a range of T if the runs were given different step counts; a
    control's ``ε = 0.01, noise off (T = 5)``."""
    label = f"ε = {epsilon_label(eps)}" + (", noise off" if control else "")
    if STEPS_COLUMN not in runs.columns or runs[STEPS_COLUMN].isna().all():
        return label
    steps = pd.to_numeric(runs[STEPS_COLUMN]).dropna().astype(int)
    low, high = steps.min(), steps.max()
    return f"{label} (T = {low})" if low == high else f"{label} (T = {low}–{high})"
