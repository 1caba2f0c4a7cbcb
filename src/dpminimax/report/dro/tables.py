"""Paper 004 (DP distributionally robust optimisation): Figs. 1-3 and Tables 2-3.

Figures: one panel per dataset (the paper's order), a metric of the training curves (the runs'
``curve`` column) against the step, one line per method at ε = 1 (or the panel's smallest ε)
plus SCDRO (ε = ∞) dashed; mean over seeds with a min-max band; the trivial baseline, the
runs' initial model (``trivial_curve``), a grey dashed level. Panels of stand-in datasets are
stamped with :func:`.figures.stamp_standin`. Tables: Table 3 (test accuracy in %, AUC, F1) and
Table 2 (membership-inference AUC against the (ε, δ)-DP ceiling), one row per (dataset,
method, ε).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from dpminimax.report.aggregate import epsilon_label, require_columns
from dpminimax.report.claims.claims_interval import t_interval
from dpminimax.report.claims.trivial import draw_trivial_level, trivial_label
from dpminimax.report.figures import save_figure, standin_datasets
from dpminimax.report.style import BAND_ALPHA, PANEL_SIZE, SeriesStyle, method_style, paper_style
from dpminimax.trivial import column as trivial_column

#: Datasets in the paper's order (Table 3, Figs. 1-3); others follow, sorted.
DATASET_ORDER = ("cifar10-st", "celeba-blond", "fashion-mnist-st", "mnist-st")
#: Methods in Table 3's order; others follow, sorted.
METHOD_ORDER = ("dp_sgda_dro", "privatediff_dro", "dp_double_spider", "dp_recursive_spider",
                "scdro")
FIGURE_EPSILON = 1.0
STANDIN_COLOUR = "#B00020"  # the stand-in stamp's (report.figures.stamp_standin)
STEP_LABEL = "Training step"
#: The runs' initial model's curve point (the trivial baseline of a curve).
TRIVIAL_CURVE = trivial_column("curve")


@dataclass(frozen=True)
class CurveFigure:
    """A paper figure of one curve metric over training."""

    number: int
    metric: str
    ylabel: str
    what: str
    log_y: bool = False


CURVE_FIGURES = {
    "dro_gradient_norm_curves": CurveFigure(1, "dro_gradient_norm", "Gradient norm ‖∇ₓΦ‖",
                                            "gradient norm during training", log_y=True),
    "dro_auc_curves": CurveFigure(2, "test_auc", "Test ROC AUC", "test AUC during training"),
    "dro_f1_curves": CurveFigure(3, "test_f1", "Test F1", "test F1 during training"),
}


def method_label(method: str) -> str:
    """The method's label (:mod:`.style`, the same as its class's ``label``)."""
    return method_style(method).label


def dro_style(method: str) -> SeriesStyle:
    """The method's colour, marker and label (:mod:`.style`); SCDRO dashed."""
    base = method_style(method)
    return SeriesStyle(base.label, base.color, base.marker,
                       "--" if method == "scdro" else "-")


def dataset_key(dataset: str) -> tuple[int, str]:
    return (DATASET_ORDER.index(dataset) if dataset in DATASET_ORDER else len(DATASET_ORDER),
            dataset)


def method_key(method: str) -> tuple[int, str]:
    return (METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER), method)


# --------------------------------------------------------------------------- figures 1-3


def draw_curves(table: pd.DataFrame, figure: str, out_paths: Sequence[str | os.PathLike]
                ) -> Figure:
    """Figure ``figure`` (a key of :data:`CURVE_FIGURES`; paper Figs. 1-3) of the runs table."""
    spec = CURVE_FIGURES[figure]
    _require(table, ["curve"], figure)
    points = curve_points(table, spec.metric)
    initial = (curve_points(table, spec.metric, TRIVIAL_CURVE)
               if TRIVIAL_CURVE in table.columns else points.iloc[:0])
    if points.empty:
        raise ValueError(f"{figure}: no run has a {spec.metric!r} curve")
    datasets = sorted(points["dataset"].unique(), key=dataset_key)
    standins = set(standin_datasets(table))
    with paper_style():
        fig = Figure(figsize=(PANEL_SIZE[0] * 1.25 * len(datasets), PANEL_SIZE[1] * 1.45),
                     layout="constrained")
        # the panels' row (its own title: a stand-in stamp on the figure keeps the figure
        # number) above a row for the one legend
        row, legend_row = fig.subfigures(2, 1, height_ratios=(1.0, 0.14))
        panels = np.atleast_1d(row.subfigures(1, len(datasets), squeeze=False)[0])
        handles: dict[str, object] = {}
        for panel, dataset in zip(panels, datasets, strict=True):
            ax = panel.subplots()
            rows = points[points["dataset"] == dataset]
            epsilon, note = panel_epsilon(rows["epsilon"])
            shown = rows[(rows["epsilon"] == epsilon) | np.isinf(rows["epsilon"])]
            for method in sorted(shown["method"].unique(), key=method_key):
                for eps, one in shown[shown["method"] == method].groupby("epsilon"):
                    _draw_curve(ax, one, dro_style(method), eps)
            start = initial[(initial["dataset"] == dataset) & ((initial["epsilon"] == epsilon)
                                                               | np.isinf(initial["epsilon"]))]
            if not start.empty:  # the runs' initial model, the same at every step
                draw_trivial_level(ax, float(start["value"].mean()), trivial_label(table))
            if spec.log_y:
                ax.set_yscale("log")
            ax.set_xlabel(STEP_LABEL)
            ax.set_ylabel(spec.ylabel)
            # a stand-in panel says so in its title; the figure as a whole is stamped by
            # dpminimax.api.make_figure (a watermark per panel would overlap the next one)
            if dataset in standins:
                ax.set_title(f"{dataset} ({note})\nNOT RUN: stand-in, not a result",
                             color=STANDIN_COLOUR)
            else:
                ax.set_title(f"{dataset} ({note})")
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, handle)
        legend_row.legend(list(handles.values()), list(handles), loc="center",
                          ncols=min(len(handles), 5), frameon=False)
        row.suptitle(f"Paper 004, Fig. {spec.number}: {spec.what} (mean over seeds, "
                     "min-max band)")
    save_figure(fig, out_paths)
    return fig


def curve_points(table: pd.DataFrame, metric: str, curves: str = "curve") -> pd.DataFrame:
    """The runs' curves (column ``curves``: ``trivial_curve`` for the initial models' one
    point) as one long frame: dataset, method, epsilon, seed, step, value."""
    frames = []
    for run in table.itertuples(index=False):
        curve = getattr(run, curves)
        if isinstance(curve, str):
            curve = json.loads(curve)
        if curve is None or (isinstance(curve, float) and math.isnan(curve)):
            continue
        steps = [p.get("step") for p in curve]
        values = [p.get(metric) for p in curve]
        frame = pd.DataFrame({"step": steps, "value": values}, dtype=float).dropna()
        frames.append(frame.assign(dataset=run.dataset, method=run.method,
                                   epsilon=float(run.epsilon), seed=run.seed))
    if not frames:
        return pd.DataFrame(columns=["dataset", "method", "epsilon", "seed", "step", "value"])
    return pd.concat(frames, ignore_index=True)


def panel_epsilon(epsilons: pd.Series) -> tuple[float, str]:
    """The private ε a panel shows: 1 when present, else the smallest; and its title note."""
    finite = np.sort(epsilons[np.isfinite(epsilons)].unique())
    if finite.size == 0:
        return math.nan, "non-private runs only"
    if np.any(np.isclose(finite, FIGURE_EPSILON)):
        return float(finite[np.isclose(finite, FIGURE_EPSILON)][0]), \
            f"ε = {epsilon_label(FIGURE_EPSILON)}"
    eps = float(finite[0])
    return eps, f"ε = {epsilon_label(eps)}: no run at ε = {epsilon_label(FIGURE_EPSILON)}"


def _draw_curve(ax: Axes, points: pd.DataFrame, style: SeriesStyle, epsilon: float) -> None:
    """Mean over seeds at every step, shaded between the seeds' min and max."""
    by_step = points.groupby("step")["value"].agg(["mean", "min", "max"]).sort_index()
    label = style.label if np.isfinite(epsilon) else f"{style.label}, ε = ∞"
    ax.plot(by_step.index, by_step["mean"], color=style.color, linestyle=style.linestyle,
            marker=style.marker, markersize=3, label=label, zorder=3)
    if points["seed"].nunique() > 1:
        ax.fill_between(by_step.index, by_step["min"], by_step["max"], color=style.color,
                        alpha=BAND_ALPHA, linewidth=0, zorder=2)


# --------------------------------------------------------------------------- tables 2-3

KEYS = ["dataset", "method", "epsilon"]


def table3_accuracy(table: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Table 3: per (dataset, method, ε, ``by``) the seeds, test accuracy (%) mean and std
    (ddof 1), the mean test AUC and F1 (fractions) and whether the data was a stand-in."""
    keys = [*KEYS, *by]
    columns = [*keys, "label", "n_seeds", "accuracy_mean", "accuracy_std", "auc_mean",
               "f1_mean", "data_standin"]
    _require(table, ["test_accuracy", *by], "table3_accuracy")
    rows = table[table["test_accuracy"].notna()]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    grouped = rows.assign(accuracy=rows["test_accuracy"] * 100.0).groupby(keys)
    result = grouped.agg(n_seeds=("seed", "nunique"), accuracy_mean=("accuracy", "mean"),
                         accuracy_std=("accuracy", "std")).reset_index()
    for column, name in (("test_auc", "auc_mean"), ("test_f1", "f1_mean")):
        result[name] = (grouped[column].mean().to_numpy() if column in rows
                        else np.nan)
    return _finish(result, grouped, rows)[columns]


#: The verdicts of :func:`table3_objective`.
BELOW, NOT_BELOW, UNDECIDED = "below", "not below", "inconclusive"


def table3_objective(table: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Whether Table 3's runs optimise the KL-DRO objective: per (dataset, method, ε, ``by``)
    the final Φ (Eq. (5) minimised over λ, on the curves' training rows) with its Student-t 95%
    interval over seeds, Φ at initialisation (``trivial_dro_objective``, mean over seeds) and
    the class prior's Φ (``prior_dro_objective``, one value per dataset; NaN where no run
    recorded it), and the verdict against the smaller of the two: ``below`` (the interval's
    upper end below it), ``not below`` (its lower end at or above it), ``inconclusive`` (it
    straddles it, or one seed). ``by``: further columns that split a cell (a swept
    parameter, ``p_weight_cap``)."""
    keys = [*KEYS, *by]
    columns = [*keys, "label", "n_seeds", "phi_final_mean", "phi_final_low", "phi_final_high",
               "phi_init", "phi_prior", "verdict", "data_standin"]
    _require(table, ["dro_objective", "trivial_dro_objective", *by], "table3_objective")
    rows = table[table["dro_objective"].notna()].copy()
    if rows.empty:
        return pd.DataFrame(columns=columns)
    prior = rows["prior_dro_objective"] if "prior_dro_objective" in rows else math.nan
    rows["phi_prior"] = pd.Series(prior, index=rows.index, dtype=float).groupby(
        rows["dataset"]).transform("max")
    grouped = rows.groupby(keys)
    result = grouped.agg(n_seeds=("seed", "nunique"), phi_final_mean=("dro_objective", "mean"),
                         phi_init=("trivial_dro_objective", "mean"),
                         phi_prior=("phi_prior", "max")).reset_index()
    bounds = [t_interval(v.to_numpy(float)) if len(v) > 1 else (math.nan, math.nan)
              for _, v in grouped["dro_objective"]]
    result["phi_final_low"] = [low for low, _ in bounds]
    result["phi_final_high"] = [high for _, high in bounds]
    reference = np.fmin(result["phi_init"].to_numpy(float), result["phi_prior"].to_numpy(float))
    result["verdict"] = [BELOW if high < ref else NOT_BELOW if low >= ref else UNDECIDED
                         for low, high, ref in zip(result["phi_final_low"],
                                                   result["phi_final_high"], reference,
                                                   strict=True)]
    return _finish(result, grouped, rows)[columns]


def table2_mia(table: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per (dataset, method, ε) the membership-inference AUC, mean and std over seeds,
    with uniform and class-stratified non-members, the (ε, δ)-DP ceiling on any attack's AUC,
    and whether each mean lies above it (impossible for a correctly private mechanism); beside
    the uniform game, its class-confound cap (the best AUC of an attack reading only the
    class) and whether the mean lies above it (signal beyond the class)."""
    columns = [*KEYS, "label", "n_seeds", "mia_auc_uniform_mean", "mia_auc_uniform_std",
               "mia_auc_uniform", "mia_auc_stratified_mean", "mia_auc_stratified_std",
               "mia_auc_stratified", "mia_auc_ceiling", "uniform_above_ceiling",
               "stratified_above_ceiling", "mia_auc_class_cap", "uniform_above_class_cap",
               "data_standin"]
    metrics = ["mia_auc_uniform", "mia_auc_stratified"]
    _require(table, [*metrics, "mia_auc_ceiling", "mia_auc_class_cap"], "table2_mia")
    rows = table[table[metrics].notna().any(axis=1)]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    grouped = rows.groupby(KEYS)
    result = grouped.agg(n_seeds=("seed", "nunique"),
                         mia_auc_ceiling=("mia_auc_ceiling", "mean"),
                         mia_auc_class_cap=("mia_auc_class_cap", "mean")).reset_index()
    for metric, flag in zip(metrics, ("uniform_above_ceiling", "stratified_above_ceiling"),
                            strict=True):
        mean = grouped[metric].mean().to_numpy()
        std = grouped[metric].std().to_numpy()
        result[f"{metric}_mean"], result[f"{metric}_std"] = mean, std
        result[metric] = [_plus_minus(m, s) for m, s in zip(mean, std, strict=True)]
        result[flag] = np.asarray(mean > result["mia_auc_ceiling"].to_numpy(), dtype=bool)
    result["uniform_above_class_cap"] = np.asarray(
        result["mia_auc_uniform_mean"].to_numpy() > result["mia_auc_class_cap"].to_numpy(),
        dtype=bool)
    return _finish(result, grouped, rows)[columns]


def _finish(result: pd.DataFrame, grouped, rows: pd.DataFrame) -> pd.DataFrame:
    """Add the label and stand-in flag; sort like the paper (dataset, ε with ∞ last, method)."""
    result["label"] = result["method"].map(method_label)
    result["data_standin"] = (grouped["data_standin"].agg(lambda v: bool(v.astype(bool).any()))
                              .to_numpy(dtype=bool) if "data_standin" in rows else False)
    order = sorted(range(len(result)), key=lambda i: (
        dataset_key(result["dataset"].iat[i]), float(result["epsilon"].iat[i]),
        method_key(result["method"].iat[i])))
    return result.iloc[order].reset_index(drop=True)


def _plus_minus(mean: float, std: float) -> str:
    if not np.isfinite(mean):
        return ""
    return f"{mean:.4f}" if not np.isfinite(std) else f"{mean:.4f} ± {std:.4f}"


def _require(table: pd.DataFrame, metrics: list[str], name: str) -> None:
    require_columns(table, (*KEYS, "seed", *metrics), name, "the runs of paper 004's methods")
