"""Section 7's tuning study (DP bilevel, spec 002 §6.2 plot 9, E6): the tuned omega and the
test loss it gives, against epsilon, one panel per sample size n, each method a line (mean over
seeds, 95% band) and the non-private references (NP-AID, NP-Pen, the printed sign, grid search)
as horizontal lines; and a table of the means.

The test loss is the exact ridge fit's at the run's omega_out, above the fit's at the sample's
best omega in the interval (``excess_test_loss``: a measure of the tuning alone); DP-Grid and
Fixed-omega also release a private fit, whose excess test loss is ``excess_test_loss_released``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd
from matplotlib.figure import Figure

from dpminimax.report.aggregate import require_columns, series_table, summary_columns
from dpminimax.report.figures import plot_metric_vs_epsilon

TUNING_COLUMNS = ("p_n", "omega_out", "excess_test_loss", "test_loss_best")
#: The metrics of :func:`tuning_table`, as summarized.
TABLE_METRICS = ("omega_out", "excess_test_loss", "excess_test_loss_released",
                 "gradient_mapping_norm", "bias_max")


def with_excess(table: pd.DataFrame) -> pd.DataFrame:
    """The runs with the released fit's excess test loss where they have one (module
    docstring)."""
    require_columns(table, TUNING_COLUMNS, "the tuning study",
                    "runs on a tuning problem, e.g. pc_ridge_tuning")
    if "test_loss_released" not in table.columns:
        return table
    return table.assign(excess_test_loss_released=table["test_loss_released"]
                        - table["test_loss_best"])


def plot_tuning(table: pd.DataFrame, metric: str, *, ylabel: str,
                out_paths: Sequence[str | os.PathLike]) -> Figure:
    """``metric`` of :func:`with_excess`'s table against epsilon, one panel per n."""
    runs = with_excess(table)
    width = len(str(int(runs["p_n"].max())))  # padded: the panels sort by n
    runs = runs.assign(dataset=runs["dataset"] + ", n = " + runs["p_n"].astype(int).astype(
        str).str.rjust(width))
    return plot_metric_vs_epsilon(series_table(runs.drop(columns="p_n")), metric,
                                  ylabel=ylabel, out_paths=out_paths)


def tuning_table(table: pd.DataFrame) -> pd.DataFrame:
    """Mean (95% interval) over seeds of each metric of :data:`TABLE_METRICS` by n, method
    and epsilon."""
    runs = with_excess(table)
    metrics = {metric: metric for metric in TABLE_METRICS if metric in runs.columns}
    return summary_columns(runs, metrics, ["p_n", "method", "epsilon"]).rename(
        columns={"p_n": "n"})
