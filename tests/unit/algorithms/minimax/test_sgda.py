"""DP-SGDA over problems with exact answers: the non-private program reaches the empirical
solution, the private one pays the noise its plan declares, and the synthetic-optimization task
measures runs against the exact solutions."""

from __future__ import annotations

import math

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.seeding import make_generator

CPU = torch.device("cpu")


def _fit(name, epsilon, seeds=(0, 1), **params):
    method = get_method(name)
    runs = [RunSpec(seed, epsilon, 1e-5, params) for seed in seeds]
    return method, method.fit(None, runs, CPU)


@pytest.mark.parametrize("problem", ["p1_least_squares", "g1_quadratic_game"])
def test_nonprivate_full_batch_sgda_reaches_the_empirical_solution(problem):
    """Full batches (q = 1), no noise: the averaged iterate of gradient descent-ascent on a
    strongly convex(-concave) empirical objective converges to its exact solution."""
    method, fit = _fit("dp_sgda_nonprivate", math.inf, problem=problem, n=200, batch_size=200,
                       epochs=3000, lr=0.2)
    for r, run in enumerate(fit.runs):
        params = fit.resolved_params[r]
        exact = method.problem(params).empirical_solution(
            method.sample(method.problem(params), run, params, CPU))
        for block, value in exact.items():
            assert float(torch.linalg.vector_norm(fit.state[block][r] - value)) < 5e-3


def test_the_task_reports_exact_gaps_and_distances():
    method, fit = _fit("dp_sgda_nonprivate", math.inf, problem="g1_quadratic_game", n=200,
                       batch_size=200, epochs=3000, lr=0.2)
    rows = method.task.evaluate(fit, None, CPU)
    errors = {"population_strong_gap", "empirical_strong_gap", "distance_x", "distance_y"}
    for row in rows:  # each error beside its trivial baseline's, (x, y) = (0, 0)'s
        assert set(row) == errors | {f"trivial_{e}" for e in errors} | {
            "trivial_output", "gradient_evaluations", "gradient_evaluations_per_sample"}
        assert 0.0 <= row["empirical_strong_gap"] < 1e-4   # at the empirical saddle
        assert row["population_strong_gap"] > row["empirical_strong_gap"]  # sampling error
    _, minimization = _fit("dp_sgda_nonprivate", math.inf, problem="p1_least_squares", n=200,
                           epochs=2)
    rows = method.task.evaluate(minimization, None, CPU)
    errors = {"excess_population_risk", "excess_empirical_risk", "distance_x"}
    assert errors | {f"trivial_{e}" for e in errors} | {
        "trivial_output", "gradient_evaluations", "gradient_evaluations_per_sample"} == set(rows[0])
    assert all(row["excess_empirical_risk"] >= -1e-12 for row in rows)


def test_private_runs_are_worse_at_small_epsilon_and_planned_per_block():
    """The plan releases one clipped gradient per block from the same batch (sensitivity the
    problem's L by default); smaller epsilon, more noise, larger gap (averaged over seeds)."""
    seeds = tuple(range(6))
    gaps = {}
    for epsilon in (0.2, 20.0):
        method, fit = _fit("dp_sgda", epsilon, seeds, problem="g1_quadratic_game", n=400,
                           epochs=5)
        record = fit.accounting[0]
        assert record["epsilon"] <= epsilon
        plan = method.plan(fit.runs[0], 400)
        lipschitz = method.problem(fit.resolved_params[0]).constants.lipschitz
        assert [(r.name, r.sensitivity) for r in plan.releases.releases] == [
            ("gradient_x", lipschitz), ("gradient_y", lipschitz)]
        rows = method.task.evaluate(fit, None, CPU)
        gaps[epsilon] = sum(row["population_strong_gap"] for row in rows) / len(rows)
    assert gaps[0.2] > 2 * gaps[20.0]


def test_each_seed_draws_its_own_sample_and_the_instance_is_shared():
    method = get_method("dp_sgda")
    params = method.resolve({"problem": "g2_bilinear_game", "n": 10})
    problem = method.problem(params)
    assert problem is method.problem(dict(params))   # one instance per (problem, instance)
    first, second = (method.sample(problem, RunSpec(seed, 1.0, 1e-5), params, CPU)
                     for seed in (0, 1))
    assert not torch.equal(first["a"], second["a"])
    again = problem.sample(10, make_generator(0, "data"))
    assert torch.equal(first["a"], again["a"])


def test_counters_are_the_realised_batch_sizes():
    """One gradient evaluation per example of every step's batch; full batches give n T."""
    _, fit = _fit("dp_sgda_nonprivate", math.inf, (0,), problem="g1_quadratic_game", n=50,
                  batch_size=50, epochs=3)
    assert fit.counters == [{"gradient_evaluations": 150, "gradient_evaluations_per_sample": 3}]
    _, fit = _fit("dp_sgda", 1.0, (0, 1), problem="g1_quadratic_game", n=400, epochs=2)
    steps, q = fit.resolved_params[0]["steps"], fit.resolved_params[0]["sampling_rate"]
    for counters in fit.counters:   # Poisson sizes: mean qnT, sd sqrt(qnT)
        assert abs(counters["gradient_evaluations"] - q * 400 * steps) < 5 * math.sqrt(
            q * 400 * steps)


@pytest.mark.parametrize(("schedule", "problem"), [("bassily2019", "p1_least_squares"),
                                                   ("yang2022", "g2_bilinear_game")])
def test_theory_schedules_follow_their_theorems_at_the_target_epsilon(schedule, problem):
    method = get_method("dp_sgda")
    n, eps, delta = 4096, 0.5, 1e-5
    run = RunSpec(0, eps, delta, {"problem": problem, "n": n, "schedule": schedule})
    plan = method.plan(run, n)
    constants = method.problem(method.resolve(run.params)).constants
    dim = sum(block.dim for block in method.problem(method.resolve(run.params)).blocks)
    privacy = math.sqrt(dim * math.log(1 / delta)) / eps
    steps = (math.floor(min(n / 8, n * n / (32 * privacy ** 2))) if schedule == "bassily2019"
             else n)
    lr = constants.diameter / constants.lipschitz * (
        min(4 / math.sqrt(n), 1 / privacy) if schedule == "bassily2019"
        else 1 / max(math.sqrt(n), privacy))
    assert plan.values["steps"] == steps
    assert plan.values["lr"] == pytest.approx(lr)
    assert plan.values["sampling_rate"] == math.ceil(n * math.sqrt(eps / (4 * steps))) / n
    assert plan.releases.count == steps
    assert 0.5 * (1 - 1e-4) <= plan.record["epsilon"] <= 0.5
    # gradient cost T m = O(n^{3/2} sqrt(eps)) (BYOA's Table 1)
    assert steps * plan.values["sampling_rate"] * n <= n ** 1.5 * math.sqrt(eps)


def test_theory_schedules_refuse_what_they_do_not_cover():
    method = get_method("dp_sgda")
    with pytest.raises(ValueError, match="minimization"):
        method.plan(RunSpec(0, 1.0, 1e-5, {"schedule": "bassily2019"}), 1024)
    runs = [RunSpec(0, eps, 1e-5, {"n": 64, "schedule": "yang2022"}) for eps in (0.5, 2.0)]
    with pytest.raises(ValueError, match="one program per epsilon"):
        method.fit(None, runs, CPU)
