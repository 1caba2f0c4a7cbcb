"""BYOA's grid-wide rate figures: error vs d and its slopes
table, utility vs gradient evaluations, and the measured / bound heat-maps."""

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle

from dpminimax.report import ResultsTableError
from dpminimax.report.minimax.rate_maps import plot_ratio_heatmap, plot_utility_vs_cost
from dpminimax.report.minimax.rates import slopes_table
from dpminimax.report.registry import FIGURES, TABLES, FigureRequest

NS = (256, 1024, 4096)
EPSILONS = (0.1, 0.5)
DIMENSIONS = (2, 5, 10, 20, 50, 100)
RISK = "excess_population_risk"


def _ratios(violation: tuple[float, int] = (0.5, 1024), seeds: int = 3) -> pd.DataFrame:
    """Ratio 0.3 everywhere for Alg. 1 except 2 at ``violation`` (epsilon, n); the exact
    solver prints no bound (NaN)."""
    rows = []
    for method in ("output_perturbation", "exact_solution"):
        for eps in (*EPSILONS, math.inf) if method == "exact_solution" else EPSILONS:
            for n in NS:
                ratio = 2.0 if (eps, n) == violation else 0.3
                for seed in range(seeds):
                    rows.append({"dataset": "p1", "method": method, "epsilon": eps,
                                 "seed": seed, "p_n": n, RISK: ratio / n,
                                 f"{RISK}_over_bound": ratio if method != "exact_solution"
                                 else math.nan})
    return pd.DataFrame(rows)


def _by_dimension(slope: float = 1.0, seeds: int = 30, column: str = "p_d") -> pd.DataFrame:
    """metric = 0.01 d^slope with 10% log-normal noise at two n, bound 5 times the mean."""
    rng = np.random.default_rng(0)
    rows = [{"dataset": "p1", "method": "output_perturbation", "epsilon": 0.5, "seed": seed,
             "p_n": n, column: d, RISK: 0.01 * d ** slope * rng.lognormal(0.0, 0.1),
             f"{RISK}_bound": 0.05 * d ** slope}
            for n in (1024, 4096) for d in DIMENSIONS for seed in range(seeds)]
    return pd.DataFrame(rows)


def _costs(ns=NS, epsilons=EPSILONS) -> pd.DataFrame:
    """Alg. 1 with two counting solvers and the exact one (no count), and DP-SGD-like
    baseline without a solver parameter."""
    rows = []
    for n in ns:
        for eps in epsilons:
            for seed in range(2):
                for solver, cost, risk in (("svrg", 8.0, 0.02), ("katyusha", 5.0, 0.03),
                                           ("exact", math.nan, 0.02)):
                    rows.append({"dataset": "p1", "method": "output_perturbation",
                                 "epsilon": eps, "seed": seed, "p_n": n, "p_solver": solver,
                                 RISK: risk, "gradient_evaluations_per_sample": cost})
                rows.append({"dataset": "p1", "method": "dp_sgd", "epsilon": eps, "seed": seed,
                             "p_n": n, "p_solver": math.nan, RISK: 0.05,
                             "gradient_evaluations_per_sample": 40.0})
    return pd.DataFrame(rows)


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_title()]


def _written(path):
    return path.is_file() and path.stat().st_size > 1000


def test_the_heatmap_boxes_the_planted_violation_only(tmp_path):
    fig = FIGURES["ratio_heatmap_population_risk"](
        _ratios(), FigureRequest(out_paths=[tmp_path / "h.png"]))
    assert _written(tmp_path / "h.png")
    (panel,) = _panels(fig)  # the exact solver prints no bound: no panel
    assert "Output perturbation" in panel.get_title()
    assert "≤ 1 means the bound holds" in fig.get_suptitle()
    (box,) = [p for p in panel.patches if isinstance(p, Rectangle)]
    assert tuple(box.get_center()) == pytest.approx((NS.index(1024), EPSILONS.index(0.5)))
    assert sorted(t.get_text() for t in panel.texts) == ["0.3"] * 5 + ["2"]
    norm = panel.images[0].norm  # a log scale symmetric about 1, holding 0.3
    assert (norm.vmin, norm.vmax) == pytest.approx((0.3, 1 / 0.3))


def test_a_heatmap_needs_a_bound():
    table = _ratios().assign(**{f"{RISK}_over_bound": math.nan})
    with pytest.raises(ValueError, match="no printed bound"):
        plot_ratio_heatmap(table, RISK, out_paths=[])
    with pytest.raises(ValueError, match="population_strong_gap_over_bound"):
        plot_ratio_heatmap(table, "population_strong_gap", out_paths=[])


@pytest.mark.parametrize("column", ["p_d", "d"])
def test_error_vs_d_has_a_panel_per_n_with_bands_bounds_and_reference_slopes(tmp_path, column):
    fig = FIGURES["population_risk_vs_d"](_by_dimension(column=column),
                                          FigureRequest(out_paths=[tmp_path / "d.png"]))
    assert _written(tmp_path / "d.png")
    panels = _panels(fig)
    assert [ax.get_title() for ax in panels] == ["p1, n = 1024", "p1, n = 4096"]
    ax = panels[0]
    assert (ax.get_xscale(), ax.get_yscale(), ax.get_xlabel()) == ("log", "log", "Dimension d")
    styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
    assert styles["slope 1 (SC)"] == ":" and "slope 0.5 (convex)" in styles
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert [list(line.get_xdata()) for line in dashed] == [list(DIMENSIONS)]
    assert len(ax.collections) == 1  # the 95% band


def test_a_problem_without_the_metric_gets_no_panel(tmp_path):
    """An experiment over a minimization problem and a game: the risk figure draws the
    problem that has a risk; a figure of a metric no run has is refused."""
    game = _by_dimension().assign(dataset="g1", **{RISK: math.nan, f"{RISK}_bound": math.nan})
    fig = FIGURES["population_risk_vs_d"](pd.concat([_by_dimension(), game]),
                                          FigureRequest(out_paths=[tmp_path / "d.png"]))
    assert [ax.get_title() for ax in _panels(fig)] == ["p1, n = 1024", "p1, n = 4096"]
    with pytest.raises(ResultsTableError, match="no run measures"):
        FIGURES["population_risk_vs_d"](game, FigureRequest(out_paths=[tmp_path / "g.png"]))


def test_the_d_slopes_table_recovers_a_planted_slope():
    table = TABLES["slopes_population_risk_vs_d"](_by_dimension(slope=1.0))
    assert list(table["p_n"]) == [1024, 4096]
    assert {"d_min", "d_max"} <= set(table.columns) and "n_min" not in table.columns
    for row in table.to_dict(orient="records"):
        assert row["slope"] == pytest.approx(1.0, abs=0.05)
        assert row["slope_ci_low"] < 1.0 < row["slope_ci_high"]
        assert row["bound_slope"] == pytest.approx(1.0)
        assert (row["d_min"], row["d_max"], row["seeds"]) == (2, 100, 30)


def test_the_n_slopes_table_keeps_its_columns():
    table = _by_dimension().query("p_d == 10")
    assert list(slopes_table(table, RISK).columns) == [
        "dataset", "method", "epsilon", "metric", "n_min", "n_max", "seeds", "slope",
        "slope_ci_low", "slope_ci_high", "bound_slope", "max_mean_over_bound"]


def test_utility_vs_cost_marks_each_method_and_solver(tmp_path):
    fig = FIGURES["utility_vs_gradient_evaluations_population_risk"](
        _costs(), FigureRequest(out_paths=[tmp_path / "u.png"]))
    assert _written(tmp_path / "u.png")
    panels = _panels(fig)
    assert len(panels) == len(NS) * len(EPSILONS)
    assert panels[0].get_title() == "p1, n = 256, ε = 0.1"
    assert (panels[0].get_xscale(), panels[0].get_yscale()) == ("log", "log")
    labels = [line.get_label() for line in panels[0].get_lines()]
    markers = [label for label in labels if "solver" in label]
    assert len(markers) == 2 and any("solver katyusha" in label for label in markers)
    assert "DP-SGD" in labels  # no solver parameter: no solver in its label
    assert sum("no gradient count" in label for label in labels) == 1  # the exact solver
    front = next(line for line in panels[0].get_lines() if "Pareto" in line.get_label())
    assert list(front.get_xdata()) == [5.0, 8.0]  # DP-SGD is dominated
    assert len(fig.legends[0].get_texts()) == len(labels)


def test_utility_vs_cost_needs_some_counts():
    table = _costs().assign(gradient_evaluations_per_sample=math.nan)
    with pytest.raises(ResultsTableError, match="no run counts"):
        plot_utility_vs_cost(table, RISK, ylabel="risk", out_paths=[])


def test_every_new_figure_draws_a_single_grid_point(tmp_path):
    one = {"dataset": "g1", "method": "output_perturbation", "epsilon": 0.5, "seed": 0,
           "p_n": 1024, "p_d": 10, "p_solver": "svrg", "gradient_evaluations_per_sample": 3.0}
    for metric in (RISK, "population_strong_gap", "population_primal_gap"):
        one.update({metric: 0.1, f"{metric}_bound": 0.2, f"{metric}_over_bound": 0.5})
    table = pd.DataFrame([one])
    names = [name for name in FIGURES if name.endswith("_vs_d") or name.startswith(
        ("ratio_heatmap_", "utility_vs_gradient_evaluations_"))]
    names += ["population_gap_vs_epsilon", "population_primal_gap_vs_epsilon"]
    assert len(names) == 9
    for name in names:
        FIGURES[name](table, FigureRequest(out_paths=[tmp_path / f"{name}.png"]))
        assert _written(tmp_path / f"{name}.png"), name
    assert TABLES["slopes_population_gap_vs_d"](table).empty


def test_a_method_without_the_axis_is_drawn_as_its_level(tmp_path):
    """DP bilevel E5: Alg. 1 (no b_out) beside Alg. 3's b_out sweep is a horizontal line at
    its mean, labelled as a level, and its slope is not fitted."""
    from dpminimax.report.minimax.rates import plot_rate

    rows = [{"dataset": "pa", "method": "dp_bilevel_minibatch", "epsilon": 8.0, "seed": s,
             "p_n": 1024, "p_batch_out": b, "gradient_mapping_norm": 1.0 / b ** 0.5}
            for b in (1, 4, 16) for s in range(3)]
    rows += [{"dataset": "pa", "method": "dp_bilevel", "epsilon": 8.0, "seed": s,
              "p_n": 1024, "p_batch_out": math.nan, "gradient_mapping_norm": 0.07}
             for s in range(3)]
    fig = plot_rate(pd.DataFrame(rows), "gradient_mapping_norm", ylabel="G",
                    out_paths=[tmp_path / "g.png"], against="batch_out")
    (ax,) = fig.axes
    levels = [line for line in ax.get_lines() if "(level)" in str(line.get_label())]
    assert len(levels) == 1 and levels[0].get_ydata()[0] == pytest.approx(0.07)
    slopes = slopes_table(pd.DataFrame(rows), "gradient_mapping_norm", against="batch_out")
    assert list(slopes["method"]) == ["dp_bilevel_minibatch"]
    assert slopes["slope"].iloc[0] == pytest.approx(-0.5)
