"""The DP bilevel paper's Section 3 leak as a figure and claim values (Example 3.1), from the
table of :func:`dpminimax.attacks.bilevel_leak.leak_study`: per (d, n) setting, the attack's AUC
per mechanism (M0-M2: exact or naively noised, M3: Algorithm 1 at each epsilon, M3-control: its
un-noised positive control), on x_out and, for M3 and the control, on the inner releases, and
M3's empirical epsilon lower bounds against its epsilon."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dpminimax.attacks.bilevel_leak import CONTROL
from dpminimax.report.aggregate import epsilon_label
from dpminimax.report.figures import save_figure
from dpminimax.report.style import paper_style

#: Claim id stems (papers/bilevel/claims.yaml: ``<stem>_d<d>_n<n>``) the leak table gives per
#: setting (:func:`leak_claims`).
LEAK_CLAIMS = ("leak_exact_auc", "leak_reconstruction_error", "leak_alg1_epsilon_hat_ratio",
               "leak_alg1_inner_epsilon_hat_ratio", "leak_alg1_control_auc")
#: The mechanisms whose outputs are exact or naively noised functions of the data mean.
EXACT = ("M0", "M1", "M2")


def setting_suffix(d: int, n: int) -> str:
    """The claim id suffix of a (d, n) setting: ``_d10_n1000``."""
    return f"_d{int(d)}_n{int(n)}"


def settings_of(table: pd.DataFrame) -> list[tuple[int, int]]:
    """The table's (d, n) settings, in the order of their first rows."""
    pairs = table[["d", "n"]].astype(int).drop_duplicates()
    return [(int(d), int(n)) for d, n in pairs.itertuples(index=False)]


def leak_claims(table: pd.DataFrame) -> dict[str, float]:
    """Per (d, n) setting (ids ``<stem>_d<d>_n<n>``): the smallest AUC and the largest
    reconstruction error of M0-M2, the largest epsilon_hat / epsilon of M3 on x_out and on
    the inner releases (below 1: Algorithm 1 keeps its epsilon), and the smallest AUC of the
    positive control over both statistics (1: the test sees an un-noised leak)."""
    claims = {}
    for d, n in settings_of(table):
        rows = table[(table["d"] == d) & (table["n"] == n)]
        exact = rows[rows["mechanism"].isin(EXACT)]
        private, control = (rows[rows["mechanism"] == name] for name in ("M3", CONTROL))
        values = (float(exact["auc"].min()), float(exact["reconstruction_error"].max()),
                  float((private["epsilon_hat"] / private["epsilon"]).max()),
                  float((private["epsilon_hat_inner"] / private["epsilon"]).max()),
                  float(control[["auc", "auc_inner"]].min().min()))
        claims |= {stem + setting_suffix(d, n): value
                   for stem, value in zip(LEAK_CLAIMS, values, strict=True)}
    return claims


def draw_leak(table: pd.DataFrame, out_paths: Sequence[str | os.PathLike]) -> None:
    """One row of panels per (d, n) setting. Left: the attack's AUC per mechanism (M3 at each
    epsilon; bars: on x_out, crosses: on the inner releases); right: M3's epsilon_hat (95%
    Clopper-Pearson) on each statistic against its epsilon, with the line epsilon_hat =
    epsilon."""
    settings = settings_of(table)
    with paper_style():
        fig, axes = plt.subplots(len(settings), 2, figsize=(9.0, 3.1 * len(settings) + 0.3),
                                 squeeze=False)
        for (d, n), (left, right) in zip(settings, axes, strict=True):
            rows = table[(table["d"] == d) & (table["n"] == n)]
            _draw_setting(rows, left, right)
        fig.suptitle("Example 3.1 leak: S+ vs S-, one row per (d, n)",
                     fontsize="medium")
        fig.tight_layout()
        save_figure(fig, out_paths)
        plt.close(fig)


def _draw_setting(table: pd.DataFrame, left, right) -> None:
    """One setting's AUC bars (left) and M3's epsilon_hat against epsilon (right)."""
    labels = [row.mechanism if math.isinf(row.epsilon)
              else f"{row.mechanism}, ε = {epsilon_label(row.epsilon)}"
              for row in table.itertuples()]
    private = table[table["mechanism"] == "M3"].sort_values("epsilon")
    first = table.iloc[0]
    colours = ["#c44e52" if math.isinf(e) else "#4c72b0" for e in table["epsilon"]]
    left.barh(np.arange(len(table)), table["auc"], color=colours, label="on x_out")
    left.scatter(table["auc_inner"], np.arange(len(table)), marker="x", color="black",
                 zorder=3, label="on the inner releases")
    left.legend(frameon=False, fontsize="small", loc="upper center", ncol=2,
                bbox_to_anchor=(0.5, -0.25))
    left.set_yticks(np.arange(len(table)), labels)
    left.invert_yaxis()
    left.axvline(0.5, color="grey", linestyle=":", linewidth=1.0)
    left.set_xlim(0.0, 1.0)
    left.set_xlabel("attack AUC (S+ vs S-)")
    left.set_title(f"d = {int(first['d'])}, n = {int(first['n'])}, "
                   f"{int(first['runs'])} runs per dataset", fontsize="medium")
    eps = private["epsilon"].to_numpy(dtype=float)
    right.plot(eps, private["epsilon_hat"], marker="o", color="#4c72b0",
               label="M3 (Alg. 1) on x_out: ε̂ (95%)")
    right.plot(eps, private["epsilon_hat_inner"], marker="x", color="black",
               label="M3 on the inner releases: ε̂ (95%)")
    right.plot(eps, eps, color="black", linestyle="--", linewidth=1.0, marker="_", label="ε̂ = ε")
    right.set_xscale("log")
    right.set_xticks(eps, [epsilon_label(e) for e in eps])
    right.minorticks_off()
    right.set_xlabel("ε of Algorithm 1")
    right.set_ylabel("empirical ε lower bound")
    right.legend(frameon=False, fontsize="small")
