"""Rate studies on synthetic problems with exact answers (BYOA, DP bilevel): an error metric
against the sample size n (item 1), against epsilon or against the dimension d (item 2, one
panel per n), and the fitted log-log slopes (in n, or in d at every n).

Figure: one panel per problem (the ``dataset`` column); one colour per (method, epsilon), the
mean over seeds with its 95% Student-t band (:func:`.aggregate.summarize`) on log-log axes, and
the paper's printed bound on the same metric (the task's ``<metric>_bound`` column) dashed in
the same colour; where a theorem states only a rate (DP bilevel's O~ bounds), grey dotted
reference lines of its predicted slopes; the trivial baseline (x = 0, x0: the runs'
``trivial_<metric>``) grey and dashed (:mod:`.trivial`). Table: per (problem, method, epsilon) the
least-squares slope of log(mean metric) against log(n) with a 95% bootstrap interval (seeds
resampled within every n), the slope of the printed bound over the same n, the largest ratio
of the mean to the bound, and for the private runs the predicted slopes beside the fit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dpminimax.report.aggregate import (
    ResultsTableError,
    bootstrap_slope,
    epsilon_label,
    loglog_slope,
    require_columns,
    summarize,
)
from dpminimax.report.claims.trivial import (
    draw_trivial_line,
    has_trivial,
    trivial_label,
    trivial_means,
)
from dpminimax.report.figures import save_figure
from dpminimax.report.style import BAND_ALPHA, PANEL_SIZE, method_style, paper_style

SERIES = ("dataset", "method", "epsilon")
#: Parameters that make separate series where a job sweeps them (the noise calibration, the
#: base solver, P3's tau, Alg. 2's ablations (E10), DP bilevel's dimensions
#: (d_x, d_y) of E3') unless they are the figure's x axis; every other parameter
#: is fixed or planned from n.
VARIANTS = ("p_sigma", "p_solver", "p_tau", "p_schedule", "p_project", "p_rounding", "p_d_x",
            "p_d_y")


@dataclass(frozen=True)
class RateAxis:
    """An x axis of a rate figure: its label and log base, the column that tells a panel's
    lines apart besides the method, and the grid columns besides the problem fixing a panel."""

    label: str
    base: int
    other: str
    panel: tuple[str, ...] = ()


#: The x axes of a rate figure by column: n, epsilon and d (BYOA; ``d`` is
#: the column ``d`` or the job parameter ``p_d``, one panel per n); DP bilevel's d_x and d_y
#: (the job parameters ``p_d_x``, ``p_d_y``, one panel per n) and
#: Alg. 3's outer and Alg. 4's inner batch sizes (plot 7, ``p_batch_out``, ``p_batch_in``)
#: and the penalty lambda (plot 6, E9).
AXES = {"p_n": RateAxis("Sample size n", 2, "epsilon"),
        "epsilon": RateAxis("Privacy budget ε", 10, "p_n"),
        "d": RateAxis("Dimension d", 10, "epsilon", ("p_n",)),
        "d_x": RateAxis("Dimension d_x", 2, "epsilon", ("p_n",)),
        "d_y": RateAxis("Dimension d_y", 2, "epsilon", ("p_n",)),
        "batch_out": RateAxis("Outer batch size b_out", 2, "epsilon", ("p_n",)),
        "lam": RateAxis("Penalty λ", 10, "epsilon", ("p_n",)),
        "batch_in": RateAxis("Inner batch size b_in", 2, "epsilon", ("p_n",))}


def plot_rate(table: pd.DataFrame, metric: str, *, ylabel: str,
              out_paths: Sequence[str | os.PathLike], against: str = "p_n",
              reference: Mapping[str, float] | None = None) -> Figure:
    """``metric`` against n (one line per method and epsilon), against epsilon (one line per
    method and n; non-private runs left out) or against d (one line per method and epsilon,
    one panel per n), the printed bound dashed in each line's colour, and a dotted line of
    each ``reference`` slope (name -> slope) from the panel's highest first point (module
    docstring)."""
    table = with_column(with_variants(table, against), against)
    _require(table, metric, against)
    table = table[table[metric].notna()]  # problems of an experiment without this metric
    axis = AXES[against]
    if against == "epsilon":
        table = table[np.isfinite(table["epsilon"])]
    summary = _rate_summary(table, metric, against)
    trivial = (trivial_means(table, metric, list(dict.fromkeys(
        ("dataset", *axis.panel, against, axis.other)))) if has_trivial(table, metric) else None)
    panels = summary[["dataset", *axis.panel]].drop_duplicates().sort_values(
        ["dataset", *axis.panel])
    with paper_style():
        fig, axes = rate_panels(len(panels))
        for i, ax in enumerate(axes):
            rows = summary.merge(panels.iloc[[i]])
            series = rows[["method", axis.other]].drop_duplicates().sort_values(
                ["method", axis.other])
            colours = series_colours(len(series))
            for colour, (method, fixed) in zip(colours, series.itertuples(index=False),
                                               strict=True):
                one = rows[(rows["method"] == method) & (rows[axis.other] == fixed)].sort_values(
                    against)
                if not one.empty and one[against].isna().all():
                    # a method without this axis (Alg. 1 beside Alg. 3's b_out): its level
                    ax.axhline(float(one["mean"].mean()), color=colour, linestyle="--",
                               linewidth=1.0, label=f"{series_label(method, axis.other, fixed)}"
                               " (level)")
                    continue
                if one.empty or (len(one) < 2 and against == "epsilon"):
                    continue
                _draw_series(ax, one, against, colour, series_label(method, axis.other, fixed))
            _reference_lines(ax, rows, against, reference or {})
            if trivial is not None:
                _trivial_lines(ax, trivial.merge(panels.iloc[[i]]), against, axis.other,
                               trivial_label(table))
            ax.set_xscale("log", base=axis.base)
            ax.set_yscale("log")
            ax.set_xlabel(axis.label)
            ax.set_ylabel(ylabel)
            ax.set_title(panel_title(panels.iloc[i]))
        if "bound" in summary.columns:
            axes[-1].plot([], [], color="#555555", linestyle="--", linewidth=1.0,
                          label="printed bound (dashed)")
        fig.legend(*axes[-1].get_legend_handles_labels(), loc="outside upper center",
                   ncol=2, frameon=False)
        save_figure(fig, out_paths)
    return fig


def slopes_table(table: pd.DataFrame, metric: str, seed: int = 0,
                 predicted: Mapping[str, float] | None = None,
                 against: str = "p_n") -> pd.DataFrame:
    """Fitted and printed-bound log-log slopes of ``metric`` in n (``against="p_n"``) per
    (problem, method, epsilon), or in d (``against="d"``) per (problem, method, epsilon, n),
    and a column ``predicted_slope_<name>`` per entry of ``predicted`` (name -> slope) on
    the private rows (module docstring)."""
    table = with_column(with_variants(table, against), against)
    _require(table, metric, against)
    keys = [*SERIES, *AXES[against].panel]
    x = against.removeprefix("p_")
    bound = f"{metric}_bound"
    rng = np.random.default_rng(seed)
    rows = []
    for key, runs in table[table[metric].notna()].groupby(keys):
        by_x = {value: group[metric].to_numpy(dtype=float)
                for value, group in runs.groupby(against)}
        if len(by_x) < 2:
            continue
        xs = np.array(sorted(by_x), dtype=float)
        means = np.array([by_x[value].mean() for value in xs])
        slope, low, high = bootstrap_slope(by_x, rng)
        row = dict(zip(keys, key, strict=True))
        row.update({"metric": metric, f"{x}_min": int(xs[0]), f"{x}_max": int(xs[-1]),
                    "seeds": int(min(len(v) for v in by_x.values())),
                    "slope": slope, "slope_ci_low": low, "slope_ci_high": high})
        if np.isfinite(row["epsilon"]):
            row.update({f"predicted_slope_{name}": value
                        for name, value in (predicted or {}).items()})
        if bound in runs.columns:
            printed = runs.groupby(against)[bound].mean().sort_index().to_numpy(dtype=float)
            if np.all(printed > 0):  # a zero bound (exact ERM's empirical risk) has no ratio
                row.update(bound_slope=loglog_slope(xs, printed),
                           max_mean_over_bound=float(np.max(means / printed)))
        rows.append(row)
    return pd.DataFrame(rows)


def with_variants(table: pd.DataFrame, against: str = "p_n") -> pd.DataFrame:
    """``method`` labelled with the :data:`VARIANTS` its (problem, method, epsilon) sweeps
    other than the x axis ``against``: ``"output_perturbation [sigma=calibrated]"``."""
    labels = pd.Series("", index=table.index)
    axis = {against, f"p_{against.removeprefix('p_')}"}
    for column in (c for c in VARIANTS if c in table.columns and c not in axis):
        varies = table.groupby(list(SERIES))[column].transform(
            lambda values: values.nunique(dropna=False) > 1).astype(bool)
        part = f"{column[2:]}=" + table[column].astype(str)
        labels = labels.where(~varies, labels.where(labels == "", labels + ",") + part)
    return table.assign(method=table["method"].where(
        labels == "", table["method"] + " [" + labels + "]"))


def with_column(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """``table`` with a column ``name``, copied from the job parameter ``p_<name>`` where
    only that exists (``d``, ``solver``)."""
    if name in table.columns or f"p_{name}" not in table.columns:
        return table
    return table.assign(**{name: table[f"p_{name}"]})


def rate_panels(count: int, columns: int = 3) -> tuple[Figure, list[Axes]]:
    """A figure of ``count`` panels in rows of at most ``columns`` (call in
    :func:`.style.paper_style`)."""
    width = min(count, columns)
    height = -(-count // width)
    fig = Figure(figsize=(max(PANEL_SIZE[0] * 1.5 * width, 6.0), PANEL_SIZE[1] * 1.7 * height),
                 layout="constrained")
    axes = list(fig.subplots(height, width, squeeze=False).ravel())
    for extra in axes[count:]:
        fig.delaxes(extra)
    return fig, axes[:count]


def series_label(method: str, column: str | None = None, value: float | None = None) -> str:
    """A series' legend label: the method's label with its variant bracket, and the fixed
    value of ``column`` (epsilon or n) where given."""
    method_base, variant = method.partition(" [")[::2]
    label = f"{method_style(method_base).label}{f' [{variant}' if variant else ''}"
    return label if column is None else f"{label}, {_where(column, value)}"


def panel_title(panel: pd.Series) -> str:
    """A panel's title: its problem (``dataset``), then the other grid values fixing it."""
    return ", ".join([str(panel["dataset"]), *(_where(column, value)
                                               for column, value in panel.drop("dataset").items())])


def _where(column: str, value: float) -> str:
    return f"ε = {epsilon_label(value)}" if column == "epsilon" else f"n = {int(value)}"


def _rate_summary(table: pd.DataFrame, metric: str, against: str) -> pd.DataFrame:
    """Mean and 95% interval of ``metric`` per grid point, with the mean printed bound
    (``bound``) where the table has one."""
    grid = list(dict.fromkeys((*SERIES, "p_n", against)))
    summary = summarize(table, [metric], by=grid)
    bound = f"{metric}_bound"
    if bound not in table.columns:
        return summary
    printed = table.groupby(grid, dropna=False)[bound].mean().rename("bound").reset_index()
    return summary.merge(printed, on=grid, how="left")


def _draw_series(ax: Axes, one: pd.DataFrame, against: str, colour, label: str) -> None:
    """One line: the means with their 95% band, and the printed bound dashed."""
    method_base = one["method"].iloc[0].partition(" [")[0]
    ax.plot(one[against], one["mean"], color=colour, marker=method_style(method_base).marker,
            label=label)
    ax.fill_between(one[against], one["ci_low"].clip(lower=one["mean"] * 1e-3),
                    one["ci_high"], color=colour, alpha=BAND_ALPHA, linewidth=0)
    if "bound" in one.columns:
        ax.plot(one[against], one["bound"], color=colour, linestyle="--", linewidth=1.0)


def _reference_lines(ax, rows: pd.DataFrame, against: str,
                     reference: Mapping[str, float]) -> None:
    """A grey dotted line of each predicted slope over the panel's x range, starting at the
    largest mean at the smallest x (a guide for the eye: the rates fix slopes, not levels)."""
    if not reference or rows.empty:
        return
    xs = np.sort(rows[against].unique().astype(float))
    start = float(rows.loc[rows[against] == xs[0], "mean"].max())
    styles = (":", "-.", (0, (1, 4)))
    for i, (name, slope) in enumerate(reference.items()):
        ax.plot(xs, start * (xs / xs[0]) ** slope, color="#777777",
                linestyle=styles[i % len(styles)],
                linewidth=1.0, label=f"slope {slope:.2g} ({name.replace('_', ' ')})")


def _trivial_lines(ax: Axes, trivial: pd.DataFrame, against: str, other: str,
                   label: str) -> None:
    """The trivial baseline of a panel (:mod:`.trivial`) against its x axis: one line, or
    against epsilon one per n (its value depends on the instance, not on epsilon)."""
    split = [other] if other != "epsilon" else []
    means = trivial.groupby([*split, against])["trivial"].mean().reset_index()
    means = means[means["trivial"] > 0]  # a log axis
    for i, (_, one) in enumerate(means.groupby(split) if split else [((), means)]):
        one = one.sort_values(against)
        draw_trivial_line(ax, one[against], one["trivial"], label if i == 0 else None)


def series_colours(count: int) -> list[tuple[float, float, float]]:
    import seaborn as sns

    return [tuple(c) for c in sns.color_palette("colorblind", max(count, 1))][:count]


def _require(table: pd.DataFrame, metric: str, against: str = "p_n") -> None:
    require_columns(table, (*SERIES, "p_n", against, metric), "a rate figure",
                    f"runs on a synthetic problem with a grid over n and {against}")
    if table[metric].isna().all():
        raise ResultsTableError(f"no run measures {metric!r} (a figure of another problem "
                                "kind?)")
