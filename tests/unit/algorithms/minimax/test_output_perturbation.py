"""BYOA Algorithms 1 and 3 with the exact base solver (Secs. 3.1, 4.1): noise off gives the
exact empirical solution, the sigmas of a worked example, the stability
lemmas behind the sensitivities (E0: Lemmas 3.3 and 4.3) on replace-one neighbours, and the
records."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax.output_perturbation import output_sensitivities, paper_multiplier
from dpminimax.problems import Block, Constants, get_problem
from dpminimax.seeding import make_generator

CPU = torch.device("cpu")


@pytest.mark.parametrize("problem", ["p1_least_squares", "g1_quadratic_game"])
def test_noise_off_returns_the_exact_empirical_solution(problem):
    method = get_method("exact_solution")
    runs = [RunSpec(seed, math.inf, 1e-5, {"problem": problem, "n": 300}) for seed in (0, 1)]
    fit = method.fit(None, runs, CPU)
    for r, run in enumerate(runs):
        params = fit.resolved_params[r]
        exact = method.problem(params).empirical_solution(
            method.sample(method.problem(params), run, params, CPU))
        for block, value in exact.items():
            assert float(torch.linalg.vector_norm(fit.state[block][r] - value)) < 1e-8


def _stub(moduli, lipschitz=1.0, maximized=()):
    blocks = tuple(Block(name, 20) for name in moduli)
    return SimpleNamespace(blocks=blocks, maximized=maximized,
                           constants=Constants(lipschitz, 1.0, moduli, 1.0))


def test_the_printed_sigmas_of_the_worked_example():
    """A worked example: Alg. 1 (L = 1, mu = 0.01, n = 2^14, epsilon 0.5, delta 1e-7) sigma = 0.285;
    Alg. 3 (mu_x = 0.05, mu_y = 0.1) sigma_x = 0.116, sigma_y = 0.082."""
    n, target, delta = 2 ** 14, 0.5, 1e-7
    (one,) = output_sensitivities(_stub({"x": 0.01}), n).values()
    assert one * paper_multiplier(1, target, delta) == pytest.approx(0.285, abs=5e-4)
    game = output_sensitivities(_stub({"x": 0.05, "y": 0.1}, maximized=("y",)), n)
    sigma = {k: v * paper_multiplier(2, target, delta) for k, v in game.items()}
    assert sigma["x"] == pytest.approx(0.116, abs=5e-4)
    assert sigma["y"] == pytest.approx(0.082, abs=5e-4)


def _neighbours(problem, n, seed):
    """A sample and the same sample with its first example replaced by a fresh one."""
    sample = problem.sample(n, make_generator(seed, "data"))
    fresh = problem.sample(1, make_generator(seed, "fresh"))
    return sample, {k: torch.cat([fresh[k], v[1:]]) for k, v in sample.items()}


@pytest.mark.parametrize("seed", range(5))
def test_stability_lemmas_hold_on_replace_one_neighbours(seed):
    """Lemma 3.3: ||x_S - x_S'|| <= 2L / (mu n); Lemma 4.3: mu_x |dx|^2 + mu_y |dy|^2 <=
    4 L^2 / (mu n^2). These are what the sensitivities 4L / (mu n) and (4L / n) / sqrt(mu_b mu)
    rest on (with the exact solver, the solver radius is spent on nothing)."""
    n = 200
    p1 = get_problem("p1_least_squares", seed=seed)
    a, b = (p1.empirical_solution(s)["x"] for s in _neighbours(p1, n, seed))
    c = p1.constants
    assert float(torch.linalg.vector_norm(a - b)) <= 2 * c.lipschitz / (c.strong_convexity["x"] * n)
    g1 = get_problem("g1_quadratic_game", seed=seed)
    first, second = (g1.empirical_solution(s) for s in _neighbours(g1, n, seed))
    moduli, lipschitz = g1.constants.strong_convexity, g1.constants.lipschitz
    moved = sum(moduli[k] * float(torch.linalg.vector_norm(first[k] - second[k])) ** 2
                for k in first)
    assert moved <= 4 * lipschitz ** 2 / (min(moduli.values()) * n ** 2)


@pytest.mark.parametrize("sigma", ["paper", "calibrated"])
def test_records_keep_half_of_delta_for_the_solver_and_meet_the_target(sigma):
    method = get_method("output_perturbation")
    run = RunSpec(0, 0.5, 1e-6, {"problem": "g1_quadratic_game", "sigma": sigma})
    plan = method.plan(run, 4096)
    record = plan.record
    assert record["delta"] == 1e-6 and record["delta_mechanism"] == 5e-7
    assert record["neighboring_relation"] == "replace_one"
    assert record["epsilon"] <= 0.5 and record["guarantee_covered"]
    names = [r.name for r in plan.releases.releases]
    assert names == ["output_x", "output_y"]


def test_calibrated_noise_is_below_the_printed_noise():
    """The printed sigma spends each block at (epsilon/2, delta/4) with the classical Gaussian
    bound; our accountant composes the two releases exactly."""
    method = get_method("output_perturbation")
    multipliers = {sigma: method.plan(RunSpec(0, 0.5, 1e-6, {"sigma": sigma}), 4096)
                   .values["noise_multiplier"] for sigma in ("paper", "calibrated")}
    assert multipliers["calibrated"] < 0.6 * multipliers["paper"]


def test_a_merely_convex_problem_is_refused():
    method = get_method("output_perturbation")
    with pytest.raises(ValueError, match="strongly convex"):
        method.plan(RunSpec(0, 1.0, 1e-5, {"problem": "g2_bilinear_game"}), 1000)


@pytest.mark.parametrize("problem", ["p1_least_squares", "g1_quadratic_game"])
def test_the_released_outputs_carry_the_planned_noise(problem):
    """End to end: over 100 seeds, (output - exact empirical solution) / (multiplier x
    sensitivity) has unit rms, per block (a noise scaled down anywhere after the release, or
    not added, fails this)."""
    method, n = get_method("output_perturbation"), 200
    runs = [RunSpec(seed, 2.0, 1e-5, {"problem": problem, "n": n}) for seed in range(100)]
    fit = method.fit(None, runs, CPU)
    params = fit.resolved_params[0]
    scale = {name: fit.resolved_params[0]["noise_multiplier"] * sensitivity for name, sensitivity
             in output_sensitivities(method.problem(params), n).items()}
    for block, std in scale.items():
        noise = torch.stack([
            fit.state[block][r] - method.problem(params).empirical_solution(
                method.sample(method.problem(params), run, params, CPU))[block]
            for r, run in enumerate(runs)]) / std
        rms = float(noise.pow(2).mean().sqrt())
        assert abs(math.log(rms)) < 4.0 / math.sqrt(2 * noise.numel()) + 0.01, (block, rms)


@pytest.mark.parametrize(("problem", "solver"), [("p1_least_squares", "svrg"),
                                                 ("p1_least_squares", "agd"),
                                                 ("g1_quadratic_game", "pb_svrg"),
                                                 ("g1_quadratic_game", "extragradient")])
def test_an_iterative_solver_is_within_the_radius_of_the_exact_solution(problem, solver):
    """Noise off: each run's output meets Alg. 1 line 1 (||A(S) - x*|| <= L / (mu n)) or Alg.
    3's (3) (sum_b mu_b ||A_b(S) - z*_b||^2 <= L^2 / (mu n^2)) against the exact empirical
    solution, and its gradient evaluations are recorded in its metric row."""
    method, n = get_method("exact_solution"), 512
    runs = [RunSpec(seed, math.inf, 1e-5, {"problem": problem, "n": n, "solver": solver})
            for seed in (0, 1)]
    fit = method.fit(None, runs, CPU)
    rows = method.task.evaluate(fit, None, CPU)
    params = fit.resolved_params[0]
    instance = method.problem(params)
    constants = instance.constants
    moduli = constants.strong_convexity
    for r, run in enumerate(runs):
        exact = instance.empirical_solution(method.sample(instance, run, params, CPU))
        if instance.maximized:
            moved = sum(moduli[b] * float((fit.state[b][r] - exact[b]).square().sum())
                        for b in exact)
            assert moved <= constants.lipschitz ** 2 / (min(moduli.values()) * n ** 2)
        else:
            moved = float(torch.linalg.vector_norm(fit.state["x"][r] - exact["x"]))
            assert moved <= constants.lipschitz / (moduli["x"] * n)
        assert rows[r]["gradient_evaluations"] > n
        assert rows[r]["gradient_evaluations_per_sample"] == rows[r]["gradient_evaluations"] / n


def test_the_solver_changes_neither_the_plan_nor_the_noise():
    """The certificate makes the accuracy condition hold with probability 1: the same plan
    and, run by run, the same noise on top of a point within the radius; the exact solver
    records no gradient count."""
    method = get_method("output_perturbation")
    fits, plans = {}, {}
    for solver in ("exact", "gd"):
        runs = [RunSpec(seed, 0.5, 1e-6, {"problem": "p1_least_squares", "n": 256,
                                          "solver": solver}) for seed in (0, 1)]
        plans[solver] = [method.plan(run, 256).record for run in runs]
        fits[solver] = method.fit(None, runs, CPU)
    assert plans["exact"] == plans["gd"]
    assert [set(c) for c in fits["exact"].counters] == [{"release_outside_ball"}] * 2
    assert all(c["gradient_evaluations"] > 0 for c in fits["gd"].counters)
    radius = method.problem(fits["gd"].resolved_params[0]).constants.lipschitz / (0.1 * 256)
    moved = torch.linalg.vector_norm(fits["gd"].state["x"] - fits["exact"].state["x"], dim=-1)
    assert float(moved.max()) <= radius


def test_a_minimizing_solver_is_refused_on_a_min_max_problem():
    with pytest.raises(ValueError, match="minimizes"):
        get_method("output_perturbation").plan(
            RunSpec(0, 1.0, 1e-5, {"problem": "g1_quadratic_game", "solver": "svrg"}), 1000)


# --- the direct method (baselines B1 / B9): Alg. 1 / 3 on the objective plus a ridge ---------

@pytest.mark.parametrize(("problem", "blocks"), [("p1_convex_least_squares", ("x",)),
                                                 ("g2_bilinear_game", ("x", "y"))])
def test_ridge_releases_the_ridged_solution_with_the_ridged_sensitivity(problem, blocks):
    """Over 100 seeds: the output minus the exact solution of the empirical objective plus
    ridge / 2 ||x||^2 (minus ridge / 2 ||y||^2), over multiplier x 4 (L + ridge sqrt(sum R^2))
    / ((mu + ridge) n) (Alg. 1; Alg. 3's form on a game), has unit rms per block."""
    method, n = get_method("ridge_output_perturbation"), 200
    runs = [RunSpec(seed, 2.0, 1e-5, {"problem": problem, "n": n}) for seed in range(100)]
    fit = method.fit(None, runs, CPU)
    params = fit.resolved_params[0]
    game = method.problem(params)
    ridge = params["ridge"]
    radii = [block.radius for block in game.blocks]
    lipschitz = game.constants.lipschitz + ridge * math.sqrt(sum(r * r for r in radii))
    moduli = {b: game.constants.strong_convexity[b] + ridge for b in blocks}
    expected = {b: 4.0 * lipschitz / n * (1.0 / moduli[b] if len(blocks) == 1 else
                                          math.sqrt(1.0 / (moduli[b] * min(moduli.values()))))
                for b in blocks}
    prox = ({b: torch.zeros(game.block(b).dim, dtype=game.dtype) for b in blocks},
            dict.fromkeys(blocks, ridge))
    for block in blocks:
        std = params["noise_multiplier"] * expected[block]
        noise = torch.stack([
            fit.state[block][r] - game.empirical_solution(
                method.sample(game, run, params, CPU), prox)[block]
            for r, run in enumerate(runs)]) / std
        rms = float(noise.pow(2).mean().sqrt())
        assert abs(math.log(rms)) < 4.0 / math.sqrt(2 * noise.numel()) + 0.01, (block, rms)


def test_the_balanced_ridge_shrinks_with_n_and_needs_bounded_blocks():
    from dpminimax.algorithms.minimax.output_perturbation import balanced_ridge

    problem = get_problem("p1_convex_least_squares", seed=0)
    ridges = [balanced_ridge(problem, n, 0.5, 1e-7) for n in (256, 4096, 65536)]
    assert ridges[0] > ridges[1] > ridges[2] > 0
    method = get_method("ridge_output_perturbation")
    with pytest.raises(ValueError, match="bounded blocks"):
        method.plan(RunSpec(0, 0.5, 1e-7, {"problem": "p2_logistic"}), 1000)


def test_markov_stopping_audits_every_solver_call():
    """E9: with Markov stopping (no certificate) every run reports its solver
    calls and how many missed the accuracy condition; at these deltas none does (the bound is
    delta / 4 per call). The certificate's runs report no audit; solvers without an a-priori
    rate are refused at planning."""
    for name, problem, solver, calls in (
            ("output_perturbation", "p1_least_squares", "gd", 1),
            ("phased_output_perturbation", "p1_convex_least_squares", "gd", 8),
            ("phased_minimax_output_perturbation", "g2_bilinear_game", "extragradient", 16)):
        method = get_method(name)
        runs = [RunSpec(seed, 0.5, 1e-6, {"problem": problem, "n": 256, "solver": solver,
                                          "stopping": "markov"}) for seed in range(3)]
        fit = method.fit(None, runs, CPU)
        rows = method.task.evaluate(fit, None, CPU)
        assert [(row["accuracy_violations"], row["solver_calls"]) for row in rows] == [
            (0, calls)] * 3, name
        allowed = 1e-6 / 8 if "minimax" in name else 1e-6 / 4
        assert all(row["allowed_miss_rate"] == pytest.approx(allowed) for row in rows), name
        assert all(row["gradient_evaluations"] > 0 for row in rows)
        certified = method.fit(None, [RunSpec(0, 0.5, 1e-6, {
            "problem": problem, "n": 256, "solver": solver})], CPU)
        assert "accuracy_violations" not in method.task.evaluate(certified, None,
                                                                 CPU)[0]
    with pytest.raises(ValueError, match="a-priori rate"):
        get_method("output_perturbation").plan(RunSpec(0, 0.5, 1e-6, {
            "problem": "p1_least_squares", "solver": "svrg", "stopping": "markov"}), 256)
