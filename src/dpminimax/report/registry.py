"""Every figure and table kind a paper's ``experiments.yaml`` may list, by name.

A figure is drawn from the (experiment-filtered) long results table by a *drawer*
``draw(table, request)``; :class:`FigureRequest` carries the output paths and the optional inputs
(the paper's reported numbers, the delta of the attack ceilings). Adding a figure kind is one
entry in :data:`FIGURES`; the workflow's ``figure`` rule and :func:`dpminimax.api.make_figure`
need no change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpminimax.report.aggregate import series_table
from dpminimax.report.clip_sweep import plot_clip_sweep
from dpminimax.report.constraint_value import value_column, with_constraint_values
from dpminimax.report.dual_update import plot_dual_update
from dpminimax.report.figures import plot_attack_vs_epsilon, plot_metric_vs_epsilon
from dpminimax.report.low_budget import plot_low_budget
from dpminimax.report.pareto import dominance_table, plot_pareto
from dpminimax.report.rates import plot_rate, slopes_table
from dpminimax.report.satisfaction import plot_constraint_satisfaction
from dpminimax.report.tradeoff import plot_tradeoff


@dataclass(frozen=True)
class FigureRequest:
    """Where to save a figure and what it may overlay."""

    out_paths: Sequence[str | Path]
    reported: pd.DataFrame | None = None
    delta: float | None = None


Drawer = Callable[[pd.DataFrame, FigureRequest], object]


def _metric(metric: str, ylabel: str) -> Drawer:
    return lambda table, req: plot_metric_vs_epsilon(
        series_table(table), metric, ylabel=ylabel, out_paths=list(req.out_paths))


def _attack(metric: str) -> Drawer:
    def draw(table: pd.DataFrame, req: FigureRequest):
        delta = float(table["delta"].max()) if req.delta is None else req.delta
        return plot_attack_vs_epsilon(series_table(table), metric=metric, delta=delta,
                                      out_paths=list(req.out_paths))
    return draw


def _rate(metric: str, ylabel: str, against: str = "p_n") -> Drawer:
    return lambda table, req: plot_rate(table, metric, ylabel=ylabel,
                                        out_paths=list(req.out_paths), against=against)


def _tradeoff(violation: str) -> Drawer:
    return lambda table, req: plot_tradeoff(table, violation=violation,
                                            out_paths=list(req.out_paths),
                                            reported=req.reported)


def _satisfaction(violation: str) -> Drawer:
    return lambda table, req: plot_constraint_satisfaction(table, violation=violation,
                                                           out_paths=list(req.out_paths))


FIGURES: dict[str, Drawer] = {
    "accuracy_vs_epsilon": _metric("test_accuracy", "Test accuracy"),
    "error_vs_epsilon": _metric("test_error", "Misclassification error"),
    "dp_violation_vs_epsilon": _metric("dp_violation", "Demographic parity violation"),
    "eo_violation_vs_epsilon": _metric("eo_violation", "Equalized odds violation"),
    "attack_auc_vs_epsilon": _attack("attack_auc"),
    "attack_tpr_vs_epsilon": _attack("attack_tpr_at_1pct_fpr"),
    "tradeoff_dp": _tradeoff("dp_violation"),          # RaCO-DP Fig. 4, DP-FERMI Figs. 2-8
    "tradeoff_eo": _tradeoff("eo_violation"),          # RaCO-DP Fig. 6, DP-FERMI Figs. 4, 9
    "constraint_satisfaction_dp": _satisfaction("dp_violation"),   # RaCO-DP Fig. 3
    "pareto_dp": lambda table, req: plot_pareto(table, violation="dp_violation",
                                                out_paths=list(req.out_paths)),
    "tradeoff_fnr": lambda table, req: plot_tradeoff(                # RaCO-DP Fig. 5a
        with_constraint_values(table, "false_negative_rate"), violation=value_column("test"),
        ylabel="False negative rate (test)", out_paths=list(req.out_paths)),
    "clip_sweep_fnr": lambda table, req: plot_clip_sweep(            # RaCO-DP Fig. 8a
        table, constraint="false_negative_rate", out_paths=list(req.out_paths)),
    "dual_update_dp": lambda table, req: plot_dual_update(           # RaCO-DP Fig. 8b
        table, violation="dp_violation", out_paths=list(req.out_paths)),
    "low_budget_dp": lambda table, req: plot_low_budget(             # RaCO-DP Fig. 9
        table, violation="dp_violation", out_paths=list(req.out_paths)),
    # BYOA rate studies (spec 003 §5.7): error vs n, printed bound dashed
    "population_risk_vs_n": _rate("excess_population_risk", "Excess population risk"),
    "empirical_risk_vs_n": _rate("excess_empirical_risk", "Excess empirical risk"),
    "population_gap_vs_n": _rate("population_strong_gap", "Population strong gap"),
    "empirical_gap_vs_n": _rate("empirical_strong_gap", "Empirical strong gap"),
    "population_primal_gap_vs_n": _rate("population_primal_gap", "Population primal gap"),
    "population_risk_vs_epsilon": _rate("excess_population_risk", "Excess population risk",
                                        against="epsilon"),
    "population_gap_vs_epsilon": _rate("population_strong_gap", "Population strong gap",
                                       against="epsilon"),
    "gradient_evaluations_vs_n": _rate("gradient_evaluations_per_sample",
                                       "Gradient evaluations per sample"),
}


#: Per-experiment tables (``tables:`` in experiments.yaml): runs table -> one CSV.
TABLES: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "dominance_dp": lambda table: dominance_table(table, "dp_violation"),   # cross-paper
    "slopes_population_risk": lambda table: slopes_table(table, "excess_population_risk"),
    "slopes_empirical_risk": lambda table: slopes_table(table, "excess_empirical_risk"),
    "slopes_population_gap": lambda table: slopes_table(table, "population_strong_gap"),
    "slopes_empirical_gap": lambda table: slopes_table(table, "empirical_strong_gap"),
    "slopes_population_primal_gap": lambda table: slopes_table(table, "population_primal_gap"),
    "slopes_gradient_evaluations": lambda table: slopes_table(
        table, "gradient_evaluations_per_sample"),
}


class UnknownFigureError(ValueError):
    """An experiment listed a figure or table kind that does not exist."""


def get_drawer(figure: str) -> Drawer:
    try:
        return FIGURES[figure]
    except KeyError:
        raise UnknownFigureError(f"unknown figure {figure!r}; known: {sorted(FIGURES)}") from None


def get_table(name: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    try:
        return TABLES[name]
    except KeyError:
        raise UnknownFigureError(f"unknown table {name!r}; known: {sorted(TABLES)}") from None
