"""E0: the bilevel problems' closed forms against autograd of their per-example
losses (Eq. (1), Eq. (3), y*, y^lambda) and finite differences, their a-priori constants on
sampled points, and the penalty lemmas measured on P-A: Lemma 8.5 (||y^l - y*|| <=
L0f / (lambda mu_g)) and Lemma 4.3 (ii), both with slope -1 in lambda."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from dpminimax.problems import BILEVEL_PROBLEMS, get_bilevel_problem
from dpminimax.problems.bilevel import ball
from dpminimax.seeding import make_generator

DIMS = {"pa_linear_response": (3, 5), "pb_group_ridge": (2, 6), "pc_ridge_tuning": (1, 5),
        "pc_logistic_tuning": (1, 5), "pd_leak_example": (2, 2)}


def _setup(name: str, n: int = 40, seed: int = 0):
    d_x, d_y = DIMS[name]
    problem = get_bilevel_problem(name, d_x=d_x, d_y=d_y, seed=seed)
    sample = problem.sample(n, make_generator(seed, "data"))
    examples = {k: v.unsqueeze(0) for k, v in sample.items()}
    x = 0.8 * problem.x.radius * ball(1, d_x, make_generator(seed, "x"), torch.float64)
    return problem, sample, examples, problem.statistics(examples), x


def _mean_loss(problem, level, sample):
    def loss(x, y):
        per = torch.func.vmap(lambda ex: problem.example_loss(level, x, y, ex))(sample)
        return per.mean()
    return loss


@pytest.mark.parametrize("name", sorted(BILEVEL_PROBLEMS))
def test_closed_forms_match_autograd_of_equation_1(name):
    problem, sample, examples, stats, x = _setup(name)
    f, g = _mean_loss(problem, "f", sample), _mean_loss(problem, "g", sample)
    x0 = x[0]
    y_star = problem.inner_solution(x, stats)[0]
    grad_y_g = torch.func.grad(g, argnums=1)
    assert torch.linalg.vector_norm(grad_y_g(x0, y_star)) < 1e-12  # y* is the argmin
    h_yy = torch.func.jacrev(grad_y_g, argnums=1)(x0, y_star)
    h_yx = torch.func.jacrev(grad_y_g, argnums=0)(x0, y_star)  # (d_y, d_x)
    f_x, f_y = torch.func.grad(f, argnums=(0, 1))(x0, y_star)
    eq1 = f_x - h_yx.T @ torch.linalg.solve(h_yy, f_y)
    torch.testing.assert_close(problem.hypergradient(x, stats)[0], eq1, rtol=1e-10,
                               atol=1e-12)
    # and against central finite differences of F_S(x) = f_S(x, y*(x))
    step = 1e-6
    basis = torch.eye(x.shape[1], dtype=torch.float64)
    fd = torch.stack([(problem.hyperobjective(x + step * e, stats)
                       - problem.hyperobjective(x - step * e, stats))[0] / (2 * step)
                      for e in basis])
    torch.testing.assert_close(fd, eq1, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(problem.hyperobjective(x, stats)[0], f(x0, y_star))


@pytest.mark.parametrize("name", sorted(BILEVEL_PROBLEMS))
def test_gradients_and_penalty_quantities_match_autograd(name):
    problem, sample, examples, stats, x = _setup(name)
    lam = torch.tensor([7.0], dtype=torch.float64)
    y = problem.y.radius * 0.5 * ball(1, problem.y.dim, make_generator(1, "y"), torch.float64)
    for level in ("f", "g"):
        loss = _mean_loss(problem, level, sample)
        grads = torch.func.grad(loss, argnums=(0, 1))(x[0], y[0])
        per_example = torch.func.vmap(torch.func.grad(
            functools.partial(problem.example_loss, level), argnums=(0, 1)),
            in_dims=(None, None, 0))(x[0], y[0], sample)
        for b, block in enumerate(("x", "y")):
            torch.testing.assert_close(problem.mean_grad(level, block, x, y, stats)[0],
                                       grads[b])
            torch.testing.assert_close(
                problem.per_example_grad(level, block, x, y, examples)[0], per_example[b])
    f, g = _mean_loss(problem, "f", sample), _mean_loss(problem, "g", sample)
    y_lambda = problem.penalty_solution(x, lam, stats)
    stationarity = torch.func.grad(lambda yy: f(x[0], yy) + lam[0] * g(x[0], yy))(y_lambda[0])
    assert torch.linalg.vector_norm(stationarity) < 1e-12

    def penalty_value(xx):  # L*_lambda(x) = f + lambda (g(x, y^l) - g(x, y*)) (Sec. 4.1)
        yl, ys = problem.penalty_solution(xx, lam, stats)[0], problem.inner_solution(xx, stats)[0]
        return f(xx[0], yl) + lam[0] * (g(xx[0], yl) - g(xx[0], ys))

    step, basis = 1e-6, torch.eye(x.shape[1], dtype=torch.float64)
    fd = torch.stack([(penalty_value(x + step * e) - penalty_value(x - step * e)) / (2 * step)
                      for e in basis])
    torch.testing.assert_close(problem.penalty_gradient(x, lam, stats)[0], fd, rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("name", sorted(BILEVEL_PROBLEMS))
def test_per_example_penalty_term_matches_autograd(name):
    """Eq. (3)'s lambda (grad_x g(x, y~l; xi) - grad_x g(x, y~; xi)) per example, whatever
    shortcut a problem takes, at two runs with their own lambda and points; a problem that
    says its outer vector is shared by every example has one."""
    problem, sample, examples, _, x = _setup(name)
    runs = {k: v.expand(2, *v.shape[1:]) for k, v in examples.items()}
    x2 = torch.cat([x, -0.5 * x])
    y_lambda, y = (problem.y.radius * 0.5 * ball(2, problem.y.dim, make_generator(s, "y"),
                                                 torch.float64) for s in (2, 3))
    lam = torch.tensor([7.0, 30.0], dtype=torch.float64)
    grad_x = torch.func.vmap(torch.func.grad(functools.partial(problem.example_loss, "g")),
                             in_dims=(None, None, 0))
    for r in range(2):
        expected = lam[r] * (grad_x(x2[r], y_lambda[r], sample) - grad_x(x2[r], y[r], sample))
        torch.testing.assert_close(
            problem.per_example_penalty_x(x2, y_lambda, y, lam, runs)[r], expected)
    # a problem that declares one outer vector for every example (Alg. 1 then clips one copy)
    vectors = (problem.per_example_grad("f", "x", x2, y_lambda, runs)
               + problem.per_example_penalty_x(x2, y_lambda, y, lam, runs))
    shared = bool((vectors == vectors[:, :1]).all())
    assert shared or not problem.outer_vector_shared


@pytest.mark.parametrize("name", sorted(BILEVEL_PROBLEMS))
def test_constants_bound_sampled_gradients_and_y_holds_the_inner_solutions(name):
    problem, sample, examples, stats, _ = _setup(name, n=200)
    c = problem.constants
    generator = make_generator(3, "points")
    x = problem.x.radius * ball(64, problem.x.dim, generator, torch.float64)
    y = problem.y.radius * ball(64, problem.y.dim, generator, torch.float64)
    batch = {k: v.expand(64, *v.shape[1:]) for k, v in examples.items()}
    batch_stats = {k: v.expand(64, *v.shape[1:]) for k, v in stats.items()}
    for level, bound in (("f", c.l0f), ("g", c.l0g)):
        joint = torch.cat([problem.per_example_grad(level, b, x, y, batch) for b in "xy"], -1)
        assert float(torch.linalg.vector_norm(joint, dim=-1).max()) <= bound * (1 + 1e-12)
    for lam in (c.lambda_min, 10 * c.lambda_min):
        lams = torch.full((64,), lam, dtype=torch.float64)
        for inner in (problem.inner_solution(x, batch_stats),
                      problem.penalty_solution(x, lams, batch_stats)):
            assert float(torch.linalg.vector_norm(inner, dim=-1).max()) <= problem.y.radius


def _split_pair(a: torch.Tensor, b: float, val: float):
    """Runs of two examples: (a, b) in the split ``val`` and a = 0 in the other, so each split
    has one example of weight n / n_split = 2, as in a half split."""
    runs = a.shape[0]
    return {"a": torch.stack([a, torch.zeros_like(a)], 1),
            "b": torch.full((runs, 2), b, dtype=torch.float64),
            "val": torch.tensor([val, 1 - val], dtype=torch.float64).expand(runs, 2)}


@pytest.mark.parametrize("name", ["pb_group_ridge", "pc_logistic_tuning", "pc_ridge_tuning"])
def test_example_dependent_bounds_are_attained_and_not_exceeded(name):
    """l0f_y and l0g_y (what the OP inner releases' sensitivities rest on) bound the part of
    grad_y f and grad_y g that an example changes, measured against the example a = 0, over
    y on the boundary of Y and extreme examples (a = -+ y / ||y||, b = -+1, either split);
    the bounds are attained within 10%, so a constant set below its true value fails."""
    problem, _, _, _, x = _setup(name)
    c, d_y = problem.constants, problem.y.dim
    y = problem.y.radius * torch.nn.functional.normalize(
        torch.randn(8, d_y, generator=make_generator(4, "y"), dtype=torch.float64), dim=-1)
    xs = x.expand(8, -1)
    largest = {"f": 0.0, "g": 0.0}
    for sign in (-1.0, 1.0):
        for b in (-1.0, 1.0):
            for val in (0.0, 1.0):
                extreme = _split_pair(sign * torch.nn.functional.normalize(y, dim=-1), b, val)
                null = _split_pair(torch.zeros_like(y), b, val)
                for level in largest:
                    part = (problem.per_example_grad(level, "y", xs, y, extreme)
                            - problem.per_example_grad(level, "y", xs, y, null))[:, 0]
                    largest[level] = max(largest[level],
                                         float(torch.linalg.vector_norm(part, dim=-1).max()))
    for level, bound in (("f", c.l0f_y), ("g", c.l0g_y)):
        assert 0.9 * bound <= largest[level] <= bound * (1 + 1e-12), (level, largest, bound)


def test_penalty_lemmas_have_slope_minus_one_in_lambda_on_pa():
    """Lemma 8.5 (with its bound) and Lemma 4.3 (ii), measured on P-A."""
    problem, _, _, stats, x = _setup("pa_linear_response", n=300)
    c = problem.constants
    lams = np.geomspace(10.0, 1e4, 8)
    gaps, biases = [], []
    for lam in lams:
        lam_t = torch.tensor([lam], dtype=torch.float64)
        gap = float(torch.linalg.vector_norm(problem.penalty_solution(x, lam_t, stats)
                                             - problem.inner_solution(x, stats)))
        assert gap <= c.l0f / (lam * c.mu_g)
        gaps.append(gap)
        biases.append(float(torch.linalg.vector_norm(problem.penalty_gradient(x, lam_t, stats)
                                                     - problem.hypergradient(x, stats))))
    for values in (gaps, biases):
        slope = np.polyfit(np.log(lams), np.log(values), 1)[0]
        assert slope == pytest.approx(-1.0, abs=0.02)


def test_inner_solution_moves_at_most_its_output_sensitivity_on_neighbours():
    """The replace-one stability 2 L0g / (mu_g n) behind the OP inner release."""
    problem, sample, _, _, x = _setup("pa_linear_response", n=50)
    fresh = problem.sample(1, make_generator(9, "fresh"))
    other = {k: torch.cat([fresh[k], v[1:]]) for k, v in sample.items()}
    c = problem.constants
    moved = (problem.inner_solution(x, problem.statistics({k: v[None] for k, v in
                                                           sample.items()}))
             - problem.inner_solution(x, problem.statistics({k: v[None] for k, v in
                                                             other.items()})))
    assert 0 < float(torch.linalg.vector_norm(moved)) <= 2 * c.l0g / (c.mu_g * 50)


def test_pa_population_statistics_match_a_large_fresh_sample():
    """E4's F_P on P-A: E s = 1/2, E u, E v, E ||v||^2 (exact part plus the projection's
    Monte Carlo correction) within 4 standard errors of 400,000 fresh examples."""
    problem = get_bilevel_problem("pa_linear_response", d_x=3, d_y=5, seed=0)
    population = problem.population_statistics()
    fresh = problem.sample(400_000, make_generator(11, "fresh"))
    values = {"s": fresh["s"], "u": fresh["u"], "v": fresh["v"],
              "v_sq": (fresh["v"] ** 2).sum(-1, keepdim=True)}
    for key, draws in values.items():
        error = (draws.mean(0) - population[key][0].reshape(-1)).abs()
        standard_error = draws.std(0) / len(draws) ** 0.5
        assert bool((error <= 4 * standard_error).all()), key


#: The (d_x, d_y) of the dimension sweeps e3_dx and e3_dy.
SWEEP_DIMS = ((1, 16), (2, 16), (4, 16), (16, 16), (4, 4), (4, 64))


def _start_gradient(d_x: int, d_y: int, **kwargs) -> float:
    problem = get_bilevel_problem("pa_linear_response", d_x=d_x, d_y=d_y, seed=0, **kwargs)
    x0 = torch.zeros(1, d_x, dtype=torch.float64)
    return float(torch.linalg.vector_norm(
        problem.hypergradient(x0, problem.population_statistics())))


def test_pa_start_gradient_is_held_across_the_sweep_dimensions():
    """P-A's default draw gives ||grad F_P(0)|| ~ (a / 2) ||u0 - v0|| sqrt(d_x / d_y): 0.41 at
    (4, 4), 0.089 at (4, 64); with start_gradient 0.2 it is 0.2 (to the unit-ball
    projection's correction) at every (d_x, d_y) of the sweeps, and the rest of the instance
    (M0, the constants) is the default's."""
    drawn = [_start_gradient(d_x, d_y) for d_x, d_y in SWEEP_DIMS]
    assert max(drawn) / min(drawn) > 4
    held = [_start_gradient(d_x, d_y, start_gradient=0.2) for d_x, d_y in SWEEP_DIMS]
    assert held == pytest.approx([0.2] * len(SWEEP_DIMS), rel=0.01)
    for d_x, d_y in SWEEP_DIMS:
        spec, fixed = (get_bilevel_problem("pa_linear_response", d_x=d_x, d_y=d_y, seed=0,
                                           **kwargs)
                       for kwargs in ({}, {"start_gradient": 0.2}))
        assert torch.equal(spec.m0, fixed.m0) and spec.constants == fixed.constants
        assert float(torch.linalg.vector_norm(fixed.u0)) <= 0.5 + 1e-12
    with pytest.raises(ValueError, match="start_gradient"):
        get_bilevel_problem("pa_linear_response", d_x=4, d_y=16, start_gradient=0.6)
