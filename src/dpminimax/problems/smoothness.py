"""P3 (our testbed): regression with tunable smoothness, for Alg. 2's gradient complexity and
H5 (experiment E3).

m atoms a_j = r_a u_j (u_j uniform on the sphere, m >= d, so they span R^d almost surely) drawn
uniformly; b = <a, w*> + eta with eta uniform on {-s, 0, s} (symmetric, bounded, finite
support: our choice of law; the atom at 0 keeps the population curvature at w* of
order 1 / tau however small tau is); f(x; a, b) = tau log cosh((<a, x> - b) / tau). The score
tanh is odd and eta symmetric, so x* = w*; F is the exact finite sum over atoms and noise
levels. Constants: L = r_a (|tanh| <= 1, on all of R^d, independent of tau), l = r_a^2 / tau,
mu = 0, so l D / L = r_a D / tau. X = R^d with D = ||w*|| (Thm. 3.7 needs only ||x*|| <= D), or
the ball of ``radius`` > ||w*|| (then D = radius).
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Block, Constants, Examples, Point, Problem, Prox, sphere
from dpminimax.problems.logistic import NoEmpiricalMinimizer
from dpminimax.problems.newton import GeneralizedLinear, ball_solution, log_cosh, minimize
from dpminimax.seeding import make_generator


class LogCoshRegression(Problem):
    """P3; the instance (atoms, the direction of w*, of norm ``w_norm``) is fixed by ``seed``."""

    def __init__(self, d: int = 10, atoms: int | None = None, r_a: float = 1.0, s: float = 0.5,
                 tau: float = 0.5, w_norm: float = 1.0, radius: float | None = None,
                 seed: int = 0, dtype: torch.dtype = torch.float64) -> None:
        radius = math.inf if radius is None else radius
        if radius <= w_norm:
            raise ValueError(f"the ball (radius {radius}) must contain x* = w* (norm {w_norm})")
        super().__init__((Block("x", d, radius),), dtype=dtype)
        self.d, self.r_a, self.s, self.tau, self.w_norm = d, r_a, s, tau, w_norm
        generator = make_generator(seed, "problem")
        self.w_star = w_norm * sphere(1, d, generator, dtype)[0]
        self.atoms = r_a * sphere(2 * d if atoms is None else atoms, d, generator, dtype)
        self.levels = torch.tensor([-s, 0.0, s], dtype=dtype)

    @property
    def constants(self) -> Constants:
        radius = self.blocks[0].radius
        return Constants(lipschitz=self.r_a, smoothness=self.r_a ** 2 / self.tau,
                         strong_convexity={"x": 0.0},
                         diameter=self.w_norm if math.isinf(radius) else radius)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        a = self.atoms[torch.randint(len(self.atoms), (n,), generator=generator)]
        noise = self.levels[torch.randint(len(self.levels), (n,), generator=generator)]
        return {"a": a, "b": a @ self.w_star + noise}

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        return log_cosh(self.tau).value(example["a"] @ point["x"] - example["b"])

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        residual = torch.einsum("rbd,rd->rb", examples["a"], point["x"]) - examples["b"]
        return {"x": torch.tanh(residual / self.tau).unsqueeze(-1) * examples["a"]}

    def population_objective(self, point: Point) -> torch.Tensor:
        """F(x) (R,), the exact finite sum over the atoms and the noise levels."""
        z = (point["x"] - self.w_star) @ self.atoms.T
        return log_cosh(self.tau).value(z.unsqueeze(-1) - self.levels).mean(dim=(-2, -1))

    def population_solution(self) -> Point:
        return {"x": self.w_star.clone()}

    def empirical_solution(self, examples: Examples, prox: Prox | None = None) -> Point:
        """argmin over X of the empirical objective (plus the proximal term): the sample folded
        into its distinct examples with their frequencies, then damped Newton with continuation
        in tau (tau_0 >= the largest initial residual, halved down to tau; each stage starts at
        the previous solution, where the curvature sech^2 / tau is not lost to underflow), on a
        ball through its multiplier (:func:`~dpminimax.problems.newton.ball_solution`).
        :class:`NoEmpiricalMinimizer` where none may exist: no proximal term and the sample's
        atoms do not span R^d."""
        rows, counts = torch.unique(torch.cat([examples["a"], examples["b"].unsqueeze(1)], 1),
                                    dim=0, return_counts=True)
        a, b = rows[:, :-1], rows[:, -1]
        weights = counts.to(rows.dtype) / counts.sum()
        modulus = 0.0 if prox is None else float(prox[1]["x"])
        center = torch.zeros(self.d, dtype=rows.dtype, device=rows.device) if prox is None \
            else prox[0]["x"].to(rows)
        if modulus == 0 and int(torch.linalg.matrix_rank(a)) < self.d:
            raise NoEmpiricalMinimizer("the sample's atoms do not span R^d: the empirical "
                                       "objective has no unique minimizer")
        radius = self.blocks[0].radius
        start = self.blocks[0].project(center)
        largest = float((a @ start - b).abs().max())
        stages = max(0, math.ceil(math.log2(max(largest, self.tau) / self.tau)))
        escape = 100.0 * (1.0 + radius)

        def solve(nu: float) -> torch.Tensor:
            x = start
            for k in range(stages, -1, -1):
                objective = GeneralizedLinear(log_cosh(self.tau * 2 ** k), a, b, weights,
                                              torch.zeros_like(center), modulus, center)
                x = minimize(objective.shifted(nu), x, escape)
            return x

        return {"x": ball_solution(solve, lambda x: float(torch.linalg.vector_norm(x)),
                                   radius)}

    def excess_risk(self, point: Point, examples: Examples | None = None) -> torch.Tensor:
        """F(x) - F(x*) (R,) on the population (exact) or on ``examples`` (n, ...); NaN on a
        sample whose empirical objective has no minimizer."""
        if examples is None:
            best = {"x": self.w_star.unsqueeze(0)}
            return self.population_objective(point) - self.population_objective(best)
        try:
            return self.empirical_excess_risk(point, examples)
        except NoEmpiricalMinimizer:
            return torch.full((point["x"].shape[0],), math.nan, dtype=self.dtype)
