"""The problem layer's exact answers (our problems): closed-form per-example gradients against
autograd of the single-example loss, stationarity of the exact empirical solutions, zero strong
gap / excess risk exactly at the solutions, the population objective against a Monte-Carlo mean,
and the a-priori Lipschitz constants on the feasible set."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.problems import PROBLEMS, Block, get_problem
from dpminimax.seeding import make_generator

NAMES = sorted(PROBLEMS)


def _batched(examples, runs=1):
    return {k: v.unsqueeze(0).expand(runs, *v.shape) for k, v in examples.items()}


def _point(problem, runs, generator, scale=1.0):
    """Random feasible points (R, dim) per block."""
    return {b.name: b.project(scale * torch.randn(runs, b.dim, generator=generator,
                                                  dtype=problem.dtype)) for b in problem.blocks}


@pytest.mark.parametrize("name", NAMES)
def test_closed_form_gradients_equal_autograd_of_one_example(name):
    problem = get_problem(name, seed=1)
    generator = make_generator(0, "test")
    examples = problem.sample(15, generator)
    batch = {k: v.view(3, 5, *v.shape[1:]) for k, v in examples.items()}
    point = _point(problem, 3, generator)
    closed = problem.per_example_grads(point, batch)
    for r in range(3):
        for i in range(5):
            one = {b: point[b][r].clone().requires_grad_(True) for b in point}
            loss = problem.example_loss(one, {k: v[r, i] for k, v in batch.items()})
            grads = torch.autograd.grad(loss, list(one.values()))
            for block, grad in zip(one, grads, strict=True):
                torch.testing.assert_close(closed[block][r, i], grad, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_empirical_solution_is_stationary_and_optimal(name, seed):
    problem = get_problem(name, seed=seed)
    examples = problem.sample(400, make_generator(seed, "data"))
    solution = problem.empirical_solution(examples)
    point = {k: v.unsqueeze(0) for k, v in solution.items()}
    for block in problem.blocks:    # interior by construction, so the gradient vanishes
        assert float(torch.linalg.vector_norm(solution[block.name])) < block.radius
    grads = problem.per_example_grads(point, _batched(examples))
    for block, grad in grads.items():
        assert float(torch.linalg.vector_norm(grad.mean(dim=1))) < 1e-8, block
    perturbed = {k: v + 0.05 for k, v in point.items()}
    if problem.maximized:
        assert abs(float(problem.strong_gap(point, examples)[0])) < 1e-10
        assert float(problem.strong_gap(perturbed, examples)[0]) > 1e-6
    else:
        assert abs(float(problem.excess_risk(point, examples)[0])) < 1e-10
        assert float(problem.excess_risk(perturbed, examples)[0]) > 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_population_solution_has_zero_gap_and_zero_population_gradient(name):
    problem = get_problem(name, seed=4)
    solution = {k: v.unsqueeze(0) for k, v in problem.population_solution().items()}
    measure = problem.strong_gap if problem.maximized else problem.excess_risk
    assert abs(float(measure(solution)[0])) < 1e-10
    assert float(measure({k: v - 0.1 for k, v in solution.items()})[0]) > 1e-6
    # the population objective's gradient at the solution vanishes (autograd of the formula)
    point = {k: v.clone().requires_grad_(True) for k, v in solution.items()}
    grads = torch.autograd.grad(problem.population_objective(point).sum(), list(point.values()))
    for grad in grads:
        assert float(torch.linalg.vector_norm(grad)) < 1e-10


@pytest.mark.parametrize("name", NAMES)
def test_population_objective_is_the_mean_loss(name):
    problem = get_problem(name, seed=2)
    generator = make_generator(1, "test")
    point = _point(problem, 2, generator)
    examples = problem.sample(40_000, generator)
    losses = problem.loss(point, _batched(examples, 2))
    error = 4.0 * losses.std(dim=1) / math.sqrt(losses.shape[1])
    gap = (losses.mean(dim=1) - problem.population_objective(point)).abs()
    assert bool((gap <= error).all()), (gap, error)


@pytest.mark.parametrize("name", NAMES)
def test_gradients_on_the_feasible_set_are_within_the_lipschitz_constant(name):
    """Points on the balls' boundaries (where the bound is approached) and inside."""
    problem = get_problem(name, seed=3)
    generator = make_generator(2, "test")
    examples = problem.sample(512, generator)
    for scale in (0.3, 1e3):   # inside, and projected onto the boundary
        point = _point(problem, 4, generator, scale)
        grads = problem.per_example_grads(point, _batched(examples, 4))
        norms = torch.sqrt(sum((g * g).sum(-1) for g in grads.values()))
        assert float(norms.max()) <= problem.constants.lipschitz


def test_unknown_problem_names_the_known_ones():
    with pytest.raises(ValueError, match="p1_least_squares"):
        get_problem("no_such_problem")


@settings(max_examples=50, deadline=None)
@given(st.floats(0.1, 10.0), st.lists(st.floats(-100, 100), min_size=3, max_size=3),
       st.lists(st.floats(-100, 100), min_size=3, max_size=3))
def test_projection_is_idempotent_and_non_expansive(radius, u, v):
    block = Block("x", 3, radius)
    a, b = (torch.tensor(w, dtype=torch.float64) for w in (u, v))
    pa, pb = block.project(a), block.project(b)
    assert float(torch.linalg.vector_norm(pa)) <= radius * (1 + 1e-12)
    torch.testing.assert_close(block.project(pa), pa)
    assert float(torch.linalg.vector_norm(pa - pb)) <= float(torch.linalg.vector_norm(a - b)) + 1e-9


@pytest.mark.parametrize("name", NAMES)
def test_the_proximal_solution_is_stationary_for_the_regularized_objective(name):
    """With prox (c, m): the gradient of the empirical objective plus m_b (b - c_b) (minimized
    blocks) and minus m_b (b - c_b) (maximized) vanishes at the solution, with a different
    modulus per block (BYOA Algs. 2, 4, 5)."""
    problem = get_problem(name, seed=5)
    examples = problem.sample(300, make_generator(5, "data"))
    generator = make_generator(6, "test")
    centers = {b.name: 0.2 * torch.randn(b.dim, generator=generator, dtype=problem.dtype)
               for b in problem.blocks}
    moduli = {b.name: 0.7 + 0.6 * i for i, b in enumerate(problem.blocks)}
    solution = problem.empirical_solution(examples, prox=(centers, moduli))
    grads = problem.per_example_grads({k: v.unsqueeze(0) for k, v in solution.items()},
                                      _batched(examples))
    for block in problem.blocks:
        sign = -1.0 if block.name in problem.maximized else 1.0
        total = grads[block.name][0].mean(0) + sign * moduli[block.name] * (
            solution[block.name] - centers[block.name])
        assert float(torch.linalg.vector_norm(total)) < 1e-8, block.name


def test_logistic_population_solution_is_w_star_and_separable_samples_have_no_minimizer():
    problem = get_problem("p2_logistic", seed=0)
    torch.testing.assert_close(problem.population_solution()["x"], problem.w_star)
    # two examples cannot carry both labels of all 20 atoms: no (unique) empirical minimizer
    examples = problem.sample(2, make_generator(0, "data"))
    point = {"x": torch.zeros(3, problem.d, dtype=problem.dtype)}
    assert bool(torch.isnan(problem.excess_risk(point, examples)).all())
    # the ridge variant's minimizer exists on any sample and lies inside its ball
    ridge = get_problem("p2_sc_logistic", seed=0)
    solution = ridge.empirical_solution(ridge.sample(2, make_generator(0, "data")))["x"]
    assert float(torch.linalg.vector_norm(solution)) < ridge.blocks[0].radius
    assert 0 < float(torch.linalg.vector_norm(ridge.population_solution()["x"])) < 1.0
