"""The audit figure of a paper: eps_lower (one-run audit, 95%) against the epsilon each method
claims, for the real methods and their planted-bug controls (issue #18), and against the epsilon
of each of their releases made once, as planned and with its noise / 2 and / 4 (issue #42)."""

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


LEGEND_INCHES = 0.75  # below the axes: three rows of keys


def draw_audit(table: pd.DataFrame, out_paths: Sequence[str | os.PathLike]) -> None:
    """One row of points per method and release (``release`` ``"all"``: the trained model's
    canary audit; else that release's own audit): eps_lower of the real mechanism and of each
    control, with the claimed epsilon as a vertical mark (a point right of it is a detected
    violation). The axis is logarithmic above 0.01 (the releases' claims span decades)."""
    keys = list(dict.fromkeys(zip(table["method"], table["release"], strict=True)))
    with paper_style():
        fig, ax = plt.subplots(figsize=(6.4, 0.32 * len(keys) + 2.2))
        for y, (method, release) in enumerate(keys):
            rows = table[(table["method"] == method) & (table["release"] == release)]
            colour = method_style(method).color
            claimed = float(rows["epsilon_claimed"].iloc[0])
            ax.plot([claimed, claimed], [y - 0.4, y + 0.4], color="black", linewidth=2)
            for offset, (_, row) in zip(np.linspace(-0.2, 0.2, len(rows)), rows.iterrows(),
                                        strict=True):
                ax.scatter(row["epsilon_lower"], y + offset, color=colour,
                           marker=CONTROL_MARKERS.get(row["bug"], "o"), s=28, zorder=3,
                           edgecolor="black" if row["bug"] == "none" else "none")
            if y and keys[y - 1][0] != method:
                ax.axhline(y - 0.5, color="#bbbbbb", linewidth=0.6)
        for bug, marker in CONTROL_MARKERS.items():
            if bug in set(table["bug"]):
                ax.scatter([], [], marker=marker, color="grey", label=CONTROL_LABELS[bug])
        ax.plot([], [], color="black", linewidth=2, label="epsilon claimed")
        ax.set_yticks(range(len(keys)), [_row_label(*key) for key in keys])
        ax.set_ylim(-0.6, len(keys) - 0.4)
        ax.invert_yaxis()
        ax.set_xscale("symlog", linthresh=0.01, linscale=0.3)
        ax.set_xlim(0, 1.5 * max(table["epsilon_lower"].max(), table["epsilon_claimed"].max()))
        counts = "; ".join(f"{int(n)} {'in the model' if release else 'in a release alone'}"
                           for release, n in table.groupby(table["release"] == "all")[
                               "canaries"].first().sort_index(ascending=False).items())
        ax.set_xlabel(f"epsilon lower bound (one-run audit, "
                      f"{table['confidence'].iloc[0]:.0%} confidence; canaries: {counts})")
        fig.legend(loc="lower center", ncol=3, fontsize="small", frameon=False)
        fig.tight_layout(rect=(0, LEGEND_INCHES / fig.get_figheight(), 1, 1))
        save_figure(fig, out_paths)
        plt.close(fig)


def _row_label(method: str, release: str) -> str:
    """``"DP-FERMI"`` for the model's audit, ``"DP-FERMI: w_gradient"`` for a release's."""
    label = method_style(method).label
    return label if release == "all" else f"{label}: {release}"
