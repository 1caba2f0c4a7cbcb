"""The pilot that tunes Thm. 4.1's schedule multipliers once (our pilot).

Theory schedule: lambda = c_lam s^(1/3), T = ceil(c_T s^(2/3)), s = epsilon n / sqrt(d_y)
(:func:`dpminimax.algorithms.bilevel.dp_bilevel.outer_schedule`). The pilot runs A1-OP over a
grid of (c_lam, c_T) on a sample independent of every evaluation sample; the multipliers whose
median ||G_{F_S,eta}(x_out)|| over seeds is smallest (our primary metric) are
frozen for the evaluation experiments. Meta-tuning is outside the privacy accounting (A22).

* :func:`pilot_table`: per setting and cell, the median and 90th percentile over seeds, the
  lambda and T the cell gives and which cell is the argmin of the median (and x0's median,
  the trivial baseline, where the runs have it);
* :func:`pilot_choice`: that argmin; :func:`plot_pilot`: the medians as a heat map, every
  cell no better than x0 in a grey dashed box;
* :func:`multiplier_gap` / :func:`measured_freezes`: how far the multipliers the evaluation
  runs used are from the pilot's choice (the freeze claim, ``measure.pilot``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from dpminimax.report.aggregate import require_columns
from dpminimax.report.claims.trivial import box_cells_no_better, has_trivial, trivial_label
from dpminimax.report.figures import SEED_NOTE, save_figure
from dpminimax.report.style import PANEL_SIZE, paper_style
from dpminimax.trivial import column as trivial_column

METRIC = "gradient_mapping_norm"
#: The tuned multipliers, as the runs table records them (the method's resolved parameters).
MULTIPLIERS = ("p_c_lam", "p_c_T")
#: One pilot setting: the argmin is taken within each.
SETTING = ("dataset", "method", "epsilon", "p_n")
#: The schedule's lambda (raised to lambda_min where below it, A5) and T at a cell.
SCHEDULED = {"lam": "p_lam", "lam_raised": "p_lam_raised", "outer_steps": "p_outer_steps"}


def pilot_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, c_lam, c_T): ``seeds``, ``median`` and ``p90`` (90th percentile,
    linear interpolation) of ||G_{F_S,eta}(x_out)|| over the seeds, the scheduled ``lam``,
    ``lam_raised`` and ``outer_steps``, and ``argmin`` (True at the smallest median of the
    setting; the first in (c_lam, c_T) order on a tie)."""
    require_columns(table, [*SETTING, *MULTIPLIERS, *SCHEDULED.values(), METRIC],
                    "the schedule pilot", "A1 runs with schedule: theory record them")
    keys = [*SETTING, *MULTIPLIERS]
    grouped = table.groupby(keys, sort=True)
    cells = grouped[METRIC].agg(seeds="count", median="median",
                                p90=lambda v: float(np.quantile(v, 0.9)))
    if trivial_column(METRIC) in table.columns:  # x0's median, the trivial baseline
        cells["trivial_median"] = grouped[trivial_column(METRIC)].median()
    cells = cells.join(grouped[list(SCHEDULED.values())].first().rename(
        columns={v: k for k, v in SCHEDULED.items()})).reset_index()
    best = cells.groupby(list(SETTING), sort=False)["median"].idxmin()
    cells["argmin"] = cells.index.isin(best.to_numpy())
    return cells.rename(columns={"p_c_lam": "c_lam", "p_c_T": "c_T"})


def pilot_choice(table: pd.DataFrame) -> tuple[float, float]:
    """``(c_lam, c_T)`` at the argmin of the pilot's median (:func:`pilot_table`); the runs
    must be one setting."""
    cells = pilot_table(table)
    chosen = cells.loc[cells["argmin"]]
    if len(chosen) != 1:
        raise ValueError(f"the pilot's runs hold {len(chosen)} settings "
                         f"{chosen[list(SETTING)].to_dict(orient='records')}; expected one")
    return float(chosen["c_lam"].iloc[0]), float(chosen["c_T"].iloc[0])


def plot_pilot(table: pd.DataFrame, *, out_paths: Sequence[str | os.PathLike]) -> Figure:
    """The median ||G|| over (c_lam, c_T), one panel per setting, on a logarithmic colour
    scale: the value in every cell, lambda and T on the axes, the argmin boxed."""
    cells = pilot_table(table)
    settings = cells.groupby(list(SETTING), sort=True)
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.9 * settings.ngroups, PANEL_SIZE[1] * 1.6),
                     layout="constrained")
        for ax, (setting, own) in zip(fig.subplots(1, settings.ngroups, squeeze=False)[0],
                                      settings, strict=True):
            grid = own.pivot(index="c_lam", columns="c_T", values="median")
            image = ax.imshow(grid.to_numpy(dtype=float), origin="lower", aspect="auto",
                              cmap="viridis", norm=LogNorm())
            for (row, col), value in np.ndenumerate(grid.to_numpy(dtype=float)):
                ax.text(col, row, f"{value:.3g}", ha="center", va="center", fontsize=7,
                        color="white")
            if has_trivial(table, METRIC):
                box_cells_no_better(ax, grid.to_numpy(dtype=float), own.pivot(
                    index="c_lam", columns="c_T", values="trivial_median").to_numpy(dtype=float),
                                    trivial_label(table))
                ax.legend(loc="upper left", fontsize=6)
            best = own.loc[own["argmin"]].iloc[0]
            ax.add_patch(Rectangle((grid.columns.get_loc(best["c_T"]) - 0.45,
                                    grid.index.get_loc(best["c_lam"]) - 0.45), 0.9, 0.9,
                                   fill=False, edgecolor="red", linewidth=2))
            steps = own.groupby("c_T")["outer_steps"].first()
            lams = own.groupby("c_lam")["lam"].first()
            ax.set_xticks(range(len(grid.columns)),
                          [f"{c:.3g}\nT={steps[c]}" for c in grid.columns], fontsize=7)
            ax.set_yticks(range(len(grid.index)),
                          [f"{c:.3g} (λ={lams[c]:.3g})" for c in grid.index], fontsize=7)
            ax.grid(False)
            ax.set_xlabel("c_T")
            ax.set_ylabel("c_λ")
            ax.set_title(f"{setting[0]}, {setting[1]}: n = {setting[3]}, ε = {setting[2]:g}",
                         fontsize=8.5)
            fig.colorbar(image, ax=ax, label="median ‖G_{F_S,η}(x_out)‖ over seeds")
        low, high = int(cells["seeds"].min()), int(cells["seeds"].max())
        seeds = f"{low}" if low == high else f"{low}-{high}"
        setattr(fig, SEED_NOTE, f"median over {seeds} seed(s) per cell; the argmin boxed")
        save_figure(fig, out_paths)
    return fig


def multiplier_gap(runs: pd.DataFrame, pilot: str, evaluation: Sequence[str]) -> float:
    """The largest |log10(c / c_pilot)| over both multipliers and every theory-schedule run of
    the ``evaluation`` experiments (0: they ran with the pilot's choice); NaN where the pilot
    or none of those runs is in ``runs``."""
    pilot_runs = runs.loc[runs["experiment"] == pilot]
    scheduled = runs.loc[runs["experiment"].isin(list(evaluation))]
    if "p_schedule" in scheduled.columns:
        scheduled = scheduled.loc[scheduled["p_schedule"] == "theory"]
    if pilot_runs.empty or scheduled.empty:
        return math.nan
    chosen = dict(zip(MULTIPLIERS, pilot_choice(pilot_runs), strict=True))
    return max(float(np.abs(np.log10(scheduled[column].astype(float) / value)).max())
               for column, value in chosen.items())


def measured_freezes(runs: pd.DataFrame,
                     claims: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """:func:`multiplier_gap` for every claim whose measure names a ``pilot`` experiment and
    its ``evaluation`` experiments (the claims table's measured values, by claim id)."""
    return {claim["id"]: multiplier_gap(runs, claim["measure"]["pilot"],
                                        claim["measure"]["evaluation"])
            for claim in claims if "pilot" in claim.get("measure", {})
            and {"experiment", *MULTIPLIERS} <= set(runs.columns)}
