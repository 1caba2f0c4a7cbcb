"""Fairness/accuracy trade-off figures in the form of RaCO-DP Fig. 4 (demographic parity) and
Fig. 6 (equalized odds): misclassification error against the fairness violation.

A grid of panels, one per (dataset, epsilon): rows are datasets, columns are privacy budgets. In
each panel:

* our private runs, one curve per method traced over the swept constraint target ``p_gamma``
  (RaCO-DP's gamma), each point the mean over seeds with 95% Student-t error bars in x and y
  (:func:`.aggregate.summarize`); a method without ``p_gamma`` (e.g. unconstrained DP-SGD) is a
  single marker per panel;
* our non-private runs (``epsilon = inf``), drawn dotted in every panel of their dataset;
* the trivial baseline, the majority-class predictor of the runs' training labels (the runs'
  ``trivial_test_error`` and ``trivial_<violation>``, which is 0): a grey cross; a point with
  a run not better than it (``below_majority``) is hollow;
* the baselines the paper copied from the DP-FERMI repository (:func:`.reference.load_reported`,
  spec Appendix B) at the same dataset, epsilon and constraint: dashed lines, hollow markers and
  their [lower, upper] violation band, labelled ``"<method> (reported)"``.

Colours, markers, labels, rcParams and the atomic pdf/png saving come from :mod:`.style` and
:mod:`.figures`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dpminimax.epsilon import Epsilon
from dpminimax.report.aggregate import ResultsTableError, epsilon_label, summarize
from dpminimax.report.claims.reference import CONSTRAINT_VIOLATION
from dpminimax.report.claims.trivial import (
    below_majority_points,
    draw_hollow,
    draw_trivial_points,
    has_trivial,
    trivial_label,
)
from dpminimax.report.figures import _figure_legend, save_figure
from dpminimax.report.style import (
    BAND_ALPHA,
    PANEL_SIZE,
    SeriesStyle,
    base_method,
    method_style,
    paper_style,
    series_styles,
)
from dpminimax.trivial import BELOW_MAJORITY
from dpminimax.trivial import column as trivial_column

ERROR_AXIS_LABEL = "Misclassification error"
VIOLATION_LABELS = {
    "dp_violation": "Demographic parity violation",
    "eo_violation": "Equalized odds violation",
}
#: The parameters a method's curve is traced over (RaCO-DP and Tran 2021a: gamma; DP-FERMI: its
#: fairness weight lam; Tran 2021b: alpha; Jagielski 2019: tolerance): a run's trace value is the
#: first of these columns it has a value in.
TRACE_PARAMETERS = ("p_gamma", "p_lam", "p_alpha", "p_tolerance")
TRACE_COLUMN = "trace"
_PANEL_KEYS = ("dataset", "epsilon")
_NON_PRIVATE_STYLE = ":"
_REPORTED_STYLE = "--"


def plot_tradeoff(
    df: pd.DataFrame,
    *,
    violation: str,
    out_paths: Sequence[str | os.PathLike],
    reported: pd.DataFrame | None = None,
    panels: tuple[str, str] = ("dataset", "epsilon"),
    datasets: Sequence[str] | None = None,
    epsilons: Sequence[float] | None = None,
    ylabel: str | None = None,
    title: str | None = None,
) -> Figure:
    """RaCO-DP Fig. 4 / Fig. 6: test error (x) against ``violation`` (y), one panel per
    (dataset, epsilon), saved to every path of ``out_paths`` (pdf, png ...).

    ``df`` is the long results table (``dataset, method, epsilon, seed``, ``test_error`` or
    ``test_accuracy``, the ``violation`` column, optionally ``p_gamma``). ``reported`` is the
    table of :func:`.reference.load_reported`; only its rows of the constraint that
    ``violation`` measures (``dp_violation``: demographic parity, ``eo_violation``: equalized
    odds) are drawn. ``panels`` names the (row, column) keys of the grid.

    The rows are ``datasets`` (default: those of ``df``, or of ``reported`` if ``df`` is empty);
    the columns are ``epsilons`` (default: the finite epsilons of ``df`` and ``reported`` for
    those datasets, so a budget only the paper reports still gets a panel; ``[inf]`` if there is
    no private run at all). Reported non-private rows are drawn only in an ``inf`` column.
    """
    if sorted(panels) != sorted(_PANEL_KEYS):
        raise ValueError(f"panels must be a permutation of {_PANEL_KEYS}, got {panels!r}")
    ours = _our_summary(df, violation)
    theirs = _reported_rows(reported, violation)
    if datasets is None:
        source = ours if not ours.empty else theirs
        datasets = sorted(source["dataset"].unique())
    datasets = list(datasets)
    if epsilons is None:
        finite = [t.loc[t["dataset"].isin(datasets), "epsilon"] for t in (ours, theirs)]
        grid = sorted({float(e) for col in finite for e in col if math.isfinite(e)})
        epsilons = grid or [math.inf]
    epsilons = [float(Epsilon.parse(e, "epsilons")) for e in epsilons]
    if not datasets:
        raise ValueError(f"cannot plot the {violation!r} trade-off: no dataset to draw")

    keys = {"dataset": datasets, "epsilon": epsilons}
    row_values, col_values = keys[panels[0]], keys[panels[1]]
    styles = series_styles(ours["method"]) if not ours.empty else {}
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * len(col_values), PANEL_SIZE[1] * len(row_values)),
                     layout="constrained")
        share = "row" if panels[0] == "dataset" else "col"
        grid_axes = fig.subplots(len(row_values), len(col_values), squeeze=False,
                                 sharex=share, sharey=share)
        for i, row in enumerate(row_values):
            for j, col in enumerate(col_values):
                panel = dict(zip(panels, (row, col), strict=True))
                ax = grid_axes[i, j]
                _draw_panel(ax, ours, theirs, styles, panel["dataset"], panel["epsilon"])
                draw_majority(ax, df, violation, panel["dataset"])
                ax.set_title(f"{panel['dataset']}, ε = {epsilon_label(panel['epsilon'])}")
                if i == len(row_values) - 1:
                    ax.set_xlabel(ERROR_AXIS_LABEL)
                if j == 0:
                    ax.set_ylabel(ylabel or VIOLATION_LABELS.get(violation, violation))
        _figure_legend(fig, list(grid_axes.flat))
        if title is not None:
            fig.suptitle(title)
    save_figure(fig, out_paths)
    return fig


def draw_majority(ax: Axes, df: pd.DataFrame, violation: str, dataset: str) -> None:
    """The trivial baseline's point (:mod:`.trivial`): the majority-class predictor's test
    error and violation (0: it predicts one class), the mean over the dataset's runs."""
    if df.empty or not (has_trivial(df, "test_error") and has_trivial(df, violation)):
        return
    own = df[df["dataset"] == dataset]
    if own[trivial_column("test_error")].notna().any():
        draw_trivial_points(ax, [float(own[trivial_column("test_error")].mean())],
                            [float(own[trivial_column(violation)].mean())], trivial_label(df))


def _our_summary(df: pd.DataFrame, violation: str) -> pd.DataFrame:
    """Mean and 95% interval of test error and violation per (dataset, method, epsilon, trace
    value: see :data:`TRACE_PARAMETERS`),
    wide: ``x, x_low, x_high, y, y_low, y_high`` (NaN interval with one seed), and
    ``below_majority``: a run of the point is not better than the majority class."""
    columns = ["dataset", "method", "epsilon", "x", "x_low", "x_high", "y", "y_low", "y_high",
               TRACE_COLUMN, BELOW_MAJORITY]
    if df.empty:
        return pd.DataFrame(columns=columns)
    df = df.copy()
    if "test_accuracy" in df.columns:  # error = 1 - accuracy wherever only accuracy is known
        error = 1.0 - pd.to_numeric(df["test_accuracy"])
        df["test_error"] = df["test_error"].fillna(error) if "test_error" in df else error
    missing = [c for c in ("dataset", "method", "epsilon", "test_error", violation)
               if c not in df.columns]
    if missing:
        raise ResultsTableError(f"cannot plot the {violation!r} trade-off: no column(s) {missing}")
    df[TRACE_COLUMN] = trace_values(df)
    df["epsilon"] = pd.to_numeric(df["epsilon"]).astype(float)
    df = df.loc[df["test_error"].notna() & df[violation].notna()]
    by = ["dataset", "method", "epsilon", TRACE_COLUMN]
    summary = summarize(df, ["test_error", violation], by=by)
    keep = [*by, "mean", "ci_low", "ci_high"]
    x = summary.loc[summary["metric"] == "test_error", keep]
    y = summary.loc[summary["metric"] == violation, keep]
    out = x.merge(y, on=by, suffixes=("_x", "_y"))  # NaN gamma keys match each other
    out = out.rename(columns={"mean_x": "x", "ci_low_x": "x_low", "ci_high_x": "x_high",
                              "mean_y": "y", "ci_low_y": "y_low", "ci_high_y": "y_high"})
    out = out.merge(below_majority_points(df, by), on=by, how="left")
    return out.loc[out["x"].notna() & out["y"].notna(), columns].reset_index(drop=True)


def trace_values(df: pd.DataFrame) -> pd.Series:
    """Each run's value of the parameter its method's curve is traced over (NaN if none)."""
    trace = pd.Series(np.nan, index=df.index, dtype=float)
    for column in TRACE_PARAMETERS:
        if column in df.columns:
            trace = trace.fillna(pd.to_numeric(df[column], errors="coerce"))
    return trace


def _reported_rows(reported: pd.DataFrame | None, violation: str) -> pd.DataFrame:
    empty = pd.DataFrame(columns=["dataset", "epsilon", "method"])
    if reported is None or reported.empty:
        return empty
    constraints = [c for c, metric in CONSTRAINT_VIOLATION.items() if metric == violation]
    if not constraints:
        raise ValueError(
            f"no reported constraint is measured by {violation!r}; known: "
            f"{sorted(CONSTRAINT_VIOLATION.values())}"
        )
    rows = reported.loc[reported["constraint"].isin(constraints)].copy()
    rows["epsilon"] = pd.to_numeric(rows["epsilon"]).astype(float)
    return rows if not rows.empty else empty


def _draw_panel(ax: Axes, ours: pd.DataFrame, theirs: pd.DataFrame,
                styles: dict[str, SeriesStyle], dataset: str, eps: float) -> None:
    mine = ours.loc[ours["dataset"] == dataset]
    for method, style in styles.items():
        rows = mine.loc[mine["method"] == method]
        nonprivate = base_method(method) == "dp_sgd_nonprivate"
        _draw_ours(ax, rows.loc[rows["epsilon"] == eps], style,
                   private=math.isfinite(eps), nonprivate=nonprivate)
        if math.isfinite(eps):  # the non-private reference, in every panel of its dataset
            _draw_ours(ax, rows.loc[np.isinf(rows["epsilon"])], style, private=False,
                       nonprivate=nonprivate)
    if theirs.empty:
        return
    here = theirs.loc[(theirs["dataset"] == dataset) & (theirs["epsilon"] == eps)]
    for method in dict.fromkeys(here["method"]):
        _draw_reported(ax, here.loc[here["method"] == method], method_style(method))


def _draw_ours(ax: Axes, rows: pd.DataFrame, style: SeriesStyle, *, private: bool,
               nonprivate: bool) -> None:
    """One curve over gamma (a single marker without gamma) with x and y error bars; hollow
    markers where a run is below the majority class."""
    if rows.empty:
        return
    rows = rows.sort_values(TRACE_COLUMN)
    if private:
        label, linestyle, colour = style.label, style.linestyle, style.color
    else:
        label = style.label if nonprivate else f"{style.label} (ε = ∞)"
        linestyle, colour = _NON_PRIVATE_STYLE, style.color
    traced = rows[TRACE_COLUMN].notna().sum() > 1
    ax.plot(rows["x"], rows["y"], color=colour, marker=style.marker,
            linestyle=linestyle if traced else "none", label=label, zorder=4,
            alpha=1.0 if private else 0.75)
    draw_hollow(ax, rows, colour, style.marker)
    bars = rows.loc[np.isfinite(rows["x_low"]) & np.isfinite(rows["y_low"])]
    if not bars.empty:
        ax.errorbar(bars["x"], bars["y"],
                    xerr=[bars["x"] - bars["x_low"], bars["x_high"] - bars["x"]],
                    yerr=[bars["y"] - bars["y_low"], bars["y_high"] - bars["y"]],
                    fmt="none", ecolor=colour, elinewidth=0.9, capsize=2, zorder=3,
                    alpha=1.0 if private else 0.75)


def _draw_reported(ax: Axes, rows: pd.DataFrame, style: SeriesStyle) -> None:
    """A reported curve (in the source's order of lambda / point) with its violation band."""
    order = [c for c in ("fairness_weight", "point") if c in rows.columns]
    rows = rows.sort_values(order) if order else rows
    label = f"{style.label} (reported)"
    ax.plot(rows["test_error"], rows["violation"], color=style.color, marker=style.marker,
            markerfacecolor="none", markeredgewidth=1.3, linewidth=1.2, label=label, zorder=2,
            linestyle=_REPORTED_STYLE if len(rows) > 1 else "none")
    band = rows.dropna(subset=["violation_lower", "violation_upper"]).sort_values("test_error")
    if len(band) > 1:
        ax.fill_between(band["test_error"], band["violation_lower"], band["violation_upper"],
                        color=style.color, alpha=BAND_ALPHA, linewidth=0, zorder=1)
    elif len(band) == 1:
        ax.errorbar(band["test_error"], band["violation"],
                    yerr=[band["violation"] - band["violation_lower"],
                          band["violation_upper"] - band["violation"]],
                    fmt="none", ecolor=style.color, capsize=2, elinewidth=0.9, zorder=1)
