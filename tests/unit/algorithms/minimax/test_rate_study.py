"""The BYOA rate study's pieces (issue #21): problem jobs through ``api.train`` (no data, one
batched program per sample size), the printed bounds of :mod:`.utility_bounds` pinned to hand
computations, the slopes table and figure, and the claims' log-log slope."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from dpminimax import api
from dpminimax.algorithms import expand_runs, get_method
from dpminimax.algorithms.base import shared_groups
from dpminimax.algorithms.minimax.utility_bounds import (
    csc_bounds,
    output_perturbation_bounds,
    phased_minimax_bounds,
    phased_output_perturbation_bounds,
)
from dpminimax.problems import Block, Constants
from dpminimax.report.claims.claims import measure_from_runs
from dpminimax.report.minimax.rates import plot_rate, slopes_table


def _stub(moduli: dict[str, float], dims: dict[str, int], lipschitz=1.0, smooth=1.0,
          diameter=1.0):
    blocks = tuple(Block(name, dim) for name, dim in dims.items())
    return SimpleNamespace(constants=Constants(lipschitz, smooth, moduli, diameter),
                           blocks=blocks, maximized=tuple(dims)[1:])


def test_theorem_3_4_bounds_as_printed():
    """L = l = 1, mu = 0.01, d = 1, n = 2^14, epsilon 0.5, delta 1e-7: kappa = 100,
    d log(2.5/delta) / eps^2 = 68.1376..."""
    privacy = math.log(2.5e7) / 0.25
    bounds = output_perturbation_bounds(_stub({"x": 0.01}, {"x": 1}), 2 ** 14, 0.5, 1e-7)
    assert bounds["excess_empirical_risk"] == pytest.approx(
        33 * 100 * privacy / (0.01 * 2 ** 28), rel=1e-12)
    assert bounds["excess_population_risk"] == pytest.approx(4.3943003634, rel=1e-9)
    nonprivate = output_perturbation_bounds(_stub({"x": 0.01}, {"x": 1}), 2 ** 14, math.inf,
                                            1e-7)
    assert nonprivate == {"excess_empirical_risk": 0.0,
                          "excess_population_risk": pytest.approx(100 * 7 / (0.01 * 2 ** 14))}


def test_theorem_4_4_bounds_as_printed():
    """mu_x 0.05, mu_y 0.1, l = 1, d = 2: kappa_x kappa_y + kappa = 200 + 20."""
    privacy = 2 * math.log(5e7) / 0.25
    bounds = output_perturbation_bounds(_stub({"x": 0.05, "y": 0.1}, {"x": 2, "y": 2}),
                                        2 ** 14, 0.5, 1e-7)
    assert bounds["empirical_strong_gap"] == pytest.approx(
        257 * 220 * privacy / (0.05 * 2 ** 28), rel=1e-12)
    assert bounds["population_strong_gap"] == pytest.approx(
        3 * 220 * (3 / (0.05 * 2 ** 14) + 128 * privacy / (0.05 * 2 ** 28)), rel=1e-12)


def test_theorem_3_7_and_4_8_bounds_match_the_worked_example():
    """A worked example: L = D = 1, d = 20, n = 2^16, epsilon 0.5, delta 1e-6: Thm. 3.7's bound
    is 0.485 and Thm. 4.8's 27.0."""
    convex = phased_output_perturbation_bounds(_stub({"x": 0.0}, {"x": 20}), 2 ** 16, 0.5, 1e-6)
    assert convex["excess_population_risk"] == pytest.approx(0.485, abs=5e-4)
    game = phased_minimax_bounds(_stub({"x": 0.0, "y": 0.0}, {"x": 20, "y": 20}), 2 ** 16, 0.5,
                                 1e-6)
    assert game["population_strong_gap"] == pytest.approx(27.0, abs=0.05)


def test_corollary_4_9_bound_as_printed():
    n, eps, delta, mu_y = 2 ** 10, 0.5, 1e-7, 0.1
    bound = csc_bounds(_stub({"x": 0.0, "y": mu_y}, {"x": 3, "y": 5}, lipschitz=2.0,
                             diameter=4.0), n, eps, delta)["population_primal_gap"]
    expected = (6 * 2 * 4 * 10 * (1 / 32 + 4 * math.sqrt(3 * math.log(2.5 / delta)) / (n * eps))
                + 4 * 100 * (8 / (mu_y * n) + 65 * 3 * math.log(2.5 * n / delta)
                             / (mu_y * n ** 2 * eps ** 2)))
    assert bound == pytest.approx(expected, rel=1e-12)


CONFIG = {"paper": "byoa", "experiment": "rates", "dataset": "g1_quadratic_game",
          "method": "output_perturbation", "epsilon": "0.5", "delta": 1e-7, "seeds": [0, 1],
          "params": {"problem": "g1_quadratic_game", "n": [128, 512]}}


def test_a_problem_job_trains_one_program_per_n_without_data(tmp_path):
    table = api.train(CONFIG, data_dir=None, out_dir=tmp_path / "job")
    assert sorted(zip(table["p_n"], table["seed"], strict=True)) == [
        (128, 0), (128, 1), (512, 0), (512, 1)]
    assert not table["data_standin"].any()
    assert (table["population_strong_gap_over_bound"] < 1).all()
    ratio = table["population_strong_gap"] / table["population_strong_gap_bound"]
    np.testing.assert_allclose(table["population_strong_gap_over_bound"], ratio)
    for name in ("metrics.parquet", "model.pt", "accounting.json", "run_config.json"):
        assert (tmp_path / "job" / name).exists()
    # each n alone gives the same rows as the grouped job
    alone = api.train({**CONFIG, "params": {**CONFIG["params"], "n": 512}}, data_dir=None,
                      out_dir=tmp_path / "alone")
    pd.testing.assert_frame_equal(
        table[table["p_n"] == 512].drop(columns=["run_id", "code_version"]).reset_index(
            drop=True),
        alone.drop(columns=["run_id", "code_version"]).reset_index(drop=True))


def test_a_dimension_sweep_evaluates_every_group_on_its_own_problem(tmp_path):
    """Grid points of different d train different problems (states of different shapes): the
    job keeps one result per group, each measured on its own problem, the same rows as each d
    alone; model.pt keeps every group's state."""
    config = {**CONFIG, "params": {"problem": "p1_least_squares", "n": 256, "d": [2, 20]},
              "dataset": "p1_least_squares"}
    table = api.train(config, data_dir=None, out_dir=tmp_path / "job")
    assert sorted(zip(table["p_d"], table["seed"], strict=True)) == [(2, 0), (2, 1), (20, 0),
                                                                     (20, 1)]
    for d in (2, 20):
        alone = api.train({**config, "params": {**config["params"], "d": d}}, data_dir=None,
                          out_dir=tmp_path / f"d{d}")
        pd.testing.assert_frame_equal(
            table[table["p_d"] == d].drop(columns=["run_id", "code_version"]).reset_index(
                drop=True),
            alone.drop(columns=["run_id", "code_version"]).reset_index(drop=True))
    saved = torch.load(tmp_path / "job" / "model.pt", weights_only=True)
    assert [fit["state"]["x"].shape for fit in saved["fits"]] == [(2, 2), (2, 20)]


def test_problem_and_dataset_methods_refuse_the_wrong_data(tmp_path):
    with pytest.raises(ValueError, match="draws its own data"):
        api.train(CONFIG, data_dir=tmp_path, out_dir=tmp_path / "job")
    with pytest.raises(ValueError, match="trains on a prepared dataset"):
        api.train({**CONFIG, "method": "dp_sgd", "params": {}}, data_dir=None,
                  out_dir=tmp_path / "job")


def test_shared_groups_split_runs_by_their_shared_values_in_order():
    method = get_method("output_perturbation")
    runs = expand_runs([0, 1], 0.5, 1e-7, {"n": [512, 128]})
    groups = shared_groups(method, runs)
    assert [[method.resolve(r.params)["n"] for r in group] for group in groups] == [
        [512, 512], [128, 128]]
    assert sorted(r.run_id for group in groups for r in group) == sorted(r.run_id for r in runs)


def _power_law(slope: float, seeds: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for n in (256, 1024, 4096, 16384):
        for seed in range(seeds):
            value = 3.0 * n ** slope * rng.lognormal(0.0, 0.2)
            rows.append({"dataset": "p", "method": "m", "epsilon": 0.5, "seed": seed, "p_n": n,
                         "err": value, "err_bound": 10.0 * n ** -1.0})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("slope", [-2.0, -0.5])
def test_the_slopes_table_recovers_a_known_power_law(slope):
    (row,) = slopes_table(_power_law(slope), "err").to_dict(orient="records")
    assert row["slope_ci_low"] < slope < row["slope_ci_high"]
    assert row["slope"] == pytest.approx(slope, abs=0.05)
    assert row["slope_ci_high"] - row["slope_ci_low"] < 0.2
    assert row["bound_slope"] == pytest.approx(-1.0)
    means = _power_law(slope).groupby("p_n")["err"].mean()
    assert row["max_mean_over_bound"] == pytest.approx(
        float((means / (10.0 / means.index)).max()))


def test_the_claims_loglog_slope_is_the_slope_of_the_group_means():
    table = _power_law(-2.0)
    value, runs, reason = measure_from_runs(
        {"metric": "err", "filter": {"method": "m"}, "by": ["p_n"], "agg": "loglog_slope",
         "window": {"min": 0, "max": math.inf}}, table)
    assert reason == "" and runs == len(table)
    means = table.groupby("p_n")["err"].mean()
    assert value == pytest.approx(np.polyfit(np.log(means.index), np.log(means), 1)[0])
    with pytest.raises(ValueError, match="exactly one 'by' column"):
        measure_from_runs({"metric": "err", "agg": "loglog_slope",
                           "window": {"min": 0, "max": math.inf}}, table)


def test_the_rate_figure_is_drawn_with_its_bound(tmp_path):
    fig = plot_rate(_power_law(-1.0), "err", ylabel="error",
                    out_paths=[tmp_path / "f.png", tmp_path / "f.pdf"])
    assert (tmp_path / "f.png").stat().st_size > 1000 and (tmp_path / "f.pdf").exists()
    lines = fig.axes[0].get_lines()
    assert any(line.get_linestyle() == "--" and len(line.get_xdata()) == 4 for line in lines)


def test_the_rate_figure_against_epsilon_has_one_line_per_n(tmp_path):
    table = pd.concat([_power_law(-1.0).assign(epsilon=eps, err=lambda t, e=eps: t["err"] / e ** 2)
                       for eps in (0.1, 0.5, 1.0)])
    fig = plot_rate(table, "err", ylabel="error", out_paths=[tmp_path / "e.png"],
                    against="epsilon")
    solid = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == "-"]
    assert len(solid) == 4  # one per n
    assert all(list(line.get_xdata()) == [0.1, 0.5, 1.0] for line in solid)
