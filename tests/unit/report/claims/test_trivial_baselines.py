"""The trivial baselines of issue 36 item 2: every task writes ``trivial_<metric>`` beside each
run's metrics, equal to an independent computation of the same metric at the task's
data-independent output (x = 0 / (0, 0), x0 = 0, the majority class, the initial model);
the columns survive aggregation into the runs table and its summary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.optimize import minimize, minimize_scalar
from toydata import toy_dataset, toy_images

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.problems.base import stack_examples

CPU = torch.device("cpu")


def _fit(name: str, epsilon: float, seeds=(0, 1), data=None, **params):
    method = get_method(name)
    runs = [RunSpec(seed, epsilon, 1e-6, {k: v for k, v in params.items()
                                          if k in method.parameters}) for seed in seeds]
    fit = method.fit(data, runs, CPU)
    return method, fit, method.task.evaluate(fit, data, CPU)


def test_byoa_trivial_gap_is_the_centre_gap_of_the_bilinear_game():
    """G2, f = <a, x><c, y> + <p, x> - <q, y> on balls of radius D: at (0, 0), max_y F(0, y)
    = D ||Q|| and min_x F(x, 0) = -D ||P|| (P, Q the means of p, q), so the strong gap is
    D (||P|| + ||Q||): on each run's sample, and with p_bar, q_bar on the population; the weak
    gap of S copies of one point is its strong gap; the ratio is over the run's own bound."""
    method, fit, rows = _fit("phased_minimax_output_perturbation", 1.0, n=256)
    problem = method.problem(fit.resolved_params[0])
    radius = problem.block("x").radius
    population = radius * float(torch.linalg.vector_norm(problem.p_bar)
                                + torch.linalg.vector_norm(problem.q_bar))
    for row, sample in zip(rows, fit.samples, strict=True):
        empirical = radius * float(torch.linalg.vector_norm(sample["p"].mean(0))
                                   + torch.linalg.vector_norm(sample["q"].mean(0)))
        assert row["trivial_empirical_strong_gap"] == pytest.approx(empirical, rel=1e-10)
        assert row["trivial_population_strong_gap"] == pytest.approx(population, rel=1e-10)
        assert row["trivial_population_weak_gap"] == pytest.approx(population, rel=1e-10)
        assert row["trivial_population_strong_gap_over_bound"] == pytest.approx(
            population / row["population_strong_gap_bound"], rel=1e-12)
        solution = problem.population_solution()
        assert row["trivial_distance_y"] == pytest.approx(float(torch.linalg.vector_norm(
            solution["y"])), rel=1e-12)
        assert row["trivial_output"] == "(x, y) = (0, 0)"
    # the trivial point is data-independent: its population gap is the same in every run
    assert rows[0]["trivial_empirical_strong_gap"] != rows[1]["trivial_empirical_strong_gap"]


def test_byoa_trivial_excess_risk_is_that_of_x_0_on_least_squares():
    """P1 (ridge least squares): the empirical excess risk of x = 0 is F_S(0) - min F_S with
    the minimum found by L-BFGS on the run's sample, and the population one matches a
    Monte-Carlo estimate of F(0) - F(x*) on 200,000 fresh examples."""
    method, fit, rows = _fit("output_perturbation", 1.0, seeds=(3,), n=128,
                             problem="p1_least_squares")
    problem = method.problem(fit.resolved_params[0])
    sample = {k: v.unsqueeze(0) for k, v in fit.samples[0].items()}
    dim = problem.block("x").dim

    def objective(w):
        return float(problem.objective({"x": torch.tensor(w).view(1, dim)}, sample)[0])

    best = minimize(objective, np.zeros(dim), method="L-BFGS-B",
                    options={"ftol": 1e-15, "gtol": 1e-12})
    assert rows[0]["trivial_excess_empirical_risk"] == pytest.approx(
        objective(np.zeros(dim)) - best.fun, abs=1e-9)
    fresh = {k: v.unsqueeze(0) for k, v in problem.sample(
        200_000, torch.Generator().manual_seed(11)).items()}
    star = problem.population_solution()["x"].view(1, dim)
    monte_carlo = float(problem.objective({"x": torch.zeros(1, dim, dtype=star.dtype)}, fresh)[0]
                        - problem.objective({"x": star}, fresh)[0])
    assert rows[0]["trivial_excess_population_risk"] == pytest.approx(monte_carlo, rel=0.03)
    assert rows[0]["trivial_output"] == "x = 0"


def test_bilevel_trivial_columns_are_x0s_exact_stationarity():
    """DP bilevel on P-A: ||grad F_S(x0)|| at x0 = 0 equals the norm of a central finite
    difference of the hyperobjective F_S (independent of the implicit-gradient formula), the
    gradient mapping at x0 is that gradient (x0 - eta grad stays in X), and
    ``trivial_inner_error_max`` is the distance of y0 = 0 to the inner minimiser at x0."""
    method, fit, rows = _fit("dp_bilevel", 1.0, n=60, outer_steps=4, d_x=2, d_y=3,
                             inner_steps=20, lam=8.0, eta=0.1)
    problem = method.problem(fit.resolved_params[0])
    step = 1e-6
    for row, sample in zip(rows, fit.samples, strict=True):
        stats = problem.statistics(stack_examples([sample]))
        basis = torch.eye(problem.x.dim, dtype=problem.dtype)
        gradient = torch.stack([(problem.hyperobjective(step * e.view(1, -1), stats)
                                 - problem.hyperobjective(-step * e.view(1, -1), stats))[0]
                                / (2 * step) for e in basis])
        norm = float(torch.linalg.vector_norm(gradient))
        assert row["trivial_hypergradient_norm"] == pytest.approx(norm, rel=1e-6)
        assert row["trivial_gradient_mapping_norm"] == pytest.approx(norm, rel=1e-6)
        assert row["trivial_gradient_mapping_norm_last"] == row["trivial_gradient_mapping_norm"]
        inner = problem.inner_solution(torch.zeros(1, problem.x.dim, dtype=problem.dtype), stats)
        assert row["trivial_inner_error_max"] == pytest.approx(
            float(torch.linalg.vector_norm(inner)), rel=1e-12)
        assert row["trivial_hyperobjective"] == pytest.approx(float(problem.hyperobjective(
            torch.zeros(1, problem.x.dim, dtype=problem.dtype), stats)[0]), rel=1e-12)
        assert "trivial_penalty_bias" not in row and "trivial_d_x" not in row
        assert row["trivial_output"] == "x0 = 0"


def test_classification_trivial_columns_are_the_majority_predictor():
    """70% positives in training: the majority class is 1, its test error is the test set's
    rate of negatives, its training error the training set's, and its fairness gaps are 0."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    y = (rng.random(300) < 0.7).astype(int)
    data = toy_dataset(x, y, rng.integers(0, 2, 300),
                       x_test=rng.normal(size=(200, 3)).astype(np.float32),
                       y_test=(rng.random(200) < 0.4).astype(int),
                       s_test=rng.integers(0, 2, 200))
    _, _, rows = _fit("dp_sgd", 1.0, seeds=(0,), data=data)
    row = rows[0]
    assert row["trivial_test_error"] == pytest.approx(float(np.mean(data.y_test == 0)))
    assert row["trivial_test_accuracy"] == pytest.approx(float(np.mean(data.y_test == 1)))
    assert row["trivial_train_error"] == pytest.approx(float(np.mean(data.y_train == 0)))
    for gap in ("dp_violation", "eo_violation", "train_dp_violation", "train_eo_violation"):
        assert row[f"trivial_{gap}"] == 0.0
    assert row["trivial_output"] == "majority class (1)"


def test_dro_trivial_columns_are_the_initial_logistic_model():
    """Logistic regression starts at w = 0: every loss is log 2, so Phi = min over lam >= lam0
    of log 2 + lam rho = log 2 + lam0 rho, the DRO weights are uniform and grad Phi is the
    mean of (1/2 - y_i) (x_i, 1) over the curves' training rows; every score is 0, so the
    predictions are all negative and the AUC is 1/2."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=300) > 0.3).astype(int)
    data = toy_dataset(x, y, rng.integers(0, 2, 300))
    rows_used, lam0, rho = 100, 1e-3, 0.5
    _, _, rows = _fit("dp_sgda_dro", 2.0, data=data, model="logistic_regression",
                      batch_size=64, epochs=1.0, eval_every=2, curve_rows=rows_used,
                      lam0=lam0, rho=rho)
    design = np.c_[data.x_train[:rows_used], np.ones(rows_used)]
    gradient = ((0.5 - data.y_train[:rows_used])[:, None] * design).mean(0)
    for row in rows:
        assert row["trivial_dro_objective"] == pytest.approx(math.log(2) + lam0 * rho, rel=1e-6)
        assert row["trivial_dro_gradient_norm"] == pytest.approx(
            float(np.linalg.norm(gradient)), rel=1e-5)
        assert row["trivial_test_accuracy"] == pytest.approx(float(np.mean(data.y_test == 0)))
        assert row["trivial_test_auc"] == pytest.approx(0.5)
        (point,) = json.loads(row["trivial_curve"])
        assert point["dro_gradient_norm"] == pytest.approx(row["trivial_dro_gradient_norm"])
        assert row["trivial_output"] == "initial model"
    # the class prior's Phi on the same rows, by an independent path: a bounded 1-D search
    # over lam >= lam0 of lam log mean e^{l / lam} + lam rho with l = -log(class frequency)
    labels = data.y_train[:rows_used]
    losses = -np.log(np.bincount(labels)[labels] / rows_used)
    prior = minimize_scalar(
        lambda lam: lam * np.log(np.mean(np.exp((losses - losses.max()) / lam)))
        + losses.max() + lam * rho, bounds=(lam0, 100.0), method="bounded",
        options={"xatol": 1e-10})
    assert [row["prior_dro_objective"] for row in rows] == pytest.approx(
        [prior.fun] * len(rows), rel=1e-5)


def test_dro_trivial_columns_are_the_programs_start_on_a_network():
    """A SmallCNN trained with step sizes 0 never leaves its start: its test metrics, last
    curve point, gradient norm and Phi are the trivial columns (the same initialisation)."""
    _, _, rows = _fit("dp_sgda_dro", 2.0, data=toy_images(n=96), model="small_cnn",
                      batch_size=32, epochs=1.0, eval_every=2, curve_rows=32, lr=0.0,
                      lr_dual=0.0)
    for row in rows:
        for metric in ("test_accuracy", "test_auc", "test_f1", "dro_gradient_norm",
                       "dro_objective"):
            assert row[f"trivial_{metric}"] == pytest.approx(row[metric], rel=1e-6), metric
        last = json.loads(row["curve"])[-1]
        (start,) = json.loads(row["trivial_curve"])
        assert start["test_auc"] == pytest.approx(last["test_auc"])
    assert rows[0]["trivial_dro_objective"] != rows[1]["trivial_dro_objective"]  # per seed


def test_trivial_columns_survive_aggregation_and_the_summary(tmp_path):
    """Two jobs' metrics -> runs.parquet keeps every trivial column (and the text naming the
    output); the summary table has each trivial metric's mean beside the metric's."""
    from dpminimax import api

    paths = []
    for job, method in enumerate(("a", "b")):
        table = pd.DataFrame([{
            "paper": "p", "experiment": "e", "dataset": "d", "method": method, "epsilon": 1.0,
            "delta": 1e-5, "seed": seed, "run_id": f"{method}{seed}",
            "population_strong_gap": 1.0 + seed, "trivial_population_strong_gap": 0.5,
            "population_strong_gap_over_bound": 0.1,
            "trivial_population_strong_gap_over_bound": 0.05 * (job + 1),
            "trivial_output": "(x, y) = (0, 0)"} for seed in (0, 1)])
        paths.append(tmp_path / f"{method}.parquet")
        table.to_parquet(paths[-1])
    runs = api.aggregate(paths, [], tmp_path / "runs.parquet")
    stored = pd.read_parquet(tmp_path / "runs.parquet")
    for name in ("trivial_population_strong_gap", "trivial_population_strong_gap_over_bound",
                 "trivial_output"):
        assert stored[name].tolist() == runs[name].tolist()
    assert stored["trivial_population_strong_gap_over_bound"].tolist() == [0.05, 0.05, 0.1, 0.1]
    summary = api.make_table(tmp_path / "runs.parquet", tmp_path / "summary.csv").set_index(
        ["method", "metric"])
    assert summary.loc[("a", "trivial_population_strong_gap"), "mean"] == 0.5
    assert summary.loc[("a", "population_strong_gap"), "mean"] == 1.5


# --------------------------------------------------------------------------- figures

#: Figures of bilevel, BYOA and DP-DRO that draw no utility (a cost).
NOT_UTILITY = {"gradient_evaluations_vs_n"}


def _figures(paper: str) -> list[str]:
    from dpminimax.experiments import load_experiments

    root = Path(__file__).resolve().parents[4]
    experiments = load_experiments(root / "papers" / paper / "experiments.yaml")["experiments"]
    return sorted({figure for experiment in experiments.values()
                   for figure in experiment.get("figures") or []} - NOT_UTILITY)


def _with_trivial(rows: list[dict], metrics: dict[str, float], output: str) -> pd.DataFrame:
    """Rows with every metric of ``metrics`` (name -> its trivial value) and its trivial
    column; the measured value falls with n like a rate."""
    for row in rows:
        for metric, trivial in metrics.items():
            row.setdefault(metric, trivial * (1 + row["seed"]) * 1024 / row["p_n"])
            row[f"trivial_{metric}"] = trivial
        row["trivial_output"] = output
    return pd.DataFrame(rows)


def _grid(paper: str, dataset: str, method: str, **extra) -> list[dict]:
    return [{"paper": paper, "experiment": "e", "dataset": dataset, "method": method,
             "epsilon": eps, "delta": 1e-5, "seed": seed, "run_id": f"{eps}-{n}-{seed}",
             "p_n": n, **extra}
            for eps in (0.5, 2.0) for n in (1024, 4096) for seed in (0, 1)]


def _bilevel_runs() -> pd.DataFrame:
    rows = _grid("bilevel", "pa_linear_response", "dp_bilevel", p_problem="pa_linear_response",
                 p_instance=0, p_gamma=0.05, d_x=4, d_y=16, p_d_x=4, p_d_y=16,
                 p_batch_out=64, p_batch_in=32, p_lam=10.0, p_c_lam=0.4, p_c_T=0.02,
                 p_lam_raised=False, p_outer_steps=5, test_loss_best=0.1)
    return _with_trivial(rows, {"gradient_mapping_norm": 0.2, "hypergradient_norm": 0.2,
                                "population_gradient_mapping_norm": 0.2,
                                "inner_error_max": 0.5, "excess_test_loss": 0.3,
                                "test_loss_released": 0.6, "omega_out": 1.0,
                                "log_omega_gap": 0.7}, "x0 = 0")


def _byoa_runs() -> pd.DataFrame:
    rows = _grid("byoa", "p1_least_squares", "output_perturbation", p_d=10,
                 gradient_evaluations_per_sample=3.0)
    metrics = {"excess_population_risk": 0.05, "excess_empirical_risk": 0.05,
               "population_strong_gap": 0.8, "empirical_strong_gap": 0.8,
               "population_weak_gap": 0.8, "population_primal_gap": 0.8}
    for row in rows:
        for metric in ("excess_population_risk", "population_strong_gap",
                       "population_primal_gap"):
            value = metrics[metric] * (1 + row["seed"]) * 1024 / row["p_n"]
            row |= {metric: value, f"{metric}_bound": 10.0, f"{metric}_over_bound": value / 10,
                    f"trivial_{metric}_over_bound": metrics[metric] / 10}
    return _with_trivial(rows, metrics, "x = 0")


def _dpdro_runs() -> pd.DataFrame:
    def curve(value):
        return json.dumps([{"step": step, "test_auc": value, "test_f1": value,
                            "dro_gradient_norm": value} for step in (10, 20)])

    rows = [{"paper": "dpdro", "experiment": "e", "dataset": "mnist-st", "method": method,
             "epsilon": eps, "delta": 1e-5, "seed": seed, "run_id": f"{method}{eps}{seed}",
             "test_accuracy": 0.6, "trivial_test_accuracy": 0.5, "curve": curve(0.7),
             "trivial_curve": json.dumps([{"step": 0, "test_auc": 0.5, "test_f1": 0.1,
                                           "dro_gradient_norm": 0.2}]),
             "trivial_output": "initial model"}
            for method, eps in (("dp_sgda_dro", 1.0), ("dp_sgda_dro", 4.0), ("scdro", math.inf))
            for seed in (0, 1)]
    return pd.DataFrame(rows)


RUNS = {"bilevel": _bilevel_runs, "byoa": _byoa_runs, "dpdro": _dpdro_runs}


def _trivial_artists(fig) -> list[str]:
    """The labels of the figure's artists (every panel, sub-figure and legend) that start
    with "trivial"."""
    labels = [artist.get_label() for artist in fig.findobj()
              if hasattr(artist, "get_label") and isinstance(artist.get_label(), str)]
    texts = [text.get_text() for legend in fig.findobj(lambda a: hasattr(a, "get_texts"))
             for text in legend.get_texts()]
    return [label for label in labels + texts if label.startswith("trivial")]


@pytest.mark.parametrize("paper, figure", [(paper, figure) for paper in RUNS
                                           for figure in _figures(paper)])
def test_every_utility_figure_draws_the_trivial_baseline(paper, figure, tmp_path):
    """Every rate / utility figure of bilevel, BYOA and DP-DRO has an artist labelled
    "trivial: <output>" (the runs' trivial_output)."""
    from dpminimax.report.registry import FigureRequest, get_drawer

    runs = RUNS[paper]()
    fig = get_drawer(figure)(runs, FigureRequest([tmp_path / f"{figure}.png"]))
    found = _trivial_artists(fig)
    assert found, f"{figure}: no trivial baseline drawn"
    assert all(label.startswith(f"trivial: {runs['trivial_output'].iloc[0]}")
               for label in found), found


@pytest.mark.parametrize("figure", ["tradeoff_dp", "tradeoff_eo", "pareto_dp", "low_budget_dp"])
def test_trade_off_figures_mark_the_majority_predictor(figure, tmp_path):
    """RaCO-DP / DP-FERMI trade-offs (and the Pareto and low-budget panels): the majority
    predictor's point at (its test error, violation 0), the mean over the dataset's runs."""
    from dpminimax.report.registry import FigureRequest, get_drawer

    rows = [{"paper": "racodp", "experiment": "e", "dataset": "adult", "method": "racodp",
             "epsilon": 1.0, "delta": 1e-5, "seed": seed, "run_id": str(seed), "p_gamma": g,
             "test_error": 0.2 + g, "dp_violation": g, "eo_violation": g,
             "trivial_test_error": 0.24 + 0.01 * seed, "trivial_dp_violation": 0.0,
             "trivial_eo_violation": 0.0, "trivial_output": "majority class (0)"}
            for seed in (0, 1) for g in (0.01, 0.05)]
    fig = get_drawer(figure)(pd.DataFrame(rows), FigureRequest([tmp_path / "t.png"]))
    (point,) = [line for ax in fig.axes for line in ax.get_lines()
                if line.get_label().startswith("trivial: majority class (0)")]
    assert point.get_xydata().tolist() == [[pytest.approx(0.245), 0.0]]


@pytest.mark.parametrize("positives, fnr", [(0.3, 1.0), (0.7, 0.0)])
def test_racodp_constraint_value_of_the_majority_predictor(positives, fnr, tmp_path):
    """RaCO-DP's false-negative-rate constraint: the majority class predicts every row
    negative (FNR 1) when negatives are the majority, positive (FNR 0) otherwise; the recorded
    trivial violation is that FNR minus gamma, and Fig. 5a's trade-off marks the point (its
    test error, its FNR)."""
    from dpminimax.algorithms.fair.racodp import NonPrivateSgda
    from dpminimax.report.registry import FigureRequest, get_drawer

    rng = np.random.default_rng(2)
    x = rng.normal(size=(400, 3)).astype(np.float32)
    y = (rng.random(400) < positives).astype(int)
    data = toy_dataset(x, y, rng.integers(0, 2, 400))
    gamma = 0.1
    method = NonPrivateSgda()
    runs = [RunSpec(seed, math.inf, 1e-5, {"constraint": "false_negative_rate", "gamma": gamma,
                                           "max_steps": 5, "batch_size": 64}) for seed in (0, 1)]
    fit = method.fit(data, runs, CPU)
    rows = method.task.evaluate(fit, data, CPU)
    for row in rows:
        for split in ("train", "test"):
            assert row[f"trivial_{split}_max_constraint_violation"] == pytest.approx(fnr - gamma)
    table = pd.DataFrame([{"paper": "racodp", "experiment": "e", "dataset": "toy",
                           "method": method.name, "epsilon": math.inf, "delta": 1e-5,
                           "seed": run.seed, "run_id": str(run.seed), "p_constraint":
                           "false_negative_rate", "p_gamma": gamma, **row}
                          for run, row in zip(runs, rows, strict=True)])
    fig = get_drawer("tradeoff_fnr")(table, FigureRequest([tmp_path / "fnr.png"]))
    (point,) = [line for ax in fig.axes for line in ax.get_lines()
                if line.get_label().startswith("trivial: majority class")]
    assert point.get_xydata().tolist() == [[pytest.approx(float(np.mean(y != (positives > 0.5)))),
                                            pytest.approx(fnr)]]
