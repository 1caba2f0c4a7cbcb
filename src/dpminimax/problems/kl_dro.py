"""P-DRO (our testbed, issue #39): paper 004's KL-DRO dual Eq. (3) for a linear logistic model
on a finite support with a rare positive class, with the W-truncated KL conjugate of the
DP-DRO programs (papers/dpdro/README.md, "Deviation: clipping"): a convex minimization with
exact answers on which BYOA's and paper 004's methods meet.

One block z = (x, eta) in R^{d+1} (x the d weights, eta the last coordinate), on the l2 ball of
``radius``: f(z; a, b) = lam psi*_W((l - eta) / lam) + eta, l = softplus(-b <a, x>), with
psi*_W(s) = e^s - 1 for s <= log W and W (s - log W) + W - 1 beyond (convex, C^1, slope
w = min(e^s, W)). m = 2d atoms a_j = r_a (u_j, 1) / sqrt(2) (u_j uniform on S^{d-2}: the last
feature is an intercept), drawn uniformly; b = +1 with probability p_j = sigma(<a_j, w*>),
w* = (w_norm v, beta) with beta set so that the mean of p_j is ``prior``. The population
objective is the exact finite sum over (atom, label); the solutions are by damped Newton
(:func:`~dpminimax.problems.newton.minimize`) on the ball through its multiplier.

Constants, valid on all of R^{d+1}: grad_x f = w sigma(-b <a, x>) (-b a) with 0 < w <= W and
grad_eta f = 1 - w in [1 - W, 1), so L = sqrt((W r_a)^2 + max(1, W - 1)^2); the Hessian is
(psi*''/lam) g g^T + w sigma sigma' a a^T with g = (sigma (-b) a, -1) and psi*'' <= W, so
l = W (r_a^2 + 1) / lam + W r_a^2 / 4; mu = 0 (merely convex); D = ``radius``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from scipy.optimize import brentq

from dpminimax.problems.base import Block, Constants, Examples, Point, Problem, Prox, sphere
from dpminimax.problems.newton import ball_solution, minimize
from dpminimax.seeding import make_generator


def conjugate(s: torch.Tensor, cap: float) -> torch.Tensor:
    """psi*_W(s): e^s - 1 up to s = log W, then linear with slope W (module docstring)."""
    knee = math.log(cap)
    return torch.where(s <= knee, torch.expm1(torch.clamp(s, max=knee)),
                       cap * (s - knee) + cap - 1.0)


def conjugate_slope(s: torch.Tensor, cap: float) -> torch.Tensor:
    """psi*_W'(s) = min(e^s, W): the example's DRO weight."""
    return torch.exp(torch.clamp(s, max=math.log(cap)))


@dataclass(frozen=True)
class DualObjective:
    """sum_i weights_i f(z; a_i, b_i) + modulus / 2 ||z - center||^2 over rows (a_i, b_i), with
    the value, gradient and Hessian :func:`~dpminimax.problems.newton.minimize` reads."""

    a: torch.Tensor
    b: torch.Tensor
    weights: torch.Tensor
    lam: float
    cap: float
    modulus: float
    center: torch.Tensor

    def _parts(self, z: torch.Tensor):
        t = -self.b * (self.a @ z[:-1])
        s = (torch.nn.functional.softplus(t) - z[-1]) / self.lam
        return t, s

    def value(self, z: torch.Tensor) -> float:
        _, s = self._parts(z)
        gap = z - self.center
        return float(self.weights @ (self.lam * conjugate(s, self.cap) + z[-1])
                     + 0.5 * self.modulus * (gap @ gap))

    def gradient(self, z: torch.Tensor) -> torch.Tensor:
        t, s = self._parts(z)
        w = conjugate_slope(s, self.cap)
        gx = self.a.T @ (self.weights * w * torch.sigmoid(t) * -self.b)
        geta = (self.weights * (1.0 - w)).sum().reshape(1)
        return torch.cat([gx, geta]) + self.modulus * (z - self.center)

    def hessian(self, z: torch.Tensor) -> torch.Tensor:
        t, s = self._parts(z)
        w = conjugate_slope(s, self.cap)
        curvature = torch.where(s < math.log(self.cap), w, torch.zeros_like(w)) / self.lam
        g = torch.cat([(torch.sigmoid(t) * -self.b).unsqueeze(1) * self.a,
                       -torch.ones_like(t).unsqueeze(1)], dim=1)
        hessian = g.T @ ((self.weights * curvature).unsqueeze(1) * g)
        inner = self.weights * w * torch.sigmoid(t) * torch.sigmoid(-t)
        hessian[:-1, :-1] += self.a.T @ (inner.unsqueeze(1) * self.a)
        return hessian + self.modulus * torch.eye(len(z), dtype=z.dtype, device=z.device)


class KlDroLogistic(Problem):
    """P-DRO; the instance (atoms, the direction of w*) is fixed by ``seed``; ``lam`` is
    Eq. (3)'s lambda, ``cap`` the weight cap W."""

    def __init__(self, d: int = 10, atoms: int | None = None, r_a: float = 1.0,
                 w_norm: float = 2.0, prior: float = 0.1, lam: float = 1.0, cap: float = 5.0,
                 radius: float = 10.0, seed: int = 0, dtype: torch.dtype = torch.float64) -> None:
        if d < 2:
            raise ValueError(f"d: P-DRO needs d >= 2 (one feature and the intercept), got {d}")
        super().__init__((Block("x", d + 1, radius),), dtype=dtype)
        self.d, self.r_a, self.lam, self.cap = d, r_a, lam, cap
        generator = make_generator(seed, "problem")
        direction = w_norm * sphere(1, d - 1, generator, dtype)[0]
        units = sphere(2 * d if atoms is None else atoms, d - 1, generator, dtype)
        self.atoms = r_a / math.sqrt(2.0) * torch.cat(
            [units, torch.ones(len(units), 1, dtype=dtype)], dim=1)
        margins = self.atoms[:, :-1] @ direction
        beta = brentq(lambda c: float(torch.sigmoid(margins + c * self.atoms[0, -1]).mean())
                      - prior, -100.0, 100.0, xtol=1e-14)
        self.w_star = torch.cat([direction, torch.tensor([beta], dtype=dtype)])
        self.positive = torch.sigmoid(self.atoms @ self.w_star)
        self._solution = self._solve(*self._population_rows(), None)
        if float(torch.linalg.vector_norm(self._solution)) >= 0.99 * radius:
            raise ValueError(f"radius: the population solution of P-DRO lies on the ball of "
                             f"radius {radius}; raise the radius")

    @property
    def constants(self) -> Constants:
        return Constants(
            lipschitz=math.hypot(self.cap * self.r_a, max(1.0, self.cap - 1.0)),
            smoothness=self.cap * (self.r_a ** 2 + 1.0) / self.lam + self.cap * self.r_a ** 2 / 4,
            strong_convexity={"x": 0.0}, diameter=self.blocks[0].radius)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        index = torch.randint(len(self.atoms), (n,), generator=generator)
        positive = torch.rand(n, generator=generator, dtype=self.dtype) < self.positive[index]
        return {"a": self.atoms[index], "b": torch.where(positive, 1.0, -1.0).to(self.dtype)}

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        z = point["x"]
        loss = torch.nn.functional.softplus(-example["b"] * (example["a"] @ z[:-1]))
        return self.lam * conjugate((loss - z[-1]) / self.lam, self.cap) + z[-1]

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        z = point["x"]
        t = -examples["b"] * torch.einsum("rbd,rd->rb", examples["a"], z[:, :-1])
        w = conjugate_slope((torch.nn.functional.softplus(t) - z[:, -1:]) / self.lam, self.cap)
        gx = (w * torch.sigmoid(t) * -examples["b"]).unsqueeze(-1) * examples["a"]
        return {"x": torch.cat([gx, (1.0 - w).unsqueeze(-1)], dim=-1)}

    def population_objective(self, point: Point) -> torch.Tensor:
        """F(z) (R,), the exact finite sum over (atom, label)."""
        a, b, weights = self._population_rows()
        runs = point["x"].shape[0]
        losses = self.loss(point, {"a": a.expand(runs, *a.shape), "b": b.expand(runs, *b.shape)})
        return losses @ weights

    def population_solution(self) -> Point:
        return {"x": self._solution.clone()}

    def empirical_solution(self, examples: Examples, prox: Prox | None = None) -> Point:
        """argmin of the empirical objective (plus the proximal term) on the ball."""
        weights = torch.full((len(examples["b"]),), 1.0 / len(examples["b"]), dtype=self.dtype)
        center = None if prox is None else (prox[1]["x"], prox[0]["x"])
        return {"x": self._solve(examples["a"], examples["b"], weights, center)}

    def excess_risk(self, point: Point, examples: Examples | None = None) -> torch.Tensor:
        """F(z) - min F (R,) on the population (exact) or on ``examples`` (n, ...)."""
        if examples is None:
            best = {"x": self._solution.unsqueeze(0)}
            return self.population_objective(point) - self.population_objective(best)
        return self.empirical_excess_risk(point, examples)

    def _population_rows(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every (atom, label) with its probability."""
        m = len(self.atoms)
        labels = torch.cat([torch.ones(m, dtype=self.dtype), -torch.ones(m, dtype=self.dtype)])
        return (torch.cat([self.atoms, self.atoms]), labels,
                torch.cat([self.positive, 1.0 - self.positive]) / m)

    def _solve(self, a: torch.Tensor, b: torch.Tensor, weights: torch.Tensor,
               center: tuple[float, torch.Tensor] | None) -> torch.Tensor:
        """argmin over the ball of sum_i weights_i f(z; a_i, b_i) (+ mu / 2 ||z - c||^2):
        Newton from c (or the uniform prediction's eta = log 2), the ball by its multiplier
        nu (:func:`~dpminimax.problems.newton.ball_solution`), the two quadratic terms as
        one, (mu + nu) / 2 ||z - mu c / (mu + nu)||^2 up to a constant."""
        mu, c = center if center is not None else (0.0, torch.zeros(self.d + 1, dtype=self.dtype))
        start = c.clone() if mu else torch.cat([torch.zeros(self.d, dtype=self.dtype),
                                                torch.tensor([math.log(2.0)], dtype=self.dtype)])

        def solve(nu: float) -> torch.Tensor:
            modulus = mu + nu
            objective = DualObjective(a, b, weights, self.lam, self.cap, modulus,
                                      c * (mu / modulus) if modulus else c)
            return minimize(objective, start, escape=1e3 * self.blocks[0].radius)

        return ball_solution(solve, lambda z: float(torch.linalg.vector_norm(z)),
                             self.blocks[0].radius)
