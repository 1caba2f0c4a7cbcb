"""Section 7's tuning study (DP bilevel, E6; its multi-hyperparameter
version on P-B, E8): the tuned omega and the test loss it gives, against epsilon, one panel per
sample size n (and per hyperparameter count K = d_x where the runs have several), each method a
line (mean over seeds, 95% band) and the non-private references (NP-AID, NP-Pen, the printed
sign, grid search) as horizontal lines; and a table of the means.

The test loss is the exact ridge fit's at the run's omega_out, above the fit's at the sample's
best omega in the interval or box (``excess_test_loss``: a measure of the tuning alone); DP-Grid
and Fixed-omega also release a private fit, whose excess test loss is
``excess_test_loss_released``. A vector omega (P-B) has no ``omega_out`` column: its table
gives the distance of log10 omega_out from the best omega (``log_omega_gap``), F_S's excess
(``excess_hyperobjective``) and what one shared omega loses (``excess_test_loss_shared``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd
from matplotlib.figure import Figure

from dpminimax.report.aggregate import require_columns, series_table, summary_columns
from dpminimax.report.figures import plot_metric_vs_epsilon
from dpminimax.trivial import column as trivial_column

TUNING_COLUMNS = ("p_n", "excess_test_loss", "test_loss_best")
#: The metrics of :func:`tuning_table`, as summarized (those the runs have).
TABLE_METRICS = ("omega_out", "excess_test_loss", "excess_test_loss_released",
                 "gradient_mapping_norm", "bias_max", "excess_hyperobjective",
                 "excess_test_loss_shared", "log_omega_gap")


def with_excess(table: pd.DataFrame) -> pd.DataFrame:
    """The runs with the released fit's excess test loss where they have one (module
    docstring), and its trivial baseline's (the fit y = 0)."""
    require_columns(table, TUNING_COLUMNS, "the tuning study",
                    "runs on a tuning problem, e.g. pc_ridge_tuning")
    if "test_loss_released" not in table.columns:
        return table
    table = table.assign(excess_test_loss_released=table["test_loss_released"]
                         - table["test_loss_best"])
    if trivial_column("test_loss_released") not in table.columns:
        return table
    return table.assign(**{trivial_column("excess_test_loss_released"): (
        table[trivial_column("test_loss_released")] - table["test_loss_best"])})


def _swept_dx(runs: pd.DataFrame) -> bool:
    """Whether the runs tune several hyperparameter counts K = d_x (P-B, E8)."""
    return "p_d_x" in runs.columns and runs["p_d_x"].nunique() > 1


def plot_tuning(table: pd.DataFrame, metric: str, *, ylabel: str,
                out_paths: Sequence[str | os.PathLike]) -> Figure:
    """``metric`` of :func:`with_excess`'s table against epsilon, one panel per n (per K and
    n where the runs have several K)."""
    runs = with_excess(table)
    label, panels = runs["dataset"], ["p_n"]
    if _swept_dx(runs):
        panels.insert(0, "p_d_x")
    for column in panels:  # padded: the panels sort by K, then n
        values = runs[column].astype(int).astype(str)
        name = "K" if column == "p_d_x" else "n"
        label = label + f", {name} = " + values.str.rjust(values.str.len().max())
    return plot_metric_vs_epsilon(series_table(runs.assign(dataset=label).drop(columns=panels)),
                                  metric, ylabel=ylabel, out_paths=out_paths)


def tuning_table(table: pd.DataFrame) -> pd.DataFrame:
    """Mean (95% interval) over seeds of each metric of :data:`TABLE_METRICS` the runs have
    by n (and K = d_x where the runs have several), method and epsilon."""
    runs = with_excess(table)
    metrics = {metric: metric for metric in TABLE_METRICS
               if metric in runs.columns and runs[metric].notna().any()}
    by = ["p_d_x", "p_n"] if _swept_dx(runs) else ["p_n"]
    return summary_columns(runs, metrics, [*by, "method", "epsilon"]).rename(
        columns={"p_n": "n", "p_d_x": "K"})
