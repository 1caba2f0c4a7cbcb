"""BYOA Algorithms 4 o 5 (Sec. 4.2, Theorem 4.8) and the C-SC variant of Alg. 4 (Sec. 4.3,
Corollary 4.9) with the exact base solver: a worked example's mu and sigmas, the
composition of the two algorithms' releases, the noise-off programs against the phases written
out, convergence without noise, the noise actually released, the stability lemma behind the
sensitivities (Lemma 4.5) and G4's exact answers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.minimax.output_perturbation import output_releases
from dpminimax.algorithms.minimax.phased_minimax import (
    cc_regularization,
    csc_regularization,
    phase_sensitivities,
)
from dpminimax.algorithms.minimax.phased_output_perturbation import PhaseSchedule
from dpminimax.algorithms.problem_method import ProblemMethod
from dpminimax.privacy import epsilon
from dpminimax.privacy.release import Parallel, Repeat, plan_event, releases_of
from dpminimax.problems import Block, Constants, get_problem
from dpminimax.problems.games import CscGame
from dpminimax.seeding import make_generator

CPU = torch.device("cpu")
CC, CSC = "phased_minimax_output_perturbation", "csc_output_perturbation"


def _stub(mu_y: float = 0.0):
    """A min-max problem with L = D = 1 and d_x = d_y = 20 (the worked example's)."""
    blocks = (Block("x", 20), Block("y", 20))
    return SimpleNamespace(blocks=blocks, minimized=("x",), maximized=("y",),
                           block=lambda name: next(b for b in blocks if b.name == name),
                           constants=Constants(1.0, 1.0, {"x": 0.0, "y": mu_y}, 1.0))


def _sigmas(plan, block):
    return [r.noise_multiplier * r.sensitivity for r in releases_of(plan.releases)
            if r.name.startswith(f"output_{block}_")]


def test_the_worked_example(monkeypatch):
    """A worked example, Alg. 4: L = D = 1, d = 20, n = 2^16, epsilon 0.5, delta 1e-6: mu = 0.1115,
    sigma_1 = 0.1376, sigma_16 = 7.6e-4; Alg. 5's sigmas are the same."""
    assert cc_regularization(1.0, 1.0, 20, 2 ** 16, 0.5, 1e-6) == pytest.approx(0.1115, abs=1e-4)
    monkeypatch.setattr(ProblemMethod, "problem", staticmethod(lambda params: _stub()))
    plan = get_method(CC).plan(RunSpec(0, 0.5, 1e-6), 2 ** 16)
    assert (plan.values["phases"], plan.values["chunk"]) == (16, 4096)
    assert plan.values["mu"] == pytest.approx(0.1115, abs=1e-4)
    for block in ("x", "y"):
        sigmas = _sigmas(plan, block)
        assert len(sigmas) == 16
        assert sigmas[0] == pytest.approx(0.1376, abs=1e-4)
        assert sigmas[-1] == pytest.approx(7.6e-4, rel=1e-2)


@pytest.mark.parametrize("mu_y, expected", [
    (0.05, {1: 0.10571238, 3: 0.05285619, 4: 0.03737497, 16: 5.8398392e-4}),
    (1.0, {1: 0.05270463, 3: 0.01317616, 4: 0.00835730, 16: 1.3058277e-4})])
def test_the_csc_sigmas_as_printed(monkeypatch, mu_y, expected):
    """Cor. 4.9 with the worked example's setting, by hand: mu = 3 max(1/256, 4 * 16
    sqrt(20 ln(2.5e6)) / (2^16 * 0.5)) = 0.100576, sigma_k = (4 / (4096 * 0.5)) sqrt(2 ln(2.5e6)
    / (mu_k min(mu_k, mu_y))); with mu_y = 1 the first three phases have mu_k < mu_y."""
    assert csc_regularization(1.0, 1.0, 20, 2 ** 16, 0.5, 1e-6) == pytest.approx(0.1005760,
                                                                               rel=1e-6)
    monkeypatch.setattr(ProblemMethod, "problem", staticmethod(lambda params: _stub(mu_y)))
    plan = get_method(CSC).plan(RunSpec(0, 0.5, 1e-6), 2 ** 16)
    sigmas = _sigmas(plan, "x")
    assert len(sigmas) == 16 and not _sigmas(plan, "y")
    for k, sigma in expected.items():
        assert sigmas[k - 1] == pytest.approx(sigma, rel=1e-6), k


def test_phase_sensitivities_follow_the_formula():
    """4L / (nbar sqrt(mu_k min(mu_k, m))) with mu_k = mu 2^k, written out."""
    got = phase_sensitivities(2.0, PhaseSchedule((10,) * 4, 2.0), 0.1, 0.5)
    want = [8.0 / (10 * math.sqrt(0.2 * 0.2)), 8.0 / (10 * math.sqrt(0.4 * 0.4)),
            8.0 / (10 * math.sqrt(0.8 * 0.5)), 8.0 / (10 * math.sqrt(1.6 * 0.5))]
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name", [CC, CSC])
@pytest.mark.parametrize("sigma", ["paper", "calibrated"])
def test_the_records_compose_the_releases_and_meet_the_target(name, sigma):
    """Algs. 4 o 5: a composition of two parallel trees of K phases, whose event is two Gaussian
    releases of the one multiplier (Alg. 3's); C-SC: one parallel tree, one Gaussian. The paper's
    sigma is within the target at delta / 2; the calibrated one is on it."""
    method = get_method(name)
    plan = method.plan(RunSpec(0, 0.5, 1e-6, {"sigma": sigma}), 4096)
    record, multiplier = plan.record, plan.values["noise_multiplier"]
    algorithms = plan.releases.parts if name == CC else (plan.releases,)
    assert isinstance(plan.releases, Repeat if name == CC else Parallel)
    assert [type(part) for part in algorithms] == [Parallel] * len(algorithms)
    assert all(len(part.parts) == 12 for part in algorithms)
    blocks = ("x", "y") if name == CC else ("x",)
    two = output_releases({block: 1.0 for block in blocks}, multiplier)
    assert repr(plan.event()) == repr(plan_event(two))
    assert record["delta_mechanism"] == 5e-7 and record["delta"] == 1e-6
    assert record["epsilon"] == pytest.approx(epsilon(plan.event(), 5e-7, "pld"), rel=1e-12)
    if sigma == "paper":
        assert record["epsilon"] <= 0.5 and record["guarantee_covered"]
    else:
        assert record["epsilon"] == pytest.approx(0.5, rel=1e-6)
        assert record["epsilon"] <= 0.5


def _phases_by_hand(problem, sample, phases, chunk, mu, both):
    """Algs. 4 o 5 (``both``) or the C-SC variant, noise off, written out."""
    dim = problem.blocks[0].dim
    x, y = (torch.zeros(dim, dtype=problem.dtype) for _ in range(2))
    zero = torch.zeros(dim, dtype=problem.dtype)
    for k in range(1, phases + 1):
        part = {key: value[(k - 1) * chunk:k * chunk] for key, value in sample.items()}
        if both:
            x = problem.empirical_solution(part, prox=({"x": x, "y": zero},
                                                       {"x": mu * 2 ** k, "y": mu}))["x"]
            y = problem.empirical_solution(part, prox=({"x": zero, "y": y},
                                                       {"x": mu, "y": mu * 2 ** k}))["y"]
        else:
            x = problem.empirical_solution(part, prox=({"x": x}, {"x": mu * 2 ** k}))["x"]
    return {"x": x, "y": y} if both else {"x": x}


@pytest.mark.parametrize("name, statistical, both", [("phased_minimax_exact", 2.0, True),
                                                      ("csc_exact", 3.0, False)])
def test_noise_off_program_is_the_phases_written_out(name, statistical, both):
    """mu = 2 (L / D) / sqrt(n) (Thm 4.8's statistical term) or 3 (L / D) / sqrt(n)
    (Cor. 4.9's); n = 300: K = 8 phases of 37 examples (4 left over)."""
    method = get_method(name)
    run = RunSpec(3, math.inf, 1e-5, {"n": 300})
    fit = method.fit(None, [run], CPU)
    params = fit.resolved_params[0]
    problem = method.problem(params)
    constants = problem.constants
    assert (params["phases"], params["chunk"]) == (8, 37)
    assert params["mu"] == pytest.approx(statistical * constants.lipschitz
                                         / constants.diameter / math.sqrt(300), rel=1e-12)
    expected = _phases_by_hand(problem, method.sample(problem, run, params, CPU), 8, 37,
                               params["mu"], both)
    assert set(fit.state) == set(expected)
    for block, value in expected.items():
        torch.testing.assert_close(fit.state[block][0], value, rtol=0, atol=1e-12)


def test_noise_off_converges_to_the_empirical_saddle_point_of_g2():
    """Algs. 4 o 5 without noise on G2: the distance of (x~_K, y~_K) to the sample's saddle point
    falls with n (2^8, 2^11, 2^14) and is below half its 2^8 value at 2^14, per seed."""
    method = get_method("phased_minimax_exact")
    distances = []
    for n in (2 ** 8, 2 ** 11, 2 ** 14):
        runs = [RunSpec(seed, math.inf, 1e-6, {"n": n}) for seed in (0, 1)]
        fit = method.fit(None, runs, CPU)
        problem = method.problem(fit.resolved_params[0])
        row = []
        for r, run in enumerate(runs):
            saddle = problem.empirical_solution(
                method.sample(problem, run, fit.resolved_params[r], CPU))
            row.append([float(torch.linalg.vector_norm(fit.state[b][r] - saddle[b]))
                        for b in ("x", "y")])
        distances.append(torch.tensor(row))
    assert bool((distances[1] < distances[0]).all() and (distances[2] < distances[1]).all())
    assert bool((distances[2] < 0.5 * distances[0]).all()), distances
    assert float(distances[2].max()) < 0.3


def test_csc_noise_off_converges_to_the_primal_solution_of_g4():
    """The C-SC variant without noise on G4 (through the task's primal gap): the distance of
    x~_K to x* and Phi(x~_K) - Phi(x*) fall with n (2^8, 2^11, 2^14), to below a quarter of
    the distance and a tenth of the gap at 2^8, per seed."""
    method = get_method("csc_exact")
    rows = []
    for n in (2 ** 8, 2 ** 11, 2 ** 14):
        runs = [RunSpec(seed, math.inf, 1e-6, {"n": n}) for seed in (0, 1)]
        fit = method.fit(None, runs, CPU)
        evaluated = method.task.evaluate(fit, None, CPU)
        assert not any("strong_gap" in key for key in evaluated[0])
        rows.append(torch.tensor([[row["distance_x"], row["population_primal_gap"]]
                                  for row in evaluated]))
    assert bool((rows[1] < rows[0]).all() and (rows[2] < rows[1]).all())
    assert bool((rows[2][:, 0] < 0.25 * rows[0][:, 0]).all()), rows
    assert bool((rows[2][:, 1] < 0.1 * rows[0][:, 1]).all()), rows
    assert bool((rows[2] >= 0).all())


@pytest.mark.parametrize("name", [CC, CSC])
def test_the_released_outputs_carry_the_planned_noise(name):
    """End to end over 16 seeds (n = 128: K = 7 phases of 18; epsilon 2): every phase's release
    minus the exact phase solution from the previous release, over the printed sigma_k computed
    here by hand (Alg. 4 / 5: (8L / (nbar eps)) sqrt(2 ln(5 / delta) / (mu_k mu)); C-SC:
    (4L / (nbar eps)) sqrt(2 ln(2.5 / delta) / (mu_k min(mu_k, mu_y)))), has unit rms per
    block and phase, the last phase included."""
    method, n, target, delta, phases, chunk = get_method(name), 128, 2.0, 1e-5, 7, 18
    runs = [RunSpec(seed, target, delta, {"n": n}) for seed in range(16)]
    states = [None]
    fit = method.fit(None, runs, CPU, monitor=lambda step, model, state: states.append(
        {key: value.clone() for key, value in state.items()}))
    problem = method.problem(fit.resolved_params[0])
    constants = problem.constants
    lipschitz, radius, dim = constants.lipschitz, constants.diameter, problem.blocks[0].dim
    samples = [method.sample(problem, run, fit.resolved_params[r], CPU)
               for r, run in enumerate(runs)]
    zero = torch.zeros(dim, dtype=problem.dtype)
    if name == CC:
        mu = lipschitz / radius * max(2 / math.sqrt(n), 13 * math.log2(n) * math.sqrt(
            dim * math.log(5 / delta)) / (n * target))
        sides = (("x", "y"), ("y", "x"))
    else:
        mu = 3 * lipschitz / radius * max(1 / math.sqrt(n), 4 * math.log2(n) * math.sqrt(
            dim * math.log(2.5 / delta)) / (n * target))
        sides = (("x", None),)
    assert len(states) == 1 + phases * len(sides)
    for step in range(1, len(states)):
        k = (step - 1) // len(sides) + 1
        block, other = sides[(step - 1) % len(sides)]
        mu_k = mu * 2 ** k
        if name == CC:
            sigma = 8 * lipschitz / (chunk * target) * math.sqrt(
                2 * math.log(5 / delta) / (mu_k * mu))
        else:
            sigma = 4 * lipschitz / (chunk * target) * math.sqrt(
                2 * math.log(2.5 / delta) / (mu_k * min(mu_k, problem.mu_y)))
        noise = []
        for r, sample in enumerate(samples):
            center = states[step - 1][block][r] if states[step - 1] else zero
            centers, moduli = {block: center}, {block: mu_k}
            if other is not None:
                centers[other], moduli[other] = zero, mu
            part = {key: value[(k - 1) * chunk:k * chunk] for key, value in sample.items()}
            solution = problem.empirical_solution(part, prox=(centers, moduli))[block]
            noise.append((states[step][block][r] - solution) / sigma)
        rms = float(torch.stack(noise).pow(2).mean().sqrt())
        allowed = 4.0 / math.sqrt(2 * len(runs) * dim) + 0.02
        assert abs(math.log(rms)) < allowed, (block, k, rms)
    for block in fit.state:
        torch.testing.assert_close(fit.state[block], states[-1][block], rtol=0, atol=0)


def test_csc_refuses_a_problem_without_strong_concavity():
    with pytest.raises(ValueError, match="strongly concave in y; problem 'g2_bilinear_game'"):
        get_method(CSC).plan(RunSpec(0, 1.0, 1e-5, {"problem": "g2_bilinear_game"}), 1024)
    with pytest.raises(ValueError, match="strongly concave"):
        get_method("csc_exact").plan(RunSpec(0, math.inf, 1e-5,
                                             {"problem": "g2_bilinear_game"}), 1024)


@pytest.mark.parametrize("name", [CC, CSC])
def test_minimization_problems_are_refused(name):
    with pytest.raises(ValueError, match="min-max"):
        get_method(name).plan(RunSpec(0, 1.0, 1e-5, {"problem": "p1_least_squares"}), 1024)


def _neighbours(problem, n, seed):
    """A sample and the same sample with its first example replaced by a fresh one."""
    sample = problem.sample(n, make_generator(seed, "data"))
    fresh = problem.sample(1, make_generator(seed, "fresh"))
    return sample, {k: torch.cat([fresh[k], v[1:]]) for k, v in sample.items()}


@pytest.mark.parametrize("seed", range(4))
def test_phase_solutions_are_stable_on_replace_one_neighbours(seed):
    """Lemma 4.5 for a phase of Alg. 4 on G2 (x at mu_k around a center, y at mu around 0):
    mu_k |dx|^2 + mu |dy|^2 <= 4 L^2 / (mu nbar^2), so |dx| <= 2L / (nbar sqrt(mu_k mu)); of
    Alg. 5 with the roles swapped; and of the C-SC variant on G4 (x only, f mu_y-strongly
    concave): |dx| <= 2L / (nbar sqrt(mu_k min(mu_k, mu_y))). Half the sensitivities."""
    nbar, generator = 64, make_generator(seed, "center")
    g2, g4 = get_problem("g2_bilinear_game", seed=seed), get_problem("g4_csc_game", seed=seed)
    zero = torch.zeros(10, dtype=torch.float64)
    for mu in (0.1, 1.0):
        for k in (1, 4, 8):
            mu_k = mu * 2 ** k
            center = g2.blocks[0].project(torch.randn(10, generator=generator,
                                                      dtype=torch.float64))
            bound = 4 * g2.constants.lipschitz ** 2 / (mu * nbar ** 2)
            for released, other in (("x", "y"), ("y", "x")):
                prox = ({released: center, other: zero}, {released: mu_k, other: mu})
                a, b = (g2.empirical_solution(s, prox)
                        for s in _neighbours(g2, nbar, 100 * seed + k))
                moved = {name: float(torch.linalg.vector_norm(a[name] - b[name])) ** 2
                         for name in a}
                assert mu_k * moved[released] + mu * moved[other] <= bound
                assert math.sqrt(moved[released]) <= 2 * g2.constants.lipschitz / (
                    nbar * math.sqrt(mu_k * mu))
            a, b = (g4.empirical_solution(s, ({"x": center}, {"x": mu_k}))
                    for s in _neighbours(g4, nbar, 100 * seed + k))
            assert float(torch.linalg.vector_norm(a["x"] - b["x"])) <= (
                2 * g4.constants.lipschitz / (nbar * math.sqrt(mu_k * min(mu_k, g4.mu_y))))


def _natural_residual(problem, examples, point, prox):
    """||z - Proj(z - G(z))|| for G = (grad_x, -grad_y) of the regularized empirical objective
    (per-example gradients, not the solver's formulas): 0 exactly at the saddle point on the
    balls."""
    centers, moduli = prox
    grads = problem.per_example_grads({k: v.unsqueeze(0) for k, v in point.items()},
                                      {k: v.unsqueeze(0) for k, v in examples.items()})
    residual = 0.0
    for block in problem.blocks:
        name, sign = block.name, (-1.0 if block.name in problem.maximized else 1.0)
        grad = grads[name][0].mean(0)
        if name in moduli:
            grad = grad + sign * moduli[name] * (point[name] - centers[name])
        step = block.project(point[name] - sign * grad)
        residual += float(torch.linalg.vector_norm(point[name] - step)) ** 2
    return math.sqrt(residual)


@pytest.mark.parametrize("name", ["g1_quadratic_game", "g2_bilinear_game", "g4_csc_game"])
@pytest.mark.parametrize("seed", range(3))
def test_proximal_saddle_points_are_exact_on_the_balls(name, seed):
    """With proximal centers far outside the balls (a noisy phase), the saddle point is on a
    boundary; with a center at 0, inside. The natural residual vanishes at both. (Off the
    balls the a-priori L, hence every phase's sensitivity, would not hold.)"""
    problem = get_problem(name, seed=seed)
    examples = problem.sample(100, make_generator(seed, "data"))
    generator = make_generator(seed, "centers")
    far = {name: 6.0 * torch.randn(10, generator=generator, dtype=torch.float64)
           for name in ("x", "y")}
    zero = torch.zeros(10, dtype=torch.float64)
    for prox, boundary in ((({"x": far["x"]}, {"x": 0.3}), True),
                           (({"x": zero, "y": far["y"]}, {"x": 0.3, "y": 1.0}), True),
                           ((far, {"x": 0.3, "y": 1.0}), True),
                           (({"x": zero, "y": zero}, {"x": 0.3, "y": 1.0}), False)):
        solution = problem.empirical_solution(examples, prox)
        assert _natural_residual(problem, examples, solution, prox) < 1e-12
        norms = [float(torch.linalg.vector_norm(solution[b.name])) / b.radius
                 for b in problem.blocks]
        assert max(norms) <= 1 + 1e-12
        assert (abs(max(norms) - 1) < 1e-12) == boundary, norms


def test_g4_primal_gap_is_phi_minus_its_minimum():
    """Phi(x) = max_y F(x, y): F(x, y) <= Phi(x) for feasible y, the gap is 0 at x* and > 0
    elsewhere in the ball, on the population and on a sample."""
    problem = CscGame(mu_y=0.3, seed=2)
    examples = problem.sample(500, make_generator(2, "data"))
    generator = make_generator(3, "test")
    x = problem.blocks[0].project(2.0 * torch.randn(64, 10, generator=generator,
                                                    dtype=torch.float64))
    for sample in (None, examples):
        moments = problem.statistics(sample)
        saddle = problem.saddle(moments)
        gap = problem.primal_gap({"x": x}, sample)
        assert bool((gap > 0).all())
        assert abs(float(problem.primal_gap({"x": saddle["x"].unsqueeze(0)}, sample)[0])) < 1e-12
        phi = gap + problem.value({k: v.unsqueeze(0) for k, v in saddle.items()}, moments)
        for _ in range(20):
            y = problem.blocks[1].project(3.0 * torch.randn(64, 10, generator=generator,
                                                            dtype=torch.float64))
            assert bool((problem.value({"x": x, "y": y}, moments) <= phi + 1e-12).all())


@pytest.mark.parametrize("name, solver", [("phased_minimax_exact", "extragradient"),
                                          ("csc_exact", "pb_svrg")])
def test_an_iterative_base_solver_meets_each_phase_accuracy(name, solver):
    """Noise off, a base solver stopped by its certificate: every phase's released block is
    within the phase's accuracy (Alg. 4 line 4: sqrt(mu_k) ||x_k - x*_k|| <= L / (sqrt(mu)
    nbar); Cor. 4.9: sqrt(mu_k) ||x_k - x*_k|| <= L / (nbar sqrt(min(mu_k, mu_y)))) of the
    exact solution of that phase's subproblem, and the solver's evaluations are counted."""
    method = get_method(name)
    run = RunSpec(2, math.inf, 1e-5, {"n": 2048, "solver": solver})
    states = []
    fit = method.fit(None, [run], CPU, monitor=lambda step, model, state: states.append(
        {k: v[0].clone() for k, v in state.items()}))
    params = fit.resolved_params[0]
    problem = method.problem(params)
    sample = method.sample(problem, run, params, CPU)
    lipschitz, chunk, mu = problem.constants.lipschitz, params["chunk"], params["mu"]
    concavity = problem.constants.strong_convexity["y"]
    sides = method.sides("x", "y")
    previous = {block: torch.zeros(10, dtype=torch.float64) for block, _ in sides}
    for step, state in enumerate(states):
        k = step // len(sides) + 1
        block, fixed = sides[step % len(sides)]
        rows = {key: value[(k - 1) * chunk:k * chunk] for key, value in sample.items()}
        centers, moduli = {block: previous[block]}, {block: mu * 2 ** k}
        if fixed is not None:
            centers[fixed], moduli[fixed] = torch.zeros(10, dtype=torch.float64), mu
        exact = problem.empirical_solution(rows, prox=(centers, moduli))[block]
        floor = mu if fixed is not None else min(mu * 2 ** k, concavity)
        radius = lipschitz / (chunk * math.sqrt(floor))
        assert math.sqrt(mu * 2 ** k) * float(torch.linalg.vector_norm(state[block] - exact)) \
            <= radius * (1 + 1e-9)
        previous[block] = state[block]
    assert fit.counters[0]["gradient_evaluations"] >= len(states) * chunk
