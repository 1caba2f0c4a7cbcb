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
from dpminimax.report.bilevel.collapse import collapse_table, plot_collapse
from dpminimax.report.bilevel.output_rule import output_rule_table
from dpminimax.report.bilevel.pilot import pilot_table, plot_pilot
from dpminimax.report.bilevel.tuning import plot_tuning, tuning_table
from dpminimax.report.compare.pareto import dominance_table, plot_pareto
from dpminimax.report.dro.tables import draw_curves, table2_mia, table3_accuracy, table3_objective
from dpminimax.report.fair.clip_sweep import plot_clip_sweep
from dpminimax.report.fair.constraint_value import value_column, with_constraint_values
from dpminimax.report.fair.dual_update import plot_dual_update
from dpminimax.report.fair.low_budget import plot_low_budget
from dpminimax.report.fair.satisfaction import plot_constraint_satisfaction
from dpminimax.report.fair.tradeoff import plot_tradeoff
from dpminimax.report.figures import plot_attack_vs_epsilon, plot_metric_vs_epsilon
from dpminimax.report.minimax.accuracy_audit import accuracy_audit_table, markov_ratio_table
from dpminimax.report.minimax.projection import projection_ablation_table
from dpminimax.report.minimax.rate_maps import plot_ratio_heatmap, plot_utility_vs_cost
from dpminimax.report.minimax.rates import plot_rate, slopes_table


@dataclass(frozen=True)
class FigureRequest:
    """Where the drawer saves the figure (none: its caller saves it) and what it may overlay."""

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


def _tuning(metric: str, ylabel: str) -> Drawer:
    return lambda table, req: plot_tuning(table, metric, ylabel=ylabel,
                                          out_paths=list(req.out_paths))


def _rate(metric: str, ylabel: str, against: str = "p_n",
          reference: dict[str, float] | None = None) -> Drawer:
    return lambda table, req: plot_rate(table, metric, ylabel=ylabel,
                                        out_paths=list(req.out_paths), against=against,
                                        reference=reference)


def _ratio_map(metric: str) -> Drawer:
    return lambda table, req: plot_ratio_heatmap(table, metric, out_paths=list(req.out_paths))


def _cost(metric: str, ylabel: str) -> Drawer:
    return lambda table, req: plot_utility_vs_cost(table, metric, ylabel=ylabel,
                                                   out_paths=list(req.out_paths))


#: BYOA's rates in d: error ~ d in the SC case, ~ sqrt(d) convex.
DIMENSION_RATE = {"SC": 1.0, "convex": 1 / 2}
#: DP bilevel Thm. 4.1's rate: its two terms' slopes in n and in epsilon.
BILEVEL_RATE = {"upper_term": -1 / 2, "lower_term": -1 / 3}
#: ... and Thm. 6.1's population term (d_x / n)^(1/2).
BILEVEL_POPULATION_RATE = {"population_term": -1 / 2, "lower_term": -1 / 3}
#: ... and in the dimensions (Thm. 4.1): the upper-level term's +1/4 in d_x, the lower-level
#: term's +1/6 in d_y.
BILEVEL_DX_RATE = {"upper_term": 1 / 4}
BILEVEL_DY_RATE = {"lower_term": 1 / 6}
#: Thm. 8.2 / Cor. 8.3: a private inner solution's error falls like 1 / (n epsilon').
INNER_RATE = {"inner_solver": -1.0}
#: Thm. 5.1's mini-batch term in b_out: 1 / b_out as printed (Lemma 8.8), 1 / sqrt(b_out)
#: by standard concentration (A11).
#: Thm. A.1: DP-Loc-SGD's guarantee does not depend on its batch size.
FLAT_RATE = {"thm_A1": 0.0}
#: Lemma 4.3 (ii): the penalty bias O(1 / lambda); Lemma 4.4: the private bias O(lambda).
PENALTY_RATE = {"penalty_bias": -1.0, "private_bias": 1.0}
MINIBATCH_RATE = {"paper_lemma_8_8": -1.0, "concentration_A11": -1 / 2}
STATIONARITY = "||G_{F_S,η}(x_out)||"


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
    "pareto_eo": lambda table, req: plot_pareto(table, violation="eo_violation",
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
    # BYOA rate studies: error vs n, printed bound dashed
    "population_risk_vs_n": _rate("excess_population_risk", "Excess population risk"),
    "empirical_risk_vs_n": _rate("excess_empirical_risk", "Excess empirical risk"),
    "population_gap_vs_n": _rate("population_strong_gap", "Population strong gap"),
    "weak_gap_vs_n": _rate("population_weak_gap", "Population weak gap (over the seeds)"),
    "empirical_gap_vs_n": _rate("empirical_strong_gap", "Empirical strong gap"),
    "population_primal_gap_vs_n": _rate("population_primal_gap", "Population primal gap"),
    "population_risk_vs_epsilon": _rate("excess_population_risk", "Excess population risk",
                                        against="epsilon"),
    "population_gap_vs_epsilon": _rate("population_strong_gap", "Population strong gap",
                                       against="epsilon"),
    "population_primal_gap_vs_epsilon": _rate("population_primal_gap",
                                              "Population primal gap", against="epsilon"),
    "gradient_evaluations_vs_n": _rate("gradient_evaluations_per_sample",
                                       "Gradient evaluations per sample"),
    # BYOA: error vs d, utility vs cost, measured / bound maps
    "population_risk_vs_d": _rate("excess_population_risk", "Excess population risk",
                                  against="d", reference=DIMENSION_RATE),
    "population_gap_vs_d": _rate("population_strong_gap", "Population strong gap",
                                 against="d", reference=DIMENSION_RATE),
    "utility_vs_gradient_evaluations_population_risk": _cost("excess_population_risk",
                                                             "Excess population risk"),
    "utility_vs_gradient_evaluations_population_gap": _cost("population_strong_gap",
                                                            "Population strong gap"),
    "ratio_heatmap_population_risk": _ratio_map("excess_population_risk"),
    "ratio_heatmap_population_gap": _ratio_map("population_strong_gap"),
    "ratio_heatmap_population_primal_gap": _ratio_map("population_primal_gap"),
    # DP bilevel rate studies: the predicted slopes dotted
    "gradient_mapping_vs_n": _rate("gradient_mapping_norm", STATIONARITY,
                                   reference=BILEVEL_RATE),
    "gradient_mapping_vs_epsilon": _rate("gradient_mapping_norm", STATIONARITY,
                                         against="epsilon", reference=BILEVEL_RATE),
    "population_gradient_mapping_vs_n": _rate(                             # our plot 8
        "population_gradient_mapping_norm", "||G_{F_P,η}(x_out)|| (population)",
        reference=BILEVEL_POPULATION_RATE),
    "inner_error_vs_n": _rate("inner_error_max", "max_t ||ỹ_t − y*(x_t)||",
                              reference=INNER_RATE),
    "gradient_mapping_vs_dx": _rate("gradient_mapping_norm", STATIONARITY, against="d_x",
                                    reference=BILEVEL_DX_RATE),
    "gradient_mapping_vs_dy": _rate("gradient_mapping_norm", STATIONARITY, against="d_y",
                                    reference=BILEVEL_DY_RATE),
    "gradient_mapping_vs_batch_out": _rate("gradient_mapping_norm", STATIONARITY,
                                           against="batch_out", reference=MINIBATCH_RATE),
    "inner_error_vs_batch_in": _rate("inner_error_max", "max_t ||ỹ_t − y*(x_t)||",
                                     against="batch_in", reference=FLAT_RATE),
    "gradient_mapping_vs_batch_in": _rate("gradient_mapping_norm", STATIONARITY,
                                          against="batch_in", reference=FLAT_RATE),
    "gradient_mapping_vs_lam": _rate("gradient_mapping_norm", STATIONARITY, against="lam",
                                     reference=PENALTY_RATE),
    "gradient_mapping_collapse": lambda table, req: plot_collapse(        # our plot 4
        table, "gradient_mapping_norm", ylabel=STATIONARITY, out_paths=list(req.out_paths)),
    "gradient_mapping_vs_alpha_pred": lambda table, req: plot_collapse(   # our plot 4, Thm. 4.1
        table, "gradient_mapping_norm", ylabel=STATIONARITY, out_paths=list(req.out_paths),
        against="alpha_pred"),
    "pilot_multipliers": lambda table, req: plot_pilot(    # DP bilevel Thm. 4.1's pilot
        table, out_paths=list(req.out_paths)),
    # DP bilevel Section 7 (E6): one panel per n
    "tuning_test_loss_vs_epsilon": _tuning("excess_test_loss",
                                           "Excess test loss of the fit at ω_out"),
    "tuning_released_test_loss_vs_epsilon": _tuning("excess_test_loss_released",
                                                    "Excess test loss of the released fit"),
    "tuning_omega_vs_epsilon": _tuning("omega_out", "Tuned ω_out"),
    "tuning_log_omega_gap_vs_epsilon": _tuning(                            # DP bilevel E8
        "log_omega_gap", "RMS |log10 ω_out,k − log10 ω_best,k|"),
    # DP-DRO: Figs. 1-3, curves over training at ε = 1, SCDRO dashed
    "dro_gradient_norm_curves": lambda table, req: draw_curves(            # DP-DRO Fig. 1
        table, "dro_gradient_norm_curves", list(req.out_paths)),
    "dro_auc_curves": lambda table, req: draw_curves(                      # DP-DRO Fig. 2
        table, "dro_auc_curves", list(req.out_paths)),
    "dro_f1_curves": lambda table, req: draw_curves(                       # DP-DRO Fig. 3
        table, "dro_f1_curves", list(req.out_paths)),
}


#: Per-experiment tables (``tables:`` in experiments.yaml): runs table -> one CSV.
TABLES: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "accuracy_audit": accuracy_audit_table,   # BYOA E9
    "markov_ratio_audit": markov_ratio_table,   # BYOA E9 on a randomized solver (issue 36)
    "projection_ablation": projection_ablation_table,   # BYOA releases projected (issue 36)
    "dominance_dp": lambda table: dominance_table(table, "dp_violation"),   # cross-paper
    "dominance_eo": lambda table: dominance_table(table, "eo_violation"),
    "slopes_population_risk": lambda table: slopes_table(table, "excess_population_risk"),
    "slopes_empirical_risk": lambda table: slopes_table(table, "excess_empirical_risk"),
    "slopes_population_gap": lambda table: slopes_table(table, "population_strong_gap"),
    "slopes_empirical_gap": lambda table: slopes_table(table, "empirical_strong_gap"),
    "slopes_population_primal_gap": lambda table: slopes_table(table, "population_primal_gap"),
    "slopes_gradient_evaluations": lambda table: slopes_table(
        table, "gradient_evaluations_per_sample"),
    "slopes_population_risk_vs_d": lambda table: slopes_table(
        table, "excess_population_risk", against="d"),
    "slopes_population_gap_vs_d": lambda table: slopes_table(
        table, "population_strong_gap", against="d"),
    "slopes_gradient_mapping": lambda table: slopes_table(
        table, "gradient_mapping_norm", predicted=BILEVEL_RATE),
    "slopes_population_gradient_mapping": lambda table: slopes_table(
        table, "population_gradient_mapping_norm", predicted=BILEVEL_POPULATION_RATE),
    "slopes_inner_error": lambda table: slopes_table(table, "inner_error_max",
                                                     predicted=INNER_RATE),
    "slopes_gradient_mapping_vs_dx": lambda table: slopes_table(
        table, "gradient_mapping_norm", predicted=BILEVEL_DX_RATE, against="d_x"),
    "slopes_gradient_mapping_vs_dy": lambda table: slopes_table(
        table, "gradient_mapping_norm", predicted=BILEVEL_DY_RATE, against="d_y"),
    "tuning_summary": tuning_table,          # DP bilevel Section 7 (E6)
    "slopes_gradient_mapping_vs_batch_out": lambda table: slopes_table(
        table, "gradient_mapping_norm", predicted=MINIBATCH_RATE, against="batch_out"),
    "slopes_gradient_mapping_vs_lam": lambda table: slopes_table(
        table, "gradient_mapping_norm", predicted=PENALTY_RATE, against="lam"),
    "slopes_inner_error_vs_batch_in": lambda table: slopes_table(
        table, "inner_error_max", predicted=FLAT_RATE, against="batch_in"),
    "output_rule": output_rule_table,        # DP bilevel E9
    "slopes_gradient_mapping_vs_alpha_pred": lambda table: collapse_table(  # DP bilevel Thm. 4.1
        table, "gradient_mapping_norm"),
    "pilot_multipliers": pilot_table,        # DP bilevel Thm. 4.1's schedule pilot (A2, A22)
    "table3_accuracy": table3_accuracy,      # DP-DRO Table 3
    "table3_objective": table3_objective,    # DP-DRO Table 3's runs against Phi(init), prior
    "table2_mia": table2_mia,                # DP-DRO Table 2
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
