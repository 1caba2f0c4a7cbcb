"""P2 (our testbed): well-specified logistic regression on a finite support, for Alg. 2; with
a ridge term on a ball (P2-SC), for Alg. 1.

m atoms a_j = r_a u_j (u_j uniform on the sphere, m >= d, so they span R^d almost surely),
drawn uniformly; b = +1 with probability sigma(<a_j, w*>), else -1; f(x; a, b) =
log(1 + exp(-b <a, x>)) + lam ||x||^2 / 2. The population objective is the exact finite sum
F(x) = (1/m) sum_j [p_j softplus(-<a_j, x>) + (1 - p_j) softplus(<a_j, x>)] + lam ||x||^2 / 2,
p_j = sigma(<a_j, w*>). Without the ridge, x* = w* (well-specified and identifiable); with it,
x* by Newton's method. Constants: L = r_a + lam R, l = r_a^2 / 4 + lam, mu = lam; D = ||w*||
for P2 (X = R^d: Thm. 3.7 needs only ||x*|| <= D), the ball's radius R for P2-SC, chosen with
R >= sqrt(2 log 2 / lam) so that every regularized empirical minimizer is inside it (its
objective is at most F_S(0) = log 2).
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Block, Constants, Examples, Point, Problem, Prox, sphere
from dpminimax.problems.newton import SOFTPLUS, GeneralizedLinear, minimize
from dpminimax.seeding import make_generator


class NoEmpiricalMinimizer(ValueError):
    """The unregularized empirical objective may have no (unique) minimizer: an atom of the
    problem is missing from the sample or carries one label only there."""


class LogisticRegression(Problem):
    """P2; the instance (atoms and the direction of w*, of norm ``w_norm``) is fixed by
    ``seed``."""

    def __init__(self, d: int = 10, atoms: int | None = None, r_a: float = 1.0,
                 w_norm: float = 1.0, lam: float = 0.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        radius = math.inf if lam == 0 else max(2.0 * w_norm, math.sqrt(2 * math.log(2) / lam))
        super().__init__((Block("x", d, radius),), dtype=dtype)
        self.d, self.r_a, self.w_norm, self.lam = d, r_a, w_norm, lam
        generator = make_generator(seed, "problem")
        self.w_star = w_norm * sphere(1, d, generator, dtype)[0]
        self.atoms = r_a * sphere(2 * d if atoms is None else atoms, d, generator, dtype)
        self.positive = torch.sigmoid(self.atoms @ self.w_star)

    @property
    def constants(self) -> Constants:
        radius = self.blocks[0].radius
        return Constants(
            lipschitz=self.r_a + (self.lam * radius if self.lam else 0.0),
            smoothness=self.r_a ** 2 / 4 + self.lam, strong_convexity={"x": self.lam},
            diameter=self.w_norm if math.isinf(radius) else radius)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        index = torch.randint(len(self.atoms), (n,), generator=generator)
        positive = torch.rand(n, generator=generator, dtype=self.dtype) < self.positive[index]
        return {"a": self.atoms[index],
                "b": torch.where(positive, 1.0, -1.0).to(self.dtype)}

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        x = point["x"]
        return (torch.nn.functional.softplus(-example["b"] * (example["a"] @ x))
                + 0.5 * self.lam * (x @ x))

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        x = point["x"]
        margin = examples["b"] * torch.einsum("rbd,rd->rb", examples["a"], x)
        weight = -examples["b"] * torch.sigmoid(-margin)
        return {"x": weight.unsqueeze(-1) * examples["a"] + self.lam * x.unsqueeze(1)}

    def population_objective(self, point: Point) -> torch.Tensor:
        """F(x) (R,), the exact finite sum over the atoms."""
        x = point["x"]
        z = x @ self.atoms.T
        softplus = torch.nn.functional.softplus
        return ((self.positive * softplus(-z) + (1 - self.positive) * softplus(z)).mean(-1)
                + 0.5 * self.lam * (x * x).sum(-1))

    def population_solution(self) -> Point:
        if self.lam == 0:
            return {"x": self.w_star.clone()}
        labels = torch.cat([torch.ones(len(self.atoms)), -torch.ones(len(self.atoms))])
        weights = torch.cat([self.positive, 1 - self.positive]) / len(self.atoms)
        return {"x": self._newton(torch.cat([self.atoms, self.atoms]), labels.to(self.dtype),
                                  weights, self.lam, None)}

    def empirical_solution(self, examples: Examples, prox: Prox | None = None) -> Point:
        """argmin of the empirical objective (plus the proximal term) by Newton's method;
        :class:`NoEmpiricalMinimizer` where it may have none (no ridge, no prox, and an atom
        missing from the sample or seen with one label only)."""
        a, b = examples["a"], examples["b"]
        modulus = self.lam + (prox[1]["x"] if prox is not None else 0.0)
        if modulus == 0 and not self._both_labels_everywhere(a, b):
            raise NoEmpiricalMinimizer(
                "an atom is missing from the sample or carries one label only there: the "
                "empirical logistic loss may have no (unique) minimizer")
        center = None if prox is None else (prox[1]["x"], prox[0]["x"])
        weights = torch.full((len(b),), 1.0 / len(b), dtype=self.dtype)
        x = self._newton(a, b, weights, self.lam, center)
        if float(torch.linalg.vector_norm(x)) > self.blocks[0].radius:
            raise ValueError("the proximal subproblem's minimizer lies outside the ball")
        return {"x": x}

    def excess_risk(self, point: Point, examples: Examples | None = None) -> torch.Tensor:
        """F(x) - F(x*) (R,) on the population (exact) or on ``examples`` (n, ...); NaN on a
        sample whose empirical objective has no minimizer."""
        if examples is None:
            best = {"x": self.population_solution()["x"].unsqueeze(0)}
            return self.population_objective(point) - self.population_objective(best)
        try:
            return self.empirical_excess_risk(point, examples)
        except NoEmpiricalMinimizer:
            return torch.full((point["x"].shape[0],), math.nan, dtype=self.dtype)

    def _both_labels_everywhere(self, a: torch.Tensor, b: torch.Tensor) -> bool:
        """Whether every atom occurs in the sample with both labels: then the loss grows
        along every ray (the atoms span R^d) and has a unique minimizer."""
        atom = torch.cdist(a, self.atoms).argmin(dim=1)
        seen = torch.zeros(len(self.atoms), 2, dtype=torch.bool)
        seen[atom, (b > 0).long()] = True
        return bool(seen.all())

    def _newton(self, a: torch.Tensor, b: torch.Tensor, weights: torch.Tensor, lam: float,
                center: tuple[float, torch.Tensor] | None) -> torch.Tensor:
        """argmin_x sum_i w_i softplus(-b_i <a_i, x>) + lam ||x||^2 / 2 (+ mu ||x - c||^2 / 2):
        :func:`~dpminimax.problems.newton.minimize` (damped Newton to a squared decrement of
        1e-20) from c (or 0), the two quadratic terms as one, (lam + mu) / 2 ||x - mu c /
        (lam + mu)||^2 up to a constant."""
        mu, c = center if center is not None else (0.0, torch.zeros(self.d, dtype=self.dtype))
        modulus = lam + mu
        objective = GeneralizedLinear(
            SOFTPLUS, -b.unsqueeze(1) * a, torch.zeros_like(b), weights,
            torch.zeros(self.d, dtype=self.dtype), modulus, c * (mu / modulus) if modulus else c)
        return minimize(objective, c.clone() if mu else torch.zeros(self.d, dtype=self.dtype))


class RidgeLogisticRegression(LogisticRegression):
    """P2-SC: P2 plus lam ||x||^2 / 2 on a ball (for Alg. 1)."""

    def __init__(self, d: int = 10, atoms: int | None = None, r_a: float = 1.0,
                 w_norm: float = 1.0, lam: float = 0.1, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__(d, atoms, r_a, w_norm, lam, seed, dtype)
