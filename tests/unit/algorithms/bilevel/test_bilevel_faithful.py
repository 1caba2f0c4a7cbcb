"""E3' (the faithfulness subset): A1-LocGD with ``inner_steps: 0`` runs our reduced inner count
T_GD = max{100, ceil(2 n^2 rho_in (1 + ln n) / (M d_y))} (pinned at one (n, epsilon, T)), the
program makes that many steps per round, the experiment expands at every scale, and the rate
figure and slope table keep the (d_x, d_y) pairs of one method and epsilon apart."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import dpminimax.algorithms.bilevel.dp_bilevel as dp_bilevel
from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.bilevel.dp_bilevel import zcdp_budget
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.report.registry import FIGURES, TABLES, FigureRequest

CPU = torch.device("cpu")
DELTA = 1e-5
EXPERIMENTS = Path(__file__).parents[4] / "papers" / "bilevel" / "experiments.yaml"


def _faithful_steps(n: int, epsilon: float, outer_steps: int, rounds: int, d_y: int) -> int:
    """Our reduced inner count with the zCDP share rho_in = rho* / (3 T)."""
    rho_in = zcdp_budget(epsilon, DELTA) / (3 * outer_steps)
    return max(100, math.ceil(2 * n * n * rho_in * (1 + math.log(n)) / (rounds * d_y)))


def test_inner_steps_zero_plans_section_2_7d_count():
    """n = 1024, epsilon 1, T = 2, d_y = 16: M = 2 rounds of 1,804 steps for both subproblems
    (100 where ``inner_steps: 100`` asks for E2's count)."""
    method = get_method("dp_bilevel_locgd")
    params = {"n": 1024, "outer_steps": 2, "d_x": 4, "d_y": 16}
    faithful = method.plan(RunSpec(0, 1.0, DELTA, {**params, "inner_steps": 0}), 1024).values
    for name in ("y", "y_lambda"):
        assert faithful[f"loc_gd_rounds_{name}"] == 2
        assert faithful[f"loc_gd_steps_{name}"] == 1804 == _faithful_steps(1024, 1.0, 2, 2, 16)
    fixed = method.plan(RunSpec(0, 1.0, DELTA, {**params, "inner_steps": 100}), 1024).values
    assert fixed["loc_gd_steps_y"] == fixed["loc_gd_steps_y_lambda"] == 100


def test_the_program_steps_the_planned_count(monkeypatch):
    """Every DP-Loc-GD call of the program runs the plan's T_GD steps in each of its M rounds."""
    calls = []

    def spy(*args, **kwargs):
        calls.append((args[4], args[3].shape[1]))  # steps, rounds
        return dp_bilevel_loc_gd(*args, **kwargs)

    dp_bilevel_loc_gd = dp_bilevel.loc_gd
    monkeypatch.setattr(dp_bilevel, "loc_gd", spy)
    method = get_method("dp_bilevel_locgd")
    run = RunSpec(0, 1.0, DELTA, {"n": 300, "outer_steps": 2, "inner_steps": 0, "d_x": 1,
                                  "d_y": 2})
    values = method.plan(run, 300).values
    planned = [(values[f"loc_gd_steps_{name}"], values[f"loc_gd_rounds_{name}"])
               for name in ("y", "y_lambda")]
    method.fit(None, [run], CPU)
    assert calls == planned * 2
    assert planned[0][0] == _faithful_steps(300, 1.0, 2, planned[0][1], 2) > 100


@pytest.mark.parametrize("scale", ["smoke", "default", "quick", "paper"])
def test_e3_faithful_expands_at_every_scale(scale):
    """A1-LocGD at the faithful count beside A1-OP on the same grid; default: P-A's (4, 16)."""
    jobs = [job for job in expand_jobs(load_experiments(EXPERIMENTS), scale)
            if job.experiment == "e3_faithful"]
    assert {job.method for job in jobs} == {"dp_bilevel_locgd", "dp_bilevel"}
    for job in jobs:
        assert job.params["outer_steps"] == (100 if scale == "paper" else 2)
        if job.method == "dp_bilevel_locgd":
            assert job.params["inner_steps"] == 0
    if scale == "default":
        assert {str(job.epsilon) for job in jobs} == {"4"}
        assert all((job.params["d_x"], job.params["d_y"]) == (4, 16) for job in jobs)


def test_rate_figure_and_slopes_keep_dimension_pairs_apart(tmp_path):
    """Planted inner errors 1 / n at (4, 16) and 2 / n at (1, 64): one series and one slope row
    per pair (the pairs are a variant of the method), each slope -1."""
    rng = np.random.default_rng(0)
    table = pd.DataFrame([{"dataset": "pa_linear_response", "method": "dp_bilevel_locgd",
                           "epsilon": 4.0, "seed": seed, "p_n": n, "p_d_x": d_x, "p_d_y": d_y,
                           "inner_error_max": level / n * rng.lognormal(0, 0.05)}
                          for d_x, d_y, level in ((4, 16, 1.0), (1, 64, 2.0))
                          for n in (256, 512, 1024) for seed in range(5)])
    slopes = TABLES["slopes_inner_error"](table)
    assert sorted(slopes["method"]) == ["dp_bilevel_locgd [d_x=1,d_y=64]",
                                        "dp_bilevel_locgd [d_x=4,d_y=16]"]
    assert slopes["slope"].to_numpy() == pytest.approx([-1.0, -1.0], abs=0.05)
    fig = FIGURES["inner_error_vs_n"](table, FigureRequest(out_paths=[tmp_path / "f.png"]))
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert sum("d_x=4,d_y=16" in label for label in labels) == 1
    assert sum("d_x=1,d_y=64" in label for label in labels) == 1
