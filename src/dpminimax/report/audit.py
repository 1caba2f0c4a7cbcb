"""The audit figure of a paper: eps_lower (one-run audit, 95%) against the epsilon each method
claims, for the real methods and their planted-bug controls (issue #18)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpminimax.report.figures import save_figure
from dpminimax.report.style import method_style, paper_style

CONTROL_MARKERS = {"none": "o", "noise_off": "X", "noise_over_batch": "v",
                   "clipping_removed": "D", "noise_over_2": "^", "noise_over_4": "s"}
CONTROL_LABELS = {"none": "as implemented", "noise_off": "control: noise off",
                  "noise_over_batch": "control: noise / batch size",
                  "clipping_removed": "control: clipping removed",
                  "noise_over_2": "control: noise / 2", "noise_over_4": "control: noise / 4"}


def draw_audit(table: pd.DataFrame, out_paths: Sequence[str | os.PathLike]) -> None:
    """One row of points per method: eps_lower of the method and of each control, with the
    claimed epsilon as a vertical mark (a point right of it is a detected violation)."""
    methods = list(dict.fromkeys(table["method"]))
    with paper_style():
        fig, ax = plt.subplots(figsize=(6.4, 0.7 * len(methods) + 2.2))
        for y, method in enumerate(methods):
            rows = table[table["method"] == method]
            colour = method_style(method).color
            claimed = float(rows["epsilon_claimed"].iloc[0])
            ax.plot([claimed, claimed], [y - 0.35, y + 0.35], color="black", linewidth=2)
            for offset, (_, row) in zip(np.linspace(-0.2, 0.2, len(rows)), rows.iterrows(),
                                        strict=True):
                ax.scatter(row["epsilon_lower"], y + offset, color=colour,
                           marker=CONTROL_MARKERS.get(row["bug"], "o"), s=36, zorder=3,
                           edgecolor="black" if row["bug"] == "none" else "none")
        for bug, marker in CONTROL_MARKERS.items():
            if bug in set(table["bug"]):
                ax.scatter([], [], marker=marker, color="grey", label=CONTROL_LABELS[bug])
        ax.plot([], [], color="black", linewidth=2, label="epsilon claimed")
        ax.set_yticks(range(len(methods)), [method_style(m).label for m in methods])
        ax.set_ylim(-0.6, len(methods) - 0.4)
        ax.invert_yaxis()
        first = table.iloc[0]
        ax.set_xlabel(f"epsilon lower bound (one-run audit, {first['confidence']:.0%} "
                      f"confidence, {int(first['canaries'])} canaries)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.25 / len(methods)),
                  ncol=3, fontsize="small", frameon=False)
        fig.tight_layout()
        save_figure(fig, out_paths)
        plt.close(fig)
