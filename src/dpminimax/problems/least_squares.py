"""P1 (our testbed): strongly convex least squares on a ball, for Alg. 1.

a = r_a u with u uniform on the sphere S^{d-1}, b = <a, w*> + eta with eta ~ U[-s, s],
f(x; a, b) = (<a, x> - b)^2 / 2 + lam ||x||^2 / 2 on X = {||x|| <= R}. Population:
F(x) = (r_a^2 / d) ||x - w*||^2 / 2 + s^2 / 6 + lam ||x||^2 / 2, x* = c w* with
c = (r_a^2/d) / (r_a^2/d + lam), excess risk (r_a^2/d + lam) ||x - x*||^2 / 2. Constants:
mu = lam, l = r_a^2 + lam, L = r_a (r_a R + r_a ||w*|| + s) + lam R.
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Block, Constants, Examples, Point, Problem, Prox, sphere
from dpminimax.seeding import make_generator


class LeastSquares(Problem):
    """P1; the instance (the direction of w*, of norm ``w_norm``) is fixed by ``seed``; the
    radius defaults to twice ||w*|| (x* = c w* is interior with margin)."""

    def __init__(self, d: int = 10, r_a: float = 1.0, s: float = 0.5, lam: float = 0.1,
                 w_norm: float = 1.0, radius: float | None = None, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__((Block("x", d, 2.0 * w_norm if radius is None else radius),),
                         dtype=dtype)
        self.d, self.r_a, self.s, self.lam = d, r_a, s, lam
        self.w_star = w_norm * sphere(1, d, make_generator(seed, "problem"), dtype)[0]

    @property
    def curvature(self) -> float:
        """r_a^2 / d + lam: the population Hessian is this times the identity."""
        return self.r_a ** 2 / self.d + self.lam

    @property
    def constants(self) -> Constants:
        radius = self.blocks[0].radius
        w_norm = float(torch.linalg.vector_norm(self.w_star))
        return Constants(
            lipschitz=self.r_a * (self.r_a * radius + self.r_a * w_norm + self.s)
            + self.lam * radius,
            smoothness=self.r_a ** 2 + self.lam, strong_convexity={"x": self.lam},
            diameter=radius)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        a = self.r_a * sphere(n, self.d, generator, self.dtype)
        noise = (2.0 * torch.rand(n, generator=generator, dtype=self.dtype) - 1.0) * self.s
        return {"a": a, "b": a @ self.w_star + noise}

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        x = point["x"]
        return 0.5 * (example["a"] @ x - example["b"]) ** 2 + 0.5 * self.lam * (x @ x)

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        x = point["x"]
        residual = torch.einsum("rbd,rd->rb", examples["a"], x) - examples["b"]
        return {"x": residual.unsqueeze(-1) * examples["a"] + self.lam * x.unsqueeze(1)}

    def population_objective(self, point: Point) -> torch.Tensor:
        x = point["x"]
        gap = x - self.w_star
        return (0.5 * self.r_a ** 2 / self.d * (gap * gap).sum(-1) + self.s ** 2 / 6.0
                + 0.5 * self.lam * (x * x).sum(-1))

    def population_solution(self) -> Point:
        return {"x": (self.r_a ** 2 / self.d) / self.curvature * self.w_star}

    def empirical_solution(self, examples: Examples, prox: Prox | None = None) -> Point:
        """argmin over the ball of the empirical objective (plus the proximal term): the
        solution of H x = g, or on the boundary the point with ||x(nu)|| = R,
        x(nu) = (H + nu I)^{-1} g (bisection on nu)."""
        a, b = examples["a"], examples["b"]
        n = len(b)
        hessian = a.T @ a / n + self.lam * torch.eye(self.d, dtype=self.dtype)
        target = a.T @ b / n
        if prox is not None:
            centers, moduli = prox
            hessian = hessian + moduli["x"] * torch.eye(self.d, dtype=self.dtype)
            target = target + moduli["x"] * centers["x"]
        x = torch.linalg.solve(hessian, target)
        radius = self.blocks[0].radius
        if math.isinf(radius) or float(torch.linalg.vector_norm(x)) <= radius:
            return {"x": x}
        low, high = 0.0, float(torch.linalg.vector_norm(target)) / radius
        for _ in range(200):
            nu = 0.5 * (low + high)
            x = torch.linalg.solve(hessian + nu * torch.eye(self.d, dtype=self.dtype), target)
            low, high = (nu, high) if float(torch.linalg.vector_norm(x)) > radius else (low, nu)
        return {"x": x}

    def excess_risk(self, point: Point, examples: Examples | None = None) -> torch.Tensor:
        """F(x) - F(x*) (R,) on the population (closed form) or on ``examples`` (n, ...)."""
        if examples is None:
            gap = point["x"] - self.population_solution()["x"]
            return 0.5 * self.curvature * (gap * gap).sum(-1)
        return self.empirical_excess_risk(point, examples)


class ConvexLeastSquares(LeastSquares):
    """P1 without the ridge term (lam = 0): convex, not strongly convex (for Alg. 2)."""

    def __init__(self, d: int = 10, r_a: float = 1.0, s: float = 0.5, w_norm: float = 1.0,
                 radius: float | None = None, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__(d, r_a, s, 0.0, w_norm, radius, seed, dtype)
