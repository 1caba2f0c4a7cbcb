"""The private inner solvers (Alg. 2, output perturbation; E2 reduced): on the strongly convex lower
level of P-D (mean estimation, ||y - xi||^2 / 2: mu = 1, L = 3 on Y), the error of DP-Loc-GD
(Alg. 2) and of output perturbation shrinks like Thm. 8.2's L sqrt(d) / (mu n eps'), i.e. as
1 / n at a fixed budget, and DP-Loc-GD stays within its high-probability radius R_M."""

from __future__ import annotations

import numpy as np
import torch

from dpminimax.algorithms.bilevel.bilevel_inner import (
    Subproblem,
    loc_gd,
    loc_gd_schedule,
    outside_ball,
    project_ball,
    subproblems,
)
from dpminimax.kernels.sampling import take_batch
from dpminimax.privacy.release import BatchedRelease, Release
from dpminimax.problems import LeakExample
from dpminimax.seeding import make_generator

D, RUNS, RHO, EPS_CALL, SIZES = 4, 16, 0.05, 0.5, (100, 800)


def _samples(problem: LeakExample, n: int) -> dict[str, torch.Tensor]:
    return {"xi": torch.stack([problem.sample(n, make_generator(seed, "data"))["xi"]
                               for seed in range(RUNS)])}


def _generators(n: int) -> list[torch.Generator]:
    return [make_generator(seed, f"noise_{n}") for seed in range(RUNS)]


def _loc_gd(n: int, every_example_batch: bool = False):
    """DP-Loc-GD (Alg. 2) on P-D's lower level for RUNS runs, or Alg. 4's path (a sampler)
    with batches that hold every example: (output, exact solution, the radius bound R_M)."""
    problem = LeakExample(D)
    sub = subproblems(problem.constants, problem.constants.lambda_min)["y"]
    schedule = loc_gd_schedule(sub, n, D, RHO, EPS_CALL, 0.05, steps=100)
    release = BatchedRelease([Release("inner_y", "gaussian", schedule.multiplier,
                                      2 * sub.lipschitz, sub.lipschitz)] * RUNS,
                             dtype=torch.float64)
    examples = _samples(problem, n)
    x = torch.zeros(RUNS, D, dtype=torch.float64)

    def grads(y, index):
        batch = examples if index is None else take_batch(examples, index)
        return problem.per_example_grad("g", "y", x, y, batch)

    def sampler():
        return (torch.arange(n).expand(RUNS, n), torch.ones(RUNS, n, dtype=torch.bool))

    full = lambda value: torch.full((RUNS,), value, dtype=torch.float64)  # noqa: E731
    radii = torch.tensor([schedule.radii] * RUNS, dtype=torch.float64)
    out = loc_gd(grads, torch.zeros_like(x), full(sub.mu), radii,
                 schedule.steps, release, _generators(n),
                 *((sampler, full(n)) if every_example_batch else ()))
    return out, problem.inner_solution(x, problem.statistics(examples)), schedule.error_bound


def _loc_gd_errors(n: int) -> tuple[np.ndarray, float]:
    out, exact, bound = _loc_gd(n)
    return torch.linalg.vector_norm(out - exact, dim=-1).numpy(), bound


def test_loc_sgd_with_every_example_in_every_batch_is_loc_gd():
    """Alg. 4's step divides the batch's noisy sum by the expected batch size q n: with q = 1
    it is Alg. 2's step, the same noise and the same output."""
    torch.testing.assert_close(_loc_gd(100, every_example_batch=True)[0], _loc_gd(100)[0],
                               rtol=0, atol=1e-12)


def _op_errors(n: int) -> np.ndarray:
    sub = Subproblem(1.0, 3.0, 3.0)
    release = BatchedRelease([Release("inner_y", "gaussian", 1 / np.sqrt(2 * RHO),
                                      sub.output_sensitivity(n))] * RUNS)
    zeros = torch.zeros(RUNS, D, dtype=torch.float64)
    return torch.linalg.vector_norm(release.perturb(zeros, _generators(n)), dim=-1).numpy()


def test_loc_gd_error_shrinks_like_one_over_n_and_stays_within_its_radius():
    errors = {n: _loc_gd_errors(n) for n in SIZES}
    for error, bound in errors.values():
        assert error.max() <= bound
    ratio = np.median(errors[SIZES[0]][0]) / np.median(errors[SIZES[1]][0])
    assert SIZES[1] / SIZES[0] / 2 <= ratio <= 2 * SIZES[1] / SIZES[0]


def test_output_perturbation_error_matches_the_theorem_8_2_shape():
    """sigma_op sqrt(d) = (2 L / (mu n)) sqrt(d / (2 rho)): the median error times n is flat."""
    scaled = [np.median(_op_errors(n)) * n / (2 * 3.0 * np.sqrt(D / (2 * RHO)))
              for n in SIZES]
    assert 0.5 <= scaled[0] / scaled[1] <= 2.0
    assert all(0.5 <= value <= 1.5 for value in scaled)


def test_outside_ball_counts_only_points_the_projection_moves():
    """A point project_ball already returned (on the sphere up to round-off) or one strictly
    inside is not outside; one beyond the radius by a relative 1e-9 is."""
    generator = make_generator(0, "ball")
    center = 5.0 * torch.randn(200, D, generator=generator, dtype=torch.float64)
    gap = torch.randn(200, D, generator=generator, dtype=torch.float64)
    radius = 0.5 + torch.rand(200, generator=generator, dtype=torch.float64)
    unit = gap / torch.linalg.vector_norm(gap, dim=-1, keepdim=True)
    projected = project_ball(center + 3.0 * radius.unsqueeze(-1) * unit, center, radius)
    assert not bool(outside_ball(projected, center, radius).any())
    assert not bool(outside_ball(center + 0.9 * radius.unsqueeze(-1) * unit, center,
                                 radius).any())
    assert bool(outside_ball(center + (1 + 1e-9) * radius.unsqueeze(-1) * unit, center,
                             radius).all())
