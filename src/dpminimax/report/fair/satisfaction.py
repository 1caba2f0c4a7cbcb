"""RaCO-DP Fig. 3: constraint satisfaction -- the achieved hard violation against the target.

One panel per dataset; x = the constraint target gamma the run was given (``p_gamma``), y = the
violation its hard predictions achieve on the training set (solid) and the test set (dashed),
one colour per epsilon, with 95% t-intervals over seeds; the diagonal y = gamma is the target.
The paper's claim (Sec. 6): "RaCO-DP consistently achieves the pre-specified constraint values
gamma as measured by the hard rate constraints".
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from dpminimax.report.aggregate import ResultsTableError, epsilon_label, summarize
from dpminimax.report.fair.tradeoff import VIOLATION_LABELS
from dpminimax.report.figures import _figure_legend, save_figure
from dpminimax.report.style import PANEL_SIZE, paper_style

SPLITS = {"train": "-", "test": "--"}

TARGET_COLUMN = "p_gamma"  # the constraint target gamma of every RaCO-DP run


def plot_constraint_satisfaction(
    df: pd.DataFrame, *, violation: str, out_paths: Sequence[str | os.PathLike],
    method: str = "racodp",
) -> Figure:
    """Achieved ``train_<violation>`` and ``<violation>`` of ``method`` against its target."""
    needed = ["dataset", "method", "epsilon", TARGET_COLUMN, violation, f"train_{violation}"]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ResultsTableError(f"constraint satisfaction: no column(s) {missing}")
    rows = df.loc[(df["method"] == method) & df[TARGET_COLUMN].notna()]
    if rows.empty:
        raise ValueError(f"constraint satisfaction: no {method!r} run with a target")
    summary = summarize(rows, [f"train_{violation}", violation],
                        by=["dataset", "epsilon", TARGET_COLUMN])
    datasets = sorted(summary["dataset"].unique())
    epsilons = sorted(summary["epsilon"].unique())
    colours = dict(zip(epsilons, sns.color_palette("viridis", len(epsilons)), strict=True))
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * len(datasets), PANEL_SIZE[1] * 1.1),
                     layout="constrained")
        axes = fig.subplots(1, len(datasets), squeeze=False)[0]
        for ax, dataset in zip(axes, datasets, strict=True):
            panel = summary.loc[summary["dataset"] == dataset]
            targets = np.sort(panel[TARGET_COLUMN].unique())
            ax.plot(targets, targets, color="0.4", linewidth=1, label="target γ")
            for eps in epsilons:
                for split, linestyle in SPLITS.items():
                    metric = violation if split == "test" else f"train_{violation}"
                    line = panel.loc[(panel["epsilon"] == eps) & (panel["metric"] == metric)]
                    line = line.sort_values(TARGET_COLUMN)
                    if line.empty:
                        continue
                    ax.errorbar(line[TARGET_COLUMN], line["mean"], capsize=2, marker="o",
                                markersize=3, color=colours[eps], linestyle=linestyle,
                                yerr=[line["mean"] - line["ci_low"],
                                      line["ci_high"] - line["mean"]],
                                label=f"ε = {epsilon_label(eps)}, {split}")
            ax.set_title(dataset)
            ax.set_xlabel("Constraint target γ")
        axes[0].set_ylabel(f"Achieved {VIOLATION_LABELS[violation].lower()} (hard)")
        _figure_legend(fig, axes)
    save_figure(fig, out_paths)
    return fig
