"""DP bilevel's theory schedule (Thm. 4.1's lambda and T), A1-GD (ablation: DP-Loc-GD, M = 1)
and the d_x / d_y experiments (rate vs d): the schedule's lambda and T at two (n, epsilon),
raised to lambda_min (A5), the privacy plan calibrated to and repeating the scheduled T, the
program stepping T times; A1-GD's inner solver and its plan; the new experiments expanding at
every scale and their figures drawing against d_x / d_y."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.bilevel.dp_bilevel import C_LAM, C_T, paper_epsilon, zcdp_budget
from dpminimax.experiments import expand_jobs, load_experiments
from dpminimax.privacy.release import release_counts
from dpminimax.report.registry import FIGURES, TABLES, FigureRequest

CPU = torch.device("cpu")
DELTA = 1e-5
THEORY = {"schedule": "theory", "d_x": 2, "d_y": 16}
EXPERIMENTS = Path(__file__).parents[4] / "papers" / "bilevel" / "experiments.yaml"


def _plan(name: str, epsilon: float, n: int, **params):
    method = get_method(name)
    return method, method.plan(RunSpec(0, epsilon, DELTA, {**THEORY, "n": n, **params}), n)


@pytest.mark.parametrize(("n", "epsilon", "lam", "steps"),
                         [(10000, 1.0, 5.36, 4), (16384, 8.0, 12.64, 20)])
def test_the_theory_schedule_scales_lambda_and_t_with_epsilon_n(n, epsilon, lam, steps):
    """lambda = c_lam s^(1/3), T = ceil(c_T s^(2/3)), s = epsilon n / sqrt(d_y) (d_y = 16);
    the pilot's frozen multipliers (e3_pilot) give lambda 5.36 and T 4 at its n = 10^4,
    epsilon = 1."""
    scale = epsilon * n / 4.0
    _, plan = _plan("dp_bilevel", epsilon, n)
    assert plan.values["lam"] == pytest.approx(C_LAM * scale ** (1 / 3)) == pytest.approx(
        lam, abs=0.01)
    assert plan.values["outer_steps"] == math.ceil(C_T * scale ** (2 / 3)) == steps
    assert plan.values["lam_raised"] is False


def test_the_schedule_respects_lambda_min():
    """At epsilon n / sqrt(d_y) = 128 the schedule's lambda (1.99) is below P-A's smallest
    allowed penalty (A5): the plan raises it and says so; a fixed lambda below it is refused."""
    _, plan = _plan("dp_bilevel", 0.5, 1024)
    assert C_LAM * 128 ** (1 / 3) < plan.values["lambda_min"]
    assert plan.values["lam"] == plan.values["lambda_min"] and plan.values["lam_raised"]
    with pytest.raises(ValueError, match="below the smallest penalty"):
        _plan("dp_bilevel", 0.5, 1024, schedule="fixed", lam=1.0)


@pytest.mark.parametrize("n", [1024, 16384])  # T below and above the fixed outer_steps 100
def test_the_plan_is_calibrated_to_the_scheduled_t(n):
    """Every mechanism is made T times (the scheduled T, not outer_steps), each costs
    rho* / (3 T) (the outer release's noise multiplier 1 / sqrt(2 rho* / (3 T))), and the
    accountant's epsilon meets the target."""
    target = 2.0
    _, plan = _plan("dp_bilevel", target, n, outer_steps=100)
    steps = plan.values["outer_steps"]
    assert steps != 100
    counts = release_counts(plan.releases)
    assert counts == {"inner_y": steps, "inner_y_lambda": steps, "outer": steps}
    rho = zcdp_budget(target, DELTA) / (3 * steps)
    assert plan.values["rho_per_mechanism"] == pytest.approx(rho)
    assert plan.release("outer").noise_multiplier == pytest.approx(1 / math.sqrt(2 * rho))
    assert plan.record["epsilon"] <= target and plan.record["guarantee_covered"]
    assert plan.record["epsilon_paper_accounting"] == pytest.approx(
        paper_epsilon(target, DELTA, steps))


def test_the_program_steps_the_scheduled_t_and_records_lambda():
    method = get_method("dp_bilevel")
    run = RunSpec(0, 1.0, DELTA, {"schedule": "theory", "n": 400, "d_x": 2, "d_y": 4})
    steps = math.ceil(C_T * 200 ** (2 / 3))
    calls = []
    fit = method.fit(None, [run], CPU, monitor=lambda step, model, state: calls.append(step))
    assert calls == list(range(1, steps + 1))
    (params,) = fit.resolved_params
    assert params["outer_steps"] == steps
    assert params["lam"] == pytest.approx(max(C_LAM * 200 ** (1 / 3), params["lambda_min"]))


def test_runs_of_one_program_must_share_the_scheduled_t():
    method = get_method("dp_bilevel")
    runs = [RunSpec(0, eps, DELTA, {"schedule": "theory", "n": 400, "d_x": 2, "d_y": 4})
            for eps in (1.0, 4.0)]
    with pytest.raises(ValueError, match="share the outer step count"):
        method.fit(None, runs, CPU)


def test_the_nonprivate_twins_take_the_schedule_at_epsilon_one():
    for name in ("np_pen", "np_aid"):
        _, plan = _plan(name, math.inf, 4096)
        _, at_one = _plan("dp_bilevel", 1.0, 4096)
        assert (plan.values["lam"], plan.values["outer_steps"]) == (
            at_one.values["lam"], at_one.values["outer_steps"])


def test_a1_gd_is_loc_gd_with_one_round():
    """Where A8 gives some subproblem M > 1 rounds (A1-LocGD), A1-GD runs one, projected onto
    the first radius R_0 throughout; its plan meets the target."""
    params = {"n": 300, "outer_steps": 2, "inner_steps": 20, "d_x": 1, "d_y": 2}
    run = RunSpec(0, 1.0, DELTA, params)
    gd, loc = get_method("dp_bilevel_gd"), get_method("dp_bilevel_locgd")
    assert gd.resolve(params)["inner"] == loc.resolve(params)["inner"] == "loc_gd"
    localized, plan = loc.plan(run, 300).values, gd.plan(run, 300)
    assert max(localized[f"loc_gd_rounds_{key}"] for key in ("y", "y_lambda")) > 1
    assert plan.values["loc_gd_rounds_y"] == plan.values["loc_gd_rounds_y_lambda"] == 1
    assert plan.record["epsilon"] <= 1.0 and plan.record["guarantee_covered"]
    fit = gd.fit(None, [run], CPU)
    assert torch.isfinite(fit.state["x"]).all()


@pytest.mark.parametrize("scale", ["smoke", "default", "quick", "paper"])
def test_the_dimension_experiments_expand_at_every_scale(scale):
    jobs = {job.experiment: job for job in expand_jobs(load_experiments(EXPERIMENTS), scale)}
    for experiment, swept, fixed in (("e3_dx", "d_x", "d_y"), ("e3_dy", "d_y", "d_x")):
        job = jobs[experiment]
        assert (job.method, str(job.epsilon), job.params["n"]) == ("dp_bilevel", "2", 16384)
        assert job.params["schedule"] == "theory" and isinstance(job.params[fixed], int)
        assert len(job.params[swept]) == (2 if scale == "smoke" else
                                          4 if swept == "d_x" else 3)
        # one start gradient across the sweep: ||grad F_P(x0)|| is held, not redrawn per d
        method = get_method(job.method)
        starts = []
        for value in job.params[swept]:
            problem = method.problem(method.resolve({**job.params, swept: value}))
            x0 = torch.zeros(1, problem.x.dim, dtype=problem.dtype)
            starts.append(float(torch.linalg.vector_norm(
                problem.hypergradient(x0, problem.population_statistics()))))
        assert job.params["start_gradient"] > 0
        assert starts == pytest.approx([job.params["start_gradient"]] * len(starts), rel=0.01)


@pytest.mark.parametrize("axis", ["d_x", "d_y"])
def test_the_dimension_figure_and_table_read_the_swept_parameter(tmp_path, axis):
    """A planted slope 1/4 in p_d_x (p_d_y): one panel per n, the fitted slope, the predicted
    slope beside it."""
    rng = np.random.default_rng(0)
    dims = (2, 4, 16, 64)
    table = pd.DataFrame([{"dataset": "pa_linear_response", "method": "dp_bilevel",
                           "epsilon": 2.0, "seed": seed, "p_n": 16384, f"p_{axis}": d,
                           "gradient_mapping_norm": 0.1 * d ** 0.25 * rng.lognormal(0, 0.05)}
                          for d in dims for seed in range(10)])
    short = axis.replace("_", "")
    fig = FIGURES[f"gradient_mapping_vs_{short}"](table, FigureRequest(
        out_paths=[tmp_path / "f.png"]))
    (ax,) = [ax for ax in fig.axes if ax.get_title()]
    assert ax.get_xlabel() == f"Dimension {axis}" and ax.get_title().endswith("n = 16384")
    (row,) = TABLES[f"slopes_gradient_mapping_vs_{short}"](table).to_dict(orient="records")
    assert row["slope"] == pytest.approx(0.25, abs=0.03)
    assert (row[f"{axis}_min"], row[f"{axis}_max"]) == (2, 64)
    predicted = {"d_x": ("upper_term", 0.25), "d_y": ("lower_term", 1 / 6)}[axis]
    assert row[f"predicted_slope_{predicted[0]}"] == pytest.approx(predicted[1])
