"""P3 (tunable smoothness) and G3 (non-affine C-C game) (our problems): closed-form gradients
against autograd of one example, exact solutions (stationarity / KKT on the balls, against
independent solvers, the population solution as the empirical one at the exact frequencies),
the a-priori constants on random points, the weak gap, and the phased methods on them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize as scipy_minimize

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.problems import LogCoshRegression, SoftplusGame
from dpminimax.problems.logistic import NoEmpiricalMinimizer
from dpminimax.seeding import make_generator
from dpminimax.solvers import solve

CPU = torch.device("cpu")
P3 = [dict(tau=0.5), dict(tau=0.02), dict(tau=1e-3, radius=1.01)]
G3 = [dict(), dict(s=3.0, r=0.5, d=5)]


def _batched(examples):
    return {k: v.unsqueeze(0) for k, v in examples.items()}


def _mean_grads(problem, point, examples):
    grads = problem.per_example_grads({k: v.unsqueeze(0) for k, v in point.items()},
                                      _batched(examples))
    return {k: v[0].mean(0) for k, v in grads.items()}


def _random_points(problem, count, generator, scale):
    """``count`` points per block: Gaussian of ``scale`` projected onto the feasible set."""
    return {b.name: b.project(scale * torch.randn(count, b.dim, generator=generator,
                                                  dtype=problem.dtype)) for b in problem.blocks}


def _every_atom(problem):
    """The distribution's support, each atom once (its exact population frequencies)."""
    if isinstance(problem, SoftplusGame):
        return dict(problem.atoms)
    a = problem.atoms.repeat_interleave(len(problem.levels), 0)
    return {"a": a, "b": a @ problem.w_star + problem.levels.repeat(len(problem.atoms))}


@pytest.mark.parametrize("problem", [LogCoshRegression(**k, seed=1) for k in P3]
                         + [SoftplusGame(**k, seed=1) for k in G3])
def test_closed_form_gradients_equal_autograd_of_one_example(problem):
    generator = make_generator(0, "test")
    examples = problem.sample(12, generator)
    batch = {k: v.view(3, 4, *v.shape[1:]) for k, v in examples.items()}
    point = _random_points(problem, 3, generator, 2.0)
    closed = problem.per_example_grads(point, batch)
    for r in range(3):
        for i in range(4):
            one = {b: point[b][r].clone().requires_grad_(True) for b in point}
            loss = problem.example_loss(one, {k: v[r, i] for k, v in batch.items()})
            grads = torch.autograd.grad(loss, list(one.values()))
            for block, grad in zip(one, grads, strict=True):
                torch.testing.assert_close(closed[block][r, i], grad, rtol=0, atol=1e-12)


def test_the_stable_log_cosh_is_tau_log_cosh():
    problem = LogCoshRegression(tau=0.3, seed=0)
    example = problem.sample(1, make_generator(0, "test"))
    for x in torch.linspace(-3, 3, 13, dtype=torch.float64):
        point = {"x": x * torch.ones(problem.d, dtype=torch.float64)}
        residual = example["a"][0] @ point["x"] - example["b"][0]
        expected = 0.3 * torch.log(torch.cosh(residual / 0.3))
        torch.testing.assert_close(problem.example_loss(point, {k: v[0] for k, v in
                                                                example.items()}), expected)


def _projected_residual(problem, point, examples, prox=None):
    """||z - Pi(z - G(z) / l)|| per block, G the operator (descent on minimized blocks, ascent
    on maximized ones) of the empirical objective plus the proximal term: 0 iff the point is
    the solution on the balls."""
    grads = _mean_grads(problem, point, examples)
    total = 0.0
    for block in problem.blocks:
        sign = -1.0 if block.name in problem.maximized else 1.0
        operator = sign * grads[block.name]
        if prox is not None:
            operator = operator + prox[1][block.name] * (point[block.name]
                                                         - prox[0][block.name])
        value = point[block.name]
        step = value - block.project(value - operator / problem.constants.smoothness)
        total += float(step @ step)
    return math.sqrt(total)


@pytest.mark.parametrize("kwargs", P3)
def test_p3_empirical_solution_is_stationary_and_matches_bfgs(kwargs):
    problem = LogCoshRegression(**kwargs, seed=2)
    examples = problem.sample(500, make_generator(2, "data"))
    x = problem.empirical_solution(examples)["x"]
    assert _projected_residual(problem, {"x": x}, examples) < 1e-12
    assert float(torch.linalg.vector_norm(x)) < problem.blocks[0].radius   # interior

    def value(z):   # an independent solver: BFGS on the autograd objective
        point = torch.tensor(z).requires_grad_(True)
        loss = problem.loss({"x": point.unsqueeze(0)}, _batched(examples)).mean()
        (grad,) = torch.autograd.grad(loss, [point])
        return float(loss.detach()), grad.numpy()

    reference = scipy_minimize(value, x.numpy() * 0.9, jac=True, method="BFGS",
                               options={"gtol": 1e-11, "maxiter": 10_000})
    assert np.linalg.norm(reference.x - x.numpy()) < 1e-6
    assert float(problem.excess_risk({"x": x.unsqueeze(0)}, examples)[0]) == pytest.approx(
        0.0, abs=1e-13)


@pytest.mark.parametrize("kwargs", G3)
def test_g3_empirical_saddle_point_has_zero_gap_and_zero_gradient(kwargs):
    problem = SoftplusGame(**kwargs, seed=3)
    examples = problem.sample(400, make_generator(3, "data"))
    saddle = problem.empirical_solution(examples)
    for block, grad in _mean_grads(problem, saddle, examples).items():
        assert float(torch.linalg.vector_norm(grad)) < 1e-12, block
    point = {k: v.unsqueeze(0) for k, v in saddle.items()}
    assert abs(float(problem.strong_gap(point, examples)[0])) < 1e-12
    assert float(problem.strong_gap({k: v + 0.05 for k, v in point.items()}, examples)[0]) > 1e-5
    assert abs(float(problem.primal_gap(point, examples)[0])) < 1e-12


@pytest.mark.parametrize("name", ["p3", "g3"])
def test_proximal_solutions_on_the_boundary_satisfy_kkt_and_match_an_iterative_solver(name):
    """Centers far outside the balls put the prox solution on the boundary: the projected
    residual vanishes; a certified iterative base solver (AGD / extragradient)
    lands within its target of it."""
    if name == "p3":
        problem, solver = LogCoshRegression(tau=0.05, radius=1.5, seed=4), "agd"
        centers, moduli = {"x": torch.full((10,), 2.0, dtype=torch.float64)}, {"x": 0.3}
    else:
        problem, solver = SoftplusGame(seed=4), "extragradient"
        centers = {"x": torch.full((10,), 3.0, dtype=torch.float64),
                   "y": torch.full((10,), -0.1, dtype=torch.float64)}
        moduli = {"x": 0.5, "y": 0.2}
    examples = problem.sample(300, make_generator(4, "data"))
    prox = (centers, moduli)
    solution = problem.empirical_solution(examples, prox=prox)
    assert abs(float(torch.linalg.vector_norm(solution["x"])) - problem.blocks[0].radius) < 1e-12
    assert _projected_residual(problem, solution, examples, prox) < 1e-12
    iterative = solve(solver, problem, examples, prox, 1e-8, make_generator(0, "solver")).point
    for block, value in solution.items():
        assert float(torch.linalg.vector_norm(iterative[block] - value)) <= 1e-8, block


@pytest.mark.parametrize("problem", [LogCoshRegression(seed=5), LogCoshRegression(tau=0.01, seed=5),
                                     SoftplusGame(seed=5)])
def test_population_solution_is_the_empirical_one_at_exact_frequencies(problem):
    exact = problem.empirical_solution(_every_atom(problem))
    population = problem.population_solution()
    for block, value in population.items():
        assert float(torch.linalg.vector_norm(exact[block] - value)) < 1e-10, block
    point = {k: v.unsqueeze(0) for k, v in population.items()}
    gap = problem.strong_gap(point) if problem.maximized else problem.excess_risk(point)
    assert abs(float(gap[0])) < 1e-12
    # and a large sample's solution is close to it, closer than a small sample's
    distances = []
    for n in (500, 100_000):
        empirical = problem.empirical_solution(problem.sample(n, make_generator(n, "data")))
        distances.append(math.sqrt(sum(float(torch.linalg.vector_norm(empirical[b] - v)) ** 2
                                       for b, v in population.items())))
    assert distances[1] < min(0.05, 0.5 * distances[0]), distances


def test_p3_population_objective_is_the_exact_mean_loss():
    problem = LogCoshRegression(tau=0.2, seed=6)
    point = _random_points(problem, 3, make_generator(6, "test"), 1.0)
    support = _every_atom(problem)
    losses = problem.loss(point, {k: v.unsqueeze(0).expand(3, *v.shape)
                                  for k, v in support.items()})
    torch.testing.assert_close(losses.mean(1), problem.population_objective(point))


@pytest.mark.parametrize("problem", [LogCoshRegression(**k, seed=7) for k in P3]
                         + [SoftplusGame(**k, seed=7) for k in G3])
def test_the_a_priori_constants_bound_gradients_and_curvature(problem):
    """At 1,000 random feasible points (half pushed onto the balls' boundaries, or far out on
    P3's R^d), on every atom: joint gradient norm <= L; ||grad f(z) - grad f(z')|| <= l
    ||z - z'|| with the ratio reaching at least a third of l; finite differences of the
    gradient along random steps h, <grad f(z + h) - grad f(z), h> >= 0 in x (convex) and <= 0
    in y (concave): mu = 0."""
    generator = make_generator(7, "test")
    constants = problem.constants
    support = _every_atom(problem)
    atoms = len(support["a"])
    batch = {k: v.unsqueeze(0).expand(1000, *v.shape) for k, v in support.items()}
    scales = torch.cat([torch.full((500,), 0.5), torch.full((500,), 50.0)]).unsqueeze(1)
    point = {b.name: b.project(scales * torch.randn(1000, b.dim, generator=generator,
                                                    dtype=problem.dtype))
             for b in problem.blocks}
    grads = problem.per_example_grads(point, batch)
    norms = torch.sqrt(sum((g * g).sum(-1) for g in grads.values()))
    assert float(norms.max()) <= constants.lipschitz * (1 + 1e-12)
    assert float(norms.max()) >= 0.5 * constants.lipschitz   # the bound is not vacuous
    near = {b.name: b.project(point[b.name] + 1e-3 * torch.randn(
        1000, b.dim, generator=generator, dtype=problem.dtype)) for b in problem.blocks}
    other = problem.per_example_grads(near, batch)
    change = torch.sqrt(sum(((other[b] - grads[b]) ** 2).sum(-1) for b in grads))
    moved = torch.sqrt(sum(((near[b] - point[b]) ** 2).sum(-1) for b in grads)).unsqueeze(1)
    ratio = change / moved
    assert float(ratio.max()) <= constants.smoothness * (1 + 1e-9)
    assert float(ratio.max()) >= constants.smoothness / 3
    for block in problem.blocks:   # monotone (anti-monotone) gradient along random steps
        step = 1e-3 * torch.randn(1000, block.dim, generator=generator, dtype=problem.dtype)
        moved = problem.per_example_grads({**point, block.name: point[block.name] + step},
                                          batch)[block.name]
        second = ((moved - grads[block.name]) * step.unsqueeze(1)).sum(-1)
        sign = -1.0 if block.name in problem.maximized else 1.0
        assert float((sign * second).min()) >= -1e-15, block
    assert constants.strong_convexity == {b.name: 0.0 for b in problem.blocks}
    assert atoms == (problem.d * 4 if problem.maximized else problem.d * 2 * 3)


def test_p3_needs_a_spanning_sample_without_prox_and_a_ball_containing_w_star():
    problem = LogCoshRegression(seed=8)
    few = problem.sample(3, make_generator(8, "data"))
    with pytest.raises(NoEmpiricalMinimizer):
        problem.empirical_solution(few)
    origin = {"x": torch.zeros(2, 10, dtype=torch.float64)}
    assert bool(torch.isnan(problem.excess_risk(origin, few)).all())
    zero = {"x": torch.zeros(10, dtype=torch.float64)}
    regularized = problem.empirical_solution(few, prox=(zero, {"x": 0.1}))
    assert _projected_residual(problem, regularized, few, (zero, {"x": 0.1})) < 1e-12
    with pytest.raises(ValueError, match="must contain"):
        LogCoshRegression(radius=0.5)


def test_g3_weak_gap_shows_the_cost_of_noise_that_cancels_in_the_mean():
    """Noise of mean zero around the saddle point costs a positive weak gap on
    the non-affine G3 (Jensen), at most the mean strong gap; one point's weak gap is its strong
    gap; copies of the saddle point have none."""
    problem = SoftplusGame(seed=9)
    saddle = problem.population_solution()
    noise = {b: 0.3 * torch.randn(8, 10, generator=make_generator(9, b), dtype=torch.float64)
             for b in saddle}
    noisy = {b: saddle[b] + torch.cat([noise[b], -noise[b]]) for b in saddle}  # mean = saddle
    weak = float(problem.weak_gap(noisy))
    assert 1e-4 < weak < float(problem.strong_gap(noisy).mean())
    copies = {b: v.unsqueeze(0).expand(3, -1) for b, v in saddle.items()}
    assert abs(float(problem.weak_gap(copies))) < 1e-12
    one = {b: v[:1] for b, v in noisy.items()}
    assert float(problem.weak_gap(one)) == pytest.approx(float(problem.strong_gap(one)[0]),
                                                         abs=1e-12)


def _phases(problem, sample, phases, chunk, mu, blocks):
    """Algs. 2 / 4 o 5 written out without noise: phase k solves chunk k with its prox term."""
    point = {b: torch.zeros(problem.d, dtype=problem.dtype) for b in blocks}
    for k in range(1, phases + 1):
        part = {key: value[(k - 1) * chunk:k * chunk] for key, value in sample.items()}
        if blocks == ("x",):
            point = problem.empirical_solution(part, prox=(point, {"x": mu * 2 ** k}))
            continue
        zero = {b: torch.zeros(problem.d, dtype=problem.dtype) for b in blocks}
        x = problem.empirical_solution(part, prox=({"x": point["x"], "y": zero["y"]},
                                                   {"x": mu * 2 ** k, "y": mu}))["x"]
        y = problem.empirical_solution(part, prox=({"x": zero["x"], "y": point["y"]},
                                                   {"x": mu, "y": mu * 2 ** k}))["y"]
        point = {"x": x, "y": y}
    return point


@pytest.mark.parametrize("method, problem, blocks", [
    ("phased_exact", "p3_log_cosh", ("x",)),
    ("phased_minimax_exact", "g3_softplus_game", ("x", "y"))])
def test_the_noise_off_phased_methods_run_the_exact_phases(method, problem, blocks):
    """n = 300: K = 8 phases of 37 examples; the program's output is the phases written out
    (to 1e-10), and its task rows carry the exact metrics."""
    method = get_method(method)
    runs = [RunSpec(seed, math.inf, 1e-5, {"problem": problem, "n": 300}) for seed in (0, 1)]
    fit = method.fit(None, runs, CPU)
    rows = method.task.evaluate(fit, None, CPU)
    for r, run in enumerate(runs):
        params = fit.resolved_params[r]
        instance = method.problem(params)
        sample = method.sample(instance, run, params, CPU)
        expected = _phases(instance, sample, params["phases"], params["chunk"], params["mu"],
                           blocks)
        for block, value in expected.items():
            assert float(torch.linalg.vector_norm(fit.state[block][r] - value)) < 1e-10
        metric = "population_strong_gap" if len(blocks) == 2 else "excess_population_risk"
        assert 0 <= rows[r][metric] < 1.0


def test_ball_solution_treats_an_escaped_solution_as_outside_the_ball():
    """The multiplier search of the best responses met a nu so small that Newton's iterates
    escaped (NoMinimizer; the default run's G3 job at epsilon 0.9): that solution lies outside
    the ball, and the root is still found."""
    from dpminimax.problems.newton import NoMinimizer, ball_solution

    calls = []

    def solve(nu: float) -> float:  # the solution's norm: 10 at nu = 0, 1 / nu, escapes below
        calls.append(nu)
        if 0.0 < nu < 0.45:
            raise NoMinimizer("the iterates left the escape radius")
        return 10.0 if nu == 0.0 else 1.0 / nu

    assert ball_solution(solve, abs, 2.0) == pytest.approx(2.0, rel=1e-12)  # on the sphere
    assert any(0.0 < nu < 0.45 for nu in calls)  # the search did meet an escaped solution
