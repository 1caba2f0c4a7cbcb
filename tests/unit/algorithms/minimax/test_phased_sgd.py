"""Phased SGD (Feldman, Koren, Talwar 2020, Alg. 2): phases of halving size and quartering step
on disjoint chunks, one release each (sensitivity 2 L eta_i, in parallel at the target epsilon),
clipped SGD steps, linear gradient cost, and the rate of the non-private twin."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax.phased_sgd import sgd_phases
from dpminimax.privacy.release import Parallel, release_counts

CPU = torch.device("cpu")
PROBLEM = "p1_least_squares"


def _fit(name, epsilon, seeds=(0, 1), **params):
    method = get_method(name)
    runs = [RunSpec(seed, epsilon, 1e-5, {"problem": PROBLEM, **params}) for seed in seeds]
    return method, method.fit(None, runs, CPU)


def test_phases_halve_and_use_at_most_n_examples():
    assert sgd_phases(1024).sizes == (512, 256, 128, 64, 32, 16, 8, 4, 2, 1)
    for n in (2, 3, 100, 1000, 1025):
        sizes = sgd_phases(n).sizes
        assert len(sizes) == math.ceil(math.log2(n)) and sum(sizes) <= n


def test_the_plan_releases_each_phase_once_in_parallel_at_the_target_epsilon():
    method = get_method("phased_sgd")
    run = RunSpec(0, 0.5, 1e-5, {"problem": PROBLEM, "n": 256})
    plan = method.plan(run, 256)
    assert isinstance(plan.releases, Parallel)
    assert release_counts(plan.releases) == {f"output_x_{k}": 1 for k in range(1, 9)}
    problem = method.problem(method.resolve(run.params))
    lr, lipschitz = plan.values["lr"], problem.constants.lipschitz
    dim, diameter = problem.blocks[0].dim, problem.constants.diameter
    assert lr == pytest.approx(min(8 / problem.constants.smoothness, diameter / lipschitz * min(
        4 / 16, 0.5 / math.sqrt(dim * math.log(1e5)))))
    assert [part.releases[0].sensitivity for part in plan.releases.parts] == pytest.approx(
        [2 * lipschitz * lr / 4 ** k for k in range(1, 9)])
    assert 0.5 * (1 - 1e-4) <= plan.record["epsilon"] <= 0.5
    with pytest.raises(ValueError, match="min-max"):
        method.plan(RunSpec(0, 0.5, 1e-5, {"problem": "g1_quadratic_game"}), 256)


def test_counters_are_the_phase_sizes():
    _, fit = _fit("phased_sgd", 1.0, n=100)
    assert fit.resolved_params[0]["phases"] == 7
    for counters in fit.counters:
        assert counters == {"gradient_evaluations": sum(sgd_phases(100).sizes),
                            "gradient_evaluations_per_sample": sum(sgd_phases(100).sizes) / 100}


def test_the_nonprivate_twin_reaches_the_statistical_rate():
    """Feldman et al. 2020 Thm. 4.4 without noise: excess population risk O(L D / sqrt(n));
    averaged over 8 seeds it is below L D / sqrt(n) and shrinks from n = 64 to n = 4096."""
    risks = {}
    for n in (64, 4096):
        method, fit = _fit("phased_sgd_nonprivate", math.inf, tuple(range(8)), n=n)
        rows = method.task.evaluate(fit, None, CPU)
        risks[n] = sum(row["excess_population_risk"] for row in rows) / len(rows)
        constants = method.problem(fit.resolved_params[0]).constants
        assert risks[n] <= constants.lipschitz * constants.diameter / math.sqrt(n)
    assert risks[4096] < risks[64] / 2


def _first_phase(name, epsilon, seeds, **params):
    """Every run's release after phase 1 only."""
    method = get_method(name)
    runs = [RunSpec(seed, epsilon, 1e-5, {"problem": PROBLEM, **params}) for seed in seeds]
    resolved, shared, plans = method.plan_runs(None, runs)
    program = method.program(None, runs, resolved, shared, plans, CPU)
    program.step()
    return method, plans, program.state["x"]


def test_the_first_release_carries_the_planned_noise():
    """Same data, same steps: the private phase-1 release minus the twin's is the noise, of
    std sigma x 2 L eta_1 (within 10% over 300 runs, ~4 standard errors)."""
    seeds = tuple(range(300))
    _, plans, private = _first_phase("phased_sgd", 1.0, seeds, n=16, lr=0.01)
    _, _, twin = _first_phase("phased_sgd_nonprivate", math.inf, seeds, n=16, lr=0.01)
    release = plans[0].release("output_x_1")
    rms = float((private - twin).pow(2).mean().sqrt())
    assert rms == pytest.approx(release.noise_multiplier * release.sensitivity, rel=0.1)


def test_sgd_steps_are_clipped_at_the_lipschitz_constant(monkeypatch):
    """With the problem's L replaced by a tiny bound, each of phase 1's n_1 steps moves the
    iterate by at most eta_1 L from 0, so its average is within n_1 eta_1 L of 0."""
    method = get_method("phased_sgd_nonprivate")
    problem = method.problem(method.resolve({"problem": PROBLEM}))
    tiny = dataclasses.replace(problem.constants, lipschitz=1e-4)
    monkeypatch.setattr(type(problem), "constants", property(lambda self: tiny))
    _, plans, state = _first_phase("phased_sgd_nonprivate", math.inf, (0, 1), n=16, lr=0.01)
    bound = 8 * 0.01 / 4 * 1e-4
    assert float(torch.linalg.vector_norm(state, dim=1).max()) <= bound * (1 + 1e-9)
    assert float(torch.linalg.vector_norm(state, dim=1).max()) > bound / 100
