"""The LiRA figure and table of a paper (issue #23): membership attacks on shadow models
(:mod:`dpminimax.attacks.shadows`) under the ceiling (epsilon, delta)-DP puts on any attack.

The figure follows Carlini et al. (2022): a log-log ROC per privacy target, then AUC and TPR at
0.1% FPR against the epsilon each method spent. Non-private methods sit at an
"∞" position right of the largest finite epsilon. The ceilings are those of the relation between
the shadows' IN and OUT models (column ``relation``,
:func:`~dpminimax.metrics.dp_ceiling.relation_privacy`): the epsilon spent where rows join the
member sets independently (one row added), (2 eps, (1 + e^eps) delta) for fixed-size member sets
(a row replaced). The table flags every attack whose confidence interval clears that ceiling, or
whose empirical epsilon lower bound exceeds its epsilon, on the data rows and (``targets``
``canaries``) on the planted outliers of the pool alone, where the noise-off control must be
flagged: the positive control that the attack can see a leak.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from dpminimax.metrics.dp_ceiling import dp_auc_ceiling, dp_tpr_ceiling, relation_privacy
from dpminimax.report.figures import save_figure
from dpminimax.report.style import (
    CEILING_COLOUR,
    CHANCE_COLOUR,
    PANEL_SIZE,
    SeriesStyle,
    paper_style,
    series_styles,
)

#: The attacks in table order (as :data:`dpminimax.attacks.shadows.ATTACKS`, not imported from
#: there: it loads torch).
ATTACK_ORDER = ("lira_online", "lira_offline", "rmia", "loss_threshold")
#: The data rows first, then the pool's planted canaries.
TARGETS_ORDER = {"rows": 0, "canaries": 1}
SUMMARY_COLUMNS = (
    "dataset", "method", "control", "epsilon", "epsilon_spent", "attack", "targets", "auc",
    "tpr_at_0.1pct", "tpr_at_0.1pct_low", "tpr_at_0.1pct_high", "tpr_at_0.1pct_fpr_high",
    "tpr_at_1pct", "tpr_at_1pct_low", "tpr_at_1pct_high", "tpr_at_1pct_fpr_high", "epsilon_lower",
    "ceiling_auc", "ceiling_tpr_at_0.1pct", "ceiling_tpr_at_1pct", "relation",
    "epsilon_ceiling", "delta_ceiling", "shadows", "pool", "canaries",
)
FPR_RANGE = (1e-4, 1.0)
LOW_FPR = 1e-3  # the FPR of the bottom-right panel
KEY_COLUMNS = 4  # at most
KEY_ROW_INCHES = 0.2  # height of a legend row
CEILING_LINE = {"color": CEILING_COLOUR, "linestyle": ":", "linewidth": 1.4, "zorder": 1}
CHANCE_LINE = {"color": CHANCE_COLOUR, "linestyle": (0, (4, 3)), "linewidth": 1.0, "zorder": 1}


def lira_summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, method, epsilon, attack) with ``above_ceiling``: at 0.1% or 1% FPR
    the TPR's lower bound exceeds the DP ceiling of the shadows' relation (``epsilon_ceiling``,
    ``delta_ceiling``) at the FPR's upper bound (both rates are estimated), or the epsilon lower
    bound exceeds that epsilon. All are checks of one Bonferroni family of bounds clustered over
    targets and rows (:func:`dpminimax.attacks.lira.attack_metrics`; the epsilon bound covers
    the two ceiling checks): a correct mechanism's row is flagged with probability at most
    about 5% (about: the thresholds are set on the same non-members, the variance is
    estimated)."""
    epsilon = metrics["epsilon_ceiling"].to_numpy()
    delta = metrics["delta_ceiling"].to_numpy()
    above = metrics["epsilon_lower"] > epsilon
    for tag in ("0.1pct", "1pct"):
        ceiling = dp_tpr_ceiling(metrics[f"tpr_at_{tag}_fpr_high"].to_numpy(), epsilon, delta)
        above |= metrics[f"tpr_at_{tag}_low"] > ceiling
    table = metrics[list(SUMMARY_COLUMNS)].assign(above_ceiling=above)
    order = {attack: i for i, attack in enumerate(ATTACK_ORDER)} | TARGETS_ORDER
    return table.sort_values(
        ["dataset", "method", "epsilon", "targets", "attack"], kind="stable",
        key=lambda col: col.map(order) if col.name in ("attack", "targets") else col,
    ).reset_index(drop=True)


def draw_lira(metrics: pd.DataFrame, roc: pd.DataFrame,
              outputs: Sequence[str | os.PathLike]) -> None:
    """Per dataset, a row of log-log ROC panels (one per epsilon target; LiRA online solid,
    loss threshold dashed, the DP ceiling dotted) over AUC and TPR at 0.1% FPR against the
    epsilon spent, all of the data rows (the planted canaries are the table's); saved to every
    path of ``outputs``."""
    metrics = metrics[metrics["targets"] == "rows"]
    datasets = sorted(metrics["dataset"].unique())
    epsilons = {d: sorted(metrics.loc[metrics["dataset"] == d, "epsilon"].unique(),
                          key=lambda e: (math.isinf(e), e)) for d in datasets}
    styles = series_styles(metrics["method"])
    handles = _legend_handles(styles)
    width = max(2, *map(len, epsilons.values()))  # top-row panel slots
    height = 2 * PANEL_SIZE[1] * 1.1 * len(datasets)
    rows = math.ceil(len(handles) / KEY_COLUMNS)
    key = KEY_ROW_INCHES * rows + 0.25
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * width, height + key), layout="constrained")
        # the key in a subfigure of its own: a figure legend "outside lower center" and a
        # footer below the figure would be moved onto each other by bbox_inches="tight"
        panels, below = fig.subfigures(2, 1, height_ratios=[height, key])
        grid = panels.add_gridspec(2 * len(datasets), 2 * width)
        for i, dataset in enumerate(datasets):
            prefix = f"{dataset}, " if len(datasets) > 1 else ""
            here = metrics.loc[metrics["dataset"] == dataset]
            start = width - len(epsilons[dataset])  # centre a short top row
            for j, eps in enumerate(epsilons[dataset]):
                ax = panels.add_subplot(grid[2 * i, start + 2 * j:start + 2 * j + 2])
                _roc_panel(ax, roc.loc[(roc["dataset"] == dataset) & (roc["epsilon"] == eps)],
                           here.loc[here["epsilon"] == eps], styles)
                ax.set_title(prefix + ("non-private" if math.isinf(eps) else f"ε = {eps:g}"))
            for k, (metric, ylabel) in enumerate((("auc", "Attack AUC"),
                                                  ("tpr_at_0.1pct", "TPR at 0.1% FPR"))):
                ax = panels.add_subplot(grid[2 * i + 1, k * width:(k + 1) * width])
                _epsilon_panel(ax, here, metric, styles)
                ax.set_ylabel(ylabel)
                ax.set_title(f"{prefix}{ylabel} against ε spent")
        below.legend(handles=handles, loc="upper center", ncols=math.ceil(len(handles) / rows),
                     frameon=False)
        below.text(0.5, 0.0, f"LiRA (Carlini et al. 2022), {_values(metrics['shadows'])} "
                   f"shadow models on a pool of {_values(metrics['pool'])} "
                   f"training rows ({_relation_note(metrics)}); dotted: the most any attack "
                   "can reach under (ε, δ)-DP between IN and OUT models",
                   ha="center", va="bottom", fontsize=7, color="#555555")
    save_figure(fig, outputs)


def _roc_panel(ax: Axes, roc: pd.DataFrame, metrics: pd.DataFrame,
               styles: dict[str, SeriesStyle]) -> None:
    """Log-log ROC of LiRA online (solid) and the loss threshold (dashed) per method, the
    ceiling of the largest ceiling epsilon in the panel (it bounds every method) and chance."""
    fpr = np.geomspace(*FPR_RANGE, 200)
    ax.plot(FPR_RANGE, FPR_RANGE, **CHANCE_LINE)
    loosest = metrics.loc[metrics["epsilon_ceiling"].idxmax()] if len(metrics) else None
    if loosest is not None and np.isfinite(loosest["epsilon_ceiling"]):
        ax.plot(fpr, dp_tpr_ceiling(fpr, loosest["epsilon_ceiling"],
                                    metrics["delta_ceiling"].max()), **CEILING_LINE)
    for method, style in styles.items():
        for attack, linestyle in (("lira_online", "-"), ("loss_threshold", "--")):
            curve = roc.loc[(roc["method"] == method) & (roc["attack"] == attack)]
            curve = curve.sort_values("fpr")
            ax.plot(curve["fpr"], curve["tpr"], color=style.color, linestyle=linestyle, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*FPR_RANGE)
    ax.set_ylim(*FPR_RANGE)
    for axis in (ax.xaxis, ax.yaxis):  # decades only: minor log ticks cost seconds to lay out
        axis.set_minor_locator(NullLocator())
    ax.set_xlabel("False-positive rate")
    ax.set_ylabel("True-positive rate")


def _epsilon_panel(ax: Axes, metrics: pd.DataFrame, metric: str,
                   styles: dict[str, SeriesStyle]) -> None:
    """``metric`` of LiRA online (filled, with its interval when it has one) and the loss
    threshold (hollow) against the epsilon spent, non-private runs at "∞", and the ceiling."""
    private = np.isfinite(metrics["epsilon"]) & np.isfinite(metrics["epsilon_spent"])
    spent = metrics.loc[private, "epsilon_spent"]
    infinity = spent.max() * 4 if private.any() else 1.0  # where non-private runs are drawn
    low = spent.min() / 1.5 if private.any() else infinity / 1.5
    high = infinity * 1.5 if (~private).any() else spent.max() * 1.5
    x = metrics["epsilon_spent"].where(private, infinity)
    ax.axhline(0.5 if metric == "auc" else LOW_FPR, **CHANCE_LINE)
    if private.any():
        eps = np.geomspace(low, min(high, infinity / 2), 200)
        loosest = "replace_one" if (metrics["relation"] == "replace_one").any() else \
            "add_or_remove_one"  # the ceiling that bounds every row of the panel
        ceiling = relation_privacy(loosest, eps, metrics["delta"].max())
        ax.plot(eps, dp_auc_ceiling(*ceiling) if metric == "auc"
                else dp_tpr_ceiling(LOW_FPR, *ceiling), **CEILING_LINE)
    if private.any() and (~private).any():  # the axis break before "∞"
        ax.axvline(infinity / 2, color=CHANCE_COLOUR, linewidth=0.6, zorder=1)
    for method, style in styles.items():
        for attack, face, linestyle in (("lira_online", style.color, "-"),
                                        ("loss_threshold", "none", "--")):
            mine = (metrics["method"] == method) & (metrics["attack"] == attack)
            for part, line in ((mine & private, linestyle), (mine & ~private, "none")):
                rows = metrics.loc[part].assign(x=x).sort_values("x")
                bars = f"{metric}_low" in rows and attack == "lira_online"
                ax.errorbar(rows["x"], rows[metric], color=style.color, marker=style.marker,
                            markerfacecolor=face, linestyle=line, capsize=2, elinewidth=0.9,
                            yerr=[rows[metric] - rows[f"{metric}_low"],
                                  rows[f"{metric}_high"] - rows[metric]] if bars else None,
                            zorder=3)
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ticks = sorted(metrics.loc[private, "epsilon"].unique())
    labels = [f"{e:g}" for e in ticks]
    if (~private).any():
        ticks, labels = [*ticks, infinity], [*labels, "∞"]
    ax.set_xticks(ticks, labels=labels)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("ε spent (ticks: targets; ∞: non-private)")
    if metric != "auc":  # linear below the chance level: a TPR of 0 stays visible
        ax.set_yscale("symlog", linthresh=LOW_FPR, linscale=0.5)
        ax.set_ylim(0, 1.3)


def _legend_handles(styles: dict[str, SeriesStyle]) -> list[Line2D]:
    """The methods by colour, then the attacks, the ceiling and chance by line style."""
    return [
        *(Line2D([], [], color=s.color, marker=s.marker, label=s.label) for s in styles.values()),
        Line2D([], [], color="black", marker="o",
               label="LiRA online (bars: clustered over targets and rows)"),
        Line2D([], [], color="black", marker="o", markerfacecolor="none", linestyle="--",
               label="loss threshold (Yeom et al. 2018)"),
        Line2D([], [], label="(ε, δ)-DP ceiling", **CEILING_LINE),
        Line2D([], [], label="chance", **CHANCE_LINE),
    ]


def _relation_note(metrics: pd.DataFrame) -> str:
    """How the shadows drew their members, from the table's relations."""
    notes = {"add_or_remove_one": "each row in each shadow with probability 1/2",
             "replace_one": "each on a fixed half, IN and OUT differ by a replaced row"}
    return "; ".join(notes[r] for r in sorted(metrics["relation"].unique()))


def _values(column: pd.Series) -> str:
    """``"16"``, or ``"16/32"`` when the rows differ."""
    return "/".join(f"{v:g}" for v in sorted(column.unique()))
