"""BYOA Algorithm 2 (Sec. 3.2) with the exact base solver: a worked example's mu and
sigmas, parallel composition of the phases, and the noise-off program against the
phases written out."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax.phased_output_perturbation import phase_schedule
from dpminimax.algorithms.problem_method import ProblemMethod
from dpminimax.privacy import epsilon
from dpminimax.privacy.release import Batch, Parallel, Release, releases_of
from dpminimax.problems import Block, Constants

CPU = torch.device("cpu")


def test_the_worked_example(monkeypatch):
    """L = D = 1, d = 20, n = 2^16, epsilon 0.5, delta 1e-6: mu = 0.1173, phase 1
    mu_1 = 0.2347 and sigma_1 = 0.0452, phase 16 sigma_16 = 1.38e-6."""
    stub = SimpleNamespace(blocks=(Block("x", 20),), maximized=(),
                           constants=Constants(1.0, 1.0, {"x": 0.0}, 1.0))
    monkeypatch.setattr(ProblemMethod, "problem", staticmethod(lambda params: stub))
    plan = get_method("phased_output_perturbation").plan(RunSpec(0, 0.5, 1e-6), 2 ** 16)
    assert plan.values["phases"] == 16 and plan.values["chunk"] == 4096
    assert plan.values["mu"] == pytest.approx(0.1173, abs=1e-4)
    sigmas = [r.noise_multiplier * r.sensitivity for r in releases_of(plan.releases)]
    assert len(sigmas) == 16
    assert sigmas[0] == pytest.approx(0.0452, abs=1e-4)
    assert sigmas[-1] == pytest.approx(1.38e-6, rel=1e-2)


def test_phases_compose_in_parallel():
    """The run's event is one phase's (every phase spends the full budget); its epsilon at
    delta / 2 is within the target."""
    method = get_method("phased_output_perturbation")
    plan = method.plan(RunSpec(0, 0.5, 1e-6, {"sigma": "calibrated"}), 1024)
    assert isinstance(plan.releases, Parallel) and len(plan.releases.parts) == 10
    assert plan.record["epsilon"] <= 0.5
    one_phase = plan.releases.parts[0].event()
    assert epsilon(one_phase, 5e-7, "pld") == pytest.approx(plan.record["epsilon"])
    different = Parallel((Batch((Release("a", "gaussian", 1.0, 1.0),)),
                          Batch((Release("b", "gaussian", 2.0, 1.0),))))
    with pytest.raises(ValueError, match="different events"):
        different.event()


def test_noise_off_program_is_the_phases_written_out():
    method = get_method("phased_exact")
    run = RunSpec(3, math.inf, 1e-5, {"n": 256})
    fit = method.fit(None, [run], CPU)
    params = fit.resolved_params[0]
    problem = method.problem(params)
    sample = method.sample(problem, run, params, CPU)
    assert (params["phases"], params["chunk"]) == (8, 32)
    assert params["mu"] == pytest.approx(problem.constants.lipschitz
                                         / problem.constants.diameter / 16.0)
    x = torch.zeros(problem.blocks[0].dim, dtype=problem.dtype)
    for k in range(1, 9):
        chunk = {key: value[(k - 1) * 32:k * 32] for key, value in sample.items()}
        x = problem.empirical_solution(chunk, prox=({"x": x}, {"x": params["mu"] * 2 ** k}))["x"]
    torch.testing.assert_close(fit.state["x"][0], x, rtol=0, atol=1e-12)


def test_the_private_error_falls_with_n():
    """Theorem 3.7's regime at epsilon 1: the printed mu is dominated by its privacy term
    (worked example), so at n = 2^14 the excess population risk is still about 0.6 of the trivial
    x = 0's; at n = 2^17 it is below 0.1 of it, and smaller than at 2^14 for every seed."""
    method = get_method("phased_output_perturbation")
    risks = {}
    for n in (2 ** 14, 2 ** 17):
        runs = [RunSpec(seed, 1.0, 1e-6, {"n": n}) for seed in range(4)]
        fit = method.fit(None, runs, CPU)
        risks[n] = [row["excess_population_risk"]
                    for row in method.task.evaluate(fit, None, CPU)]
    zero = float(method.problem(fit.resolved_params[0]).excess_risk(
        {"x": torch.zeros(1, 10, dtype=torch.float64)})[0])
    assert max(risks[2 ** 17]) < 0.1 * zero
    assert all(large < small for large, small in zip(risks[2 ** 17], risks[2 ** 14],
                                                     strict=True))


def test_min_max_problems_are_refused():
    with pytest.raises(ValueError, match="min-max"):
        get_method("phased_output_perturbation").plan(
            RunSpec(0, 1.0, 1e-5, {"problem": "g1_quadratic_game"}), 1024)


@pytest.mark.parametrize("solver", ["svrg", "agd", "extragradient"])
def test_each_phase_is_within_its_radius_of_the_exact_phase_solution(solver):
    """Noise off: every phase's point is within L / (mu_k nbar) of the exact solution of that
    phase's subproblem (its chunk, centred at the previous phase's point), and the run's
    gradient evaluations are the sum over the phases."""
    method = get_method("phased_exact")
    run = RunSpec(3, math.inf, 1e-5, {"n": 256, "solver": solver})
    states = []
    fit = method.fit(None, [run], CPU, monitor=lambda step, model, state: states.append(
        state["x"][0].clone()))
    params = fit.resolved_params[0]
    problem = method.problem(params)
    sample = method.sample(problem, run, params, CPU)
    chunk, lipschitz = params["chunk"], problem.constants.lipschitz
    previous = torch.zeros(problem.blocks[0].dim, dtype=problem.dtype)
    for k, state in enumerate(states, start=1):
        rows = {key: value[(k - 1) * chunk:k * chunk] for key, value in sample.items()}
        modulus = params["mu"] * 2 ** k
        exact = problem.empirical_solution(rows, prox=({"x": previous}, {"x": modulus}))["x"]
        assert float(torch.linalg.vector_norm(state - exact)) <= lipschitz / (modulus * chunk)
        previous = state
    (row,) = method.task.evaluate(fit, None, CPU)
    assert row["gradient_evaluations"] >= len(states) * chunk
    assert row["gradient_evaluations_per_sample"] == row["gradient_evaluations"] / 256


def test_phase_schedules_of_the_ablations():
    """E10: floor vs ceil of log2 n (the same on a power of 2), and Feldman et
    al.'s phased-ERM schedule: n_k = floor(n 2^-k), mu_k = mu 8^k, chunks disjoint."""
    assert phase_schedule(3000).sizes == (272,) * 11
    assert phase_schedule(3000, "ceil").sizes == (250,) * 12
    assert phase_schedule(1024, "ceil") == phase_schedule(1024)
    erm = phase_schedule(1024, schedule="phased_erm")
    assert erm.sizes == (512, 256, 128, 64, 32, 16, 8, 4, 2, 1)
    assert erm.modulus(0.5, 3) == pytest.approx(0.5 * 8 ** 3)
    assert [erm.rows(k) for k in (1, 2, 10)] == [slice(0, 512), slice(512, 768),
                                                 slice(1022, 1023)]


def test_phased_erm_sensitivities_use_each_phase_size():
    """B4's phase k releases with sensitivity 4L / (mu 8^k n_k) and the run meets its budget."""
    method = get_method("phased_output_perturbation")
    plan = method.plan(RunSpec(0, 0.5, 1e-6, {"schedule": "phased_erm",
                                              "sigma": "calibrated"}), 1024)
    params = method.resolve({"schedule": "phased_erm", "n": 1024})
    lipschitz, mu = method.problem(params).constants.lipschitz, plan.values["mu"]
    sensitivities = [r.sensitivity for r in releases_of(plan.releases)]
    assert sensitivities == pytest.approx(
        [4 * lipschitz / (mu * 8 ** k * (1024 >> k)) for k in range(1, 11)], rel=1e-12)
    assert plan.record["epsilon"] <= 0.5


@pytest.mark.parametrize("options", [{"schedule": "phased_erm"}, {"rounding": "ceil", "n": 300},
                                     {"project": True}])
def test_noise_off_ablations_are_their_phases_written_out(options):
    """Noise off, exact solver: each ablation's program is its schedule's phases written out
    (the projection is the identity on noiseless, feasible phase solutions)."""
    method = get_method("phased_exact")
    run = RunSpec(3, math.inf, 1e-5, {"n": 256, **options})
    fit = method.fit(None, [run], CPU)
    params = fit.resolved_params[0]
    problem = method.problem(params)
    sample = method.sample(problem, run, params, CPU)
    schedule = phase_schedule(params["n"], params["rounding"], params["schedule"])
    x = torch.zeros(problem.blocks[0].dim, dtype=problem.dtype)
    for k in range(1, schedule.phases + 1):
        rows = {key: value[schedule.rows(k)] for key, value in sample.items()}
        x = problem.empirical_solution(rows, prox=({"x": x}, {
            "x": schedule.modulus(params["mu"], k)}))["x"]
    torch.testing.assert_close(fit.state["x"][0], x, rtol=0, atol=1e-12)


def test_projected_releases_stay_on_the_ball(monkeypatch):
    """``project``: every release is projected onto X (post-processing); the literal algorithm
    releases off the ball when the noise takes it there (planted here: a shift of 10 per
    coordinate). The plan, hence epsilon, does not depend on it."""
    from dpminimax.privacy.release import BatchedRelease

    perturb = BatchedRelease.perturb
    monkeypatch.setattr(BatchedRelease, "perturb",
                        lambda self, values, streams: perturb(self, values, streams) + 10.0)
    method = get_method("phased_output_perturbation")
    base = {"n": 256, "problem": "p1_convex_least_squares"}
    radius = method.problem(method.resolve(base)).blocks[0].radius
    norms = {}
    for project in (False, True):
        run = RunSpec(0, 0.5, 1e-6, {**base, "project": project})
        norms[project] = []
        method.fit(None, [run], CPU, monitor=lambda step, model, state, into=norms[project]:
                   into.append(float(torch.linalg.vector_norm(state["x"][0]))))
        assert method.plan(run, 256).record == method.plan(RunSpec(0, 0.5, 1e-6, base),
                                                           256).record
    assert min(norms[False]) > radius
    assert max(norms[True]) <= radius * (1 + 1e-12)
