"""The base solvers of BYOA (those of Table 2): every solver returns a point whose TRUE
distance to the exact subproblem solution is within the requested radius (P1 with and without
a proximal term, with the solution inside the ball and on its boundary; G1; G2 with a proximal
term), the certificate is an upper bound on that distance, the gradient counts are in
per-sample oracle calls, SVRG's count per sample hardly grows with n while GD's grows with
the conditioning."""

from __future__ import annotations

import math

import pytest
import torch

from dpminimax.problems import get_problem
from dpminimax.problems.least_squares import LeastSquares
from dpminimax.seeding import make_generator
from dpminimax.solvers import SOLVERS, SolverError, Subproblem, Target, check_solver, solve
from dpminimax.solvers.base import certificate

N = 512


def _vector(problem, seed, scale):
    return scale * torch.randn(problem.d, generator=make_generator(seed, "center"),
                               dtype=torch.float64)


def _case(name):
    """(problem, examples, prox, weights) of a named subproblem."""
    if name == "p1":
        problem, prox, weights = get_problem("p1_least_squares", seed=1), None, None
    elif name == "p1_prox":
        problem = get_problem("p1_convex_least_squares", seed=1)
        prox, weights = ({"x": _vector(problem, 0, 0.3)}, {"x": 0.2}), None
    elif name == "p1_boundary":  # the prox center far outside the ball: x* on the boundary
        problem = get_problem("p1_convex_least_squares", seed=1)
        prox, weights = ({"x": _vector(problem, 0, 3.0)}, {"x": 0.5}), None
    elif name == "g1":
        problem, prox = get_problem("g1_quadratic_game", seed=1), None
        weights = dict(problem.constants.strong_convexity)
    else:  # g2 with a proximal term of distinct moduli (as in Alg. 4)
        problem = get_problem("g2_bilinear_game", seed=1)
        moduli = {"x": 0.4, "y": 0.2}
        prox = ({"x": _vector(problem, 1, 0.2), "y": _vector(problem, 2, 0.2)}, moduli)
        weights = moduli
    return problem, problem.sample(N, make_generator(1, "data")), prox, weights


CASES = ("p1", "p1_prox", "p1_boundary", "g1", "g2_prox")


def _bound(problem, examples, prox, target, point):
    """The certificate at ``point`` (blocks (dim,)) of one run's subproblem."""
    subproblem = Subproblem(problem, {key: value.unsqueeze(0) for key, value in examples.items()},
                            [prox], [target], [make_generator(0, "s")], budget=10 ** 9)
    runs = {b: z.unsqueeze(0) for b, z in point.items()}
    return float(certificate(subproblem, runs, subproblem.operator(runs))[0])


def _distance(point, exact, weights=None):
    return math.sqrt(sum((1.0 if weights is None else weights[b])
                         * float((point[b] - exact[b]).square().sum()) for b in exact))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_every_solver_is_within_the_radius_of_the_exact_solution(case, solver):
    problem, examples, prox, weights = _case(case)
    if problem.maximized and not SOLVERS[solver].saddle:
        with pytest.raises(ValueError, match="minimizes"):
            check_solver(solver, problem)
        return
    exact = problem.empirical_solution(examples, prox)
    boundary = case == "p1_boundary"
    for block in problem.blocks:  # the exact solution is interior, or on the ball when meant
        assert (float(exact[block.name].norm()) >= block.radius * (1 - 1e-9)) == boundary
    target = Target(1e-3, weights)
    point, evaluations = solve(solver, problem, examples, prox, target,
                               make_generator(0, "solver"))
    assert _distance(point, exact, weights) <= target.radius
    assert all(float(point[b.name].norm()) <= b.radius * (1 + 1e-12) for b in problem.blocks)
    assert evaluations is None if solver == "exact" else evaluations >= N


@pytest.mark.parametrize("case", CASES)
def test_the_certificate_bounds_the_true_distance(case):
    """At feasible points 10^-k away from the exact solution (k = 0..5) in random directions,
    the certificate (weighted as the target) is >= the true distance, and it vanishes at the
    solution."""
    problem, examples, prox, weights = _case(case)
    exact = problem.empirical_solution(examples, prox)
    target = Target(1.0, weights)
    generator = make_generator(0, "points")
    for k in range(60):
        point = problem.feasible({b: z + 10.0 ** -(k % 6) * torch.randn(
            z.shape, generator=generator, dtype=z.dtype) for b, z in exact.items()})
        assert _distance(point, exact, weights) <= _bound(problem, examples, prox, target, point)
    assert _bound(problem, examples, prox, target, problem.feasible(exact)) < 1e-8


def test_gradient_descent_counts_n_per_step_plus_the_last_certificate():
    """A point already certified costs one full gradient (n); otherwise GD (step 1 / L_G)
    costs n x (steps + 1), the steps counted by the loop written out."""
    problem, examples, prox, _ = _case("p1_prox")
    start = {"x": torch.zeros(problem.d, dtype=torch.float64)}
    generator = make_generator(0, "solver")
    _, evaluations = solve("gd", problem, examples, prox, 1e9, generator, start=start)
    assert evaluations == N
    radius = 1e-4
    point, steps = start, 0
    while _bound(problem, examples, prox, Target(radius), point) > radius:
        gradient = problem.per_example_grads({"x": point["x"][None]}, {
            key: value[None] for key, value in examples.items()})["x"][0].mean(0)
        gradient = gradient + 0.2 * (point["x"] - prox[0]["x"])
        point = {"x": problem.block("x").project(point["x"] - gradient / (0.2 + 1.0))}
        steps += 1
    solved, evaluations = solve("gd", problem, examples, prox, radius, generator, start=start)
    assert steps > 10 and evaluations == N * (steps + 1)
    torch.testing.assert_close(solved["x"], point["x"], rtol=0, atol=0)


@pytest.mark.parametrize(("solver", "epoch"), [("svrg", 5), ("katyusha", 5),
                                               ("extragradient", 2)])
def test_counts_follow_the_pseudocode(solver, epoch):
    """SVRG and Katyusha: n + 2m = 5n per epoch (m = 2n) plus the last certificate;
    extragradient: 2n per iteration plus the last certificate."""
    problem, examples, prox, _ = _case("p1")
    _, evaluations = solve(solver, problem, examples, prox, 1e-3, make_generator(0, "s"))
    assert evaluations % (epoch * N) == N and evaluations > N


@pytest.mark.parametrize("solver", ["agd", "svrg", "katyusha"])
def test_an_ill_conditioned_problem_with_few_samples(solver):
    """kappa = l / mu = 1001 > 15 n (n = 64: Katyusha's tau_1 < 1/2 branch, SVRG's epochs
    shorter than kappa): still within the radius."""
    problem = LeastSquares(lam=1e-3, seed=4)
    examples = problem.sample(64, make_generator(4, "data"))
    point, _ = solve(solver, problem, examples, None, 1e-3, make_generator(4, "solver"))
    assert _distance(point, problem.empirical_solution(examples)) <= 1e-3


def test_the_solver_stream_fixes_the_result():
    problem, examples, prox, _ = _case("p1_prox")
    first, second, other = (solve("svrg", problem, examples, prox, 1e-3, make_generator(
        seed, "solver")) for seed in (0, 0, 1))
    assert first.gradient_evaluations == second.gradient_evaluations
    torch.testing.assert_close(first.point["x"], second.point["x"], rtol=0, atol=0)
    assert not torch.equal(first.point["x"], other.point["x"])


def test_palaniappan_bach_epoch_length():
    """P-B SVRG: m = max(n, ceil(8 l'^2 / m_min^2)) inner steps per epoch, n + 2m per epoch."""
    problem, examples, prox, weights = _case("g2_prox")
    inner = max(N, math.ceil(8 * problem.constants.smoothness ** 2 / 0.2 ** 2))
    _, evaluations = solve("pb_svrg", problem, examples, prox, Target(1e-3, weights),
                           make_generator(0, "s"))
    assert (evaluations - N) % (N + 2 * inner) == 0 and evaluations > N


def test_svrg_cost_per_sample_hardly_grows_with_n():
    """Alg. 1's radius L / (mu n) on P1 (kappa = l / mu = 11): SVRG's evaluations per sample
    at n = 2^13 are within a factor 2 of those at n = 2^10 (its O((n + kappa) log(n / delta))),
    and every run is within the radius."""
    problem = get_problem("p1_least_squares", seed=2)
    constants = problem.constants
    per_sample = []
    for n in (2 ** 10, 2 ** 13):
        examples = problem.sample(n, make_generator(n, "data"))
        radius = constants.lipschitz / (constants.strong_convexity["x"] * n)
        point, evaluations = solve("svrg", problem, examples, None, radius,
                                   make_generator(n, "solver"))
        assert _distance(point, problem.empirical_solution(examples)) <= radius
        per_sample.append(evaluations / n)
    assert per_sample[1] <= 2 * per_sample[0]


def test_gradient_descent_cost_grows_with_the_condition_number():
    """GD's O(kappa log(1 / radius)) passes: kappa = l / mu from 2 (lam = 1) to 101
    (lam = 0.01) multiplies them by more than 5 at a fixed radius."""
    passes = []
    for lam in (1.0, 0.01):
        problem = LeastSquares(lam=lam, seed=3)
        examples = problem.sample(N, make_generator(3, "data"))
        _, evaluations = solve("gd", problem, examples, None, 1e-4, make_generator(3, "s"))
        passes.append(evaluations / N)
    assert passes[1] > 5 * passes[0]


def test_an_uncertified_point_is_never_returned():
    problem, examples, prox, _ = _case("p1")
    with pytest.raises(SolverError, match="'gd'.*no certified point within 2048"):
        solve("gd", problem, examples, prox, 1e-12, make_generator(0, "s"), max_passes=4)


@pytest.mark.parametrize("solver", ["gd", "agd"])
def test_a_radius_below_rounding_is_never_certified(solver):
    """Once a step G / l_G is below z's last digit the computed natural residual is 0; the
    certificate's rounding term keeps it from certifying a radius finer than float64 can
    resolve (AGD converged to such a point and certified 1e-20 without it)."""
    problem, examples, prox, _ = _case("p1")
    with pytest.raises(SolverError, match="no certified point"):
        solve(solver, problem, examples, prox, 1e-20, make_generator(0, "s"), max_passes=2000)


def test_refusals():
    problem = get_problem("g2_bilinear_game", seed=0)
    examples = problem.sample(16, make_generator(0, "data"))
    with pytest.raises(ValueError, match="strongly monotone"):
        solve("extragradient", problem, examples, None, 1.0, make_generator(0, "s"))
    with pytest.raises(ValueError, match="unknown solver"):
        check_solver("sarah", problem)
