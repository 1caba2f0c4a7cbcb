"""G1, G2 and G4 (our BYOA testbeds): min-max games with random rank-one coupling, for Algs. 3-5
and the C-SC variant (Cor. 4.9).

Examples: a = r u, c = r Q u (u uniform on the sphere, Q a fixed orthogonal matrix), so
E[a c^T] = (r^2 / d) Q^T; p = p_bar + rho v, q = q_bar + rho v' (v, v' uniform on the sphere).
The objectives depend on a sample only through the means (P, |p|^2, B, Q, |q|^2) of p,
||p||^2, a c^T, q, ||q||^2 (:class:`Moments`), so the population objective, the empirical one,
their saddle points and their strong gaps are one formula each, evaluated on the population
moments or on a sample's.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import torch

from dpminimax.problems.base import (
    Block,
    Constants,
    Examples,
    Point,
    Problem,
    Prox,
    random_orthogonal,
    sphere,
)
from dpminimax.problems.newton import multiplier
from dpminimax.seeding import make_generator


@dataclass(frozen=True)
class Moments:
    """Means over the distribution or a sample: p (d,), ||p||^2, a c^T (d, d), q, ||q||^2."""

    p: torch.Tensor
    p_square: torch.Tensor
    coupling: torch.Tensor
    q: torch.Tensor
    q_square: torch.Tensor


class ExactGame(Problem):
    """A min-max problem with exact answers from its statistics (population or one sample):
    F under them, exact best responses and saddle point on the balls, and from these the strong
    gap, the primal gap and the population / empirical solutions (G1-G4)."""

    @abstractmethod
    def statistics(self, examples: Examples | None = None) -> Any:
        """What F depends on: the population's, or one sample's (n, ...)."""

    @abstractmethod
    def value(self, point: Point, statistics: Any) -> torch.Tensor:
        """F(x, y) (R,) under ``statistics``."""

    @abstractmethod
    def best_responses(self, point: Point, statistics: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(argmax_y F(x, y), argmin_x F(x, y))`` over the balls, each (R, d)."""

    @abstractmethod
    def saddle(self, statistics: Any, prox: Prox | None = None) -> Point:
        """The saddle point (blocks (d,)) of F under ``statistics`` (plus the proximal term)."""

    def population_objective(self, point: Point) -> torch.Tensor:
        return self.value(point, self.statistics())

    def strong_gap(self, point: Point, examples: Examples | None = None) -> torch.Tensor:
        """max_y F(x~, y) - min_x F(x, y~) (R,) on the population or on ``examples``."""
        statistics = self.statistics(examples)
        best_y, best_x = self.best_responses(point, statistics)
        return (self.value({"x": point["x"], "y": best_y}, statistics)
                - self.value({"x": best_x, "y": point["y"]}, statistics))

    def primal_gap(self, point: Point, examples: Examples | None = None) -> torch.Tensor:
        """Phi(x~) - min_x Phi (R,) with Phi(x) = max_{y in Y} F(x, y), on the population or on
        ``examples``: the metric of a method that releases x only (BYOA Cor. 4.9). min_x Phi is
        F at the saddle point (exact where :meth:`saddle` is the constrained one: G3's and G4's,
        and G1's and G2's when it is interior)."""
        statistics = self.statistics(examples)
        x = point["x"]
        best_y, _ = self.best_responses({"x": x, "y": torch.zeros_like(x)}, statistics)
        saddle = {name: value.unsqueeze(0) for name, value in self.saddle(statistics).items()}
        return self.value({"x": x, "y": best_y}, statistics) - self.value(saddle, statistics)

    def population_solution(self) -> Point:
        return self.saddle(self.statistics())

    def empirical_solution(self, examples: Examples, prox: Prox | None = None) -> Point:
        return self.saddle(self.statistics(examples), prox)


class RankOneGame(ExactGame):
    """The shared part of G1, G2 and G4: sampling and moments (their statistics)."""

    def __init__(self, d: int, r: float, rho: float, center_norm: float, radius: float,
                 seed: int, dtype: torch.dtype) -> None:
        super().__init__((Block("x", d, radius), Block("y", d, radius)), maximized=("y",),
                         dtype=dtype)
        generator = make_generator(seed, "problem")
        self.d, self.r, self.rho = d, r, rho
        self.rotation = random_orthogonal(d, generator, dtype)
        self.p_bar, self.q_bar = center_norm * sphere(2, d, generator, dtype)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        u = sphere(n, self.d, generator, self.dtype)
        v = sphere(2 * n, self.d, generator, self.dtype)
        return {"a": self.r * u, "c": self.r * u @ self.rotation.T,
                "p": self.p_bar + self.rho * v[:n], "q": self.q_bar + self.rho * v[n:]}

    def statistics(self, examples: Examples | None = None) -> Moments:
        """The population moments, or those of one sample (n, ...)."""
        if examples is None:
            return Moments(self.p_bar, self.p_bar @ self.p_bar + self.rho ** 2,
                           self.r ** 2 / self.d * self.rotation.T, self.q_bar,
                           self.q_bar @ self.q_bar + self.rho ** 2)
        p, q = examples["p"], examples["q"]
        return Moments(p.mean(0), (p * p).sum(-1).mean(), examples["a"].T @ examples["c"]
                       / len(p), q.mean(0), (q * q).sum(-1).mean())


class QuadraticGame(RankOneGame):
    """G1, SC-SC: f = mu_x ||x - p||^2 / 2 + <a, x><c, y> - mu_y ||y - q||^2 / 2 on balls of
    ``radius``. Constants: l <= max(mu_x, mu_y) + r^2; L = sqrt((mu_x (R + p_max) + r^2 R)^2 +
    (r^2 R + mu_y (R + q_max))^2) with p_max = ||p_bar|| + rho."""

    def __init__(self, d: int = 10, r: float = 1.0, mu_x: float = 0.5, mu_y: float = 0.5,
                 rho: float = 0.5, center_norm: float = 1.0, radius: float = 4.0,
                 seed: int = 0, dtype: torch.dtype = torch.float64) -> None:
        super().__init__(d, r, rho, center_norm, radius, seed, dtype)
        self.mu_x, self.mu_y = mu_x, mu_y

    @property
    def constants(self) -> Constants:
        radius, r2 = self.blocks[0].radius, self.r ** 2
        p_max = float(torch.linalg.vector_norm(self.p_bar)) + self.rho
        q_max = float(torch.linalg.vector_norm(self.q_bar)) + self.rho
        lipschitz = ((self.mu_x * (radius + p_max) + r2 * radius) ** 2
                     + (r2 * radius + self.mu_y * (radius + q_max)) ** 2) ** 0.5
        return Constants(lipschitz, max(self.mu_x, self.mu_y) + r2,
                         {"x": self.mu_x, "y": self.mu_y}, radius)

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        x, y = point["x"], point["y"]
        dx, dy = x - example["p"], y - example["q"]
        return (0.5 * self.mu_x * (dx @ dx) + (example["a"] @ x) * (example["c"] @ y)
                - 0.5 * self.mu_y * (dy @ dy))

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        x, y = point["x"].unsqueeze(1), point["y"].unsqueeze(1)
        ax = (examples["a"] * x).sum(-1, keepdim=True)
        cy = (examples["c"] * y).sum(-1, keepdim=True)
        return {"x": self.mu_x * (x - examples["p"]) + cy * examples["a"],
                "y": ax * examples["c"] - self.mu_y * (y - examples["q"])}

    def value(self, point: Point, moments: Moments) -> torch.Tensor:
        x, y = point["x"], point["y"]
        return (0.5 * self.mu_x * ((x * x).sum(-1) - 2 * x @ moments.p + moments.p_square)
                + torch.einsum("ri,ij,rj->r", x, moments.coupling, y)
                - 0.5 * self.mu_y * ((y * y).sum(-1) - 2 * y @ moments.q + moments.q_square))

    def best_responses(self, point: Point, moments: Moments) -> tuple[torch.Tensor, torch.Tensor]:
        """Projections of the unconstrained best responses (isotropic quadratics)."""
        x_block, y_block = self.blocks
        best_y = y_block.project(moments.q + point["x"] @ moments.coupling / self.mu_y)
        best_x = x_block.project(moments.p - point["y"] @ moments.coupling.T / self.mu_x)
        return best_y, best_x

    def saddle(self, moments: Moments, prox: Prox | None = None) -> Point:
        """The saddle point on the balls (:func:`_ball_saddle`): inside them
        [[mu_x I, B], [-B^T, mu_y I]] [x; y] = [mu_x P; mu_y Q] (the proximal term adds each
        block's modulus to its mu and modulus x center to its right-hand side). Constrained,
        because Alg. 3's sensitivity (Lemma 4.3 with the a-priori L) holds on the domain only:
        a small sample's unconstrained saddle point can leave the balls."""
        x_block, y_block = self.blocks
        return _ball_saddle(moments.coupling, self.mu_x * moments.p, self.mu_y * moments.q,
                            self.mu_x, self.mu_y, prox, x_block.radius, y_block.radius)


class BilinearGame(RankOneGame):
    """G2, C-C: f = <a, x><c, y> + <p, x> - <q, y> on balls of radius D. Saddle point
    x* = B^{-T} Q, y* = -B^{-1} P (interior by the choice of ``center_norm``: the default puts
    the population saddle at D / 4); max_{||y||<=D} F = <P, x> + D ||B^T x - Q|| and
    min_{||x||<=D} F = -<Q, y> - D ||B y + P||. Constants: l = r^2,
    L = sqrt((r^2 D + p_max)^2 + (r^2 D + q_max)^2)."""

    def __init__(self, d: int = 10, r: float = 1.0, rho: float = 0.1,
                 center_norm: float | None = None, radius: float = 4.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        norm = radius * r ** 2 / (4.0 * d) if center_norm is None else center_norm
        super().__init__(d, r, rho, norm, radius, seed, dtype)

    @property
    def constants(self) -> Constants:
        radius, r2 = self.blocks[0].radius, self.r ** 2
        p_max = float(torch.linalg.vector_norm(self.p_bar)) + self.rho
        q_max = float(torch.linalg.vector_norm(self.q_bar)) + self.rho
        lipschitz = ((r2 * radius + p_max) ** 2 + (r2 * radius + q_max) ** 2) ** 0.5
        return Constants(lipschitz, r2, {"x": 0.0, "y": 0.0}, radius)

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        x, y = point["x"], point["y"]
        return (example["a"] @ x) * (example["c"] @ y) + example["p"] @ x - example["q"] @ y

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        x, y = point["x"].unsqueeze(1), point["y"].unsqueeze(1)
        ax = (examples["a"] * x).sum(-1, keepdim=True)
        cy = (examples["c"] * y).sum(-1, keepdim=True)
        return {"x": cy * examples["a"] + examples["p"],
                "y": ax * examples["c"] - examples["q"]}

    def value(self, point: Point, moments: Moments) -> torch.Tensor:
        x, y = point["x"], point["y"]
        return (torch.einsum("ri,ij,rj->r", x, moments.coupling, y) + x @ moments.p
                - y @ moments.q)

    def weak_gap(self, points: Point, examples: Examples | None = None) -> torch.Tensor:
        """max_y (1/S) sum_s F(x~_s, y) - min_x (1/S) sum_s F(x, y~_s) (a scalar) over the S
        rows of ``points`` (seeds): F is affine in each block, so this is the
        strong gap of the mean point, where zero-mean noise cancels."""
        means = {name: value.mean(0, keepdim=True) for name, value in points.items()}
        return self.strong_gap(means, examples)[0]

    def best_responses(self, point: Point, moments: Moments) -> tuple[torch.Tensor, torch.Tensor]:
        """Linear objectives over balls: the radius along the gradient."""
        x_block, y_block = self.blocks
        toward_y = point["x"] @ moments.coupling - moments.q
        toward_x = -(point["y"] @ moments.coupling.T + moments.p)
        return (y_block.radius * _direction(toward_y), x_block.radius * _direction(toward_x))

    def saddle(self, moments: Moments, prox: Prox | None = None) -> Point:
        """x* = B^{-T} Q, y* = -B^{-1} P (the unconstrained saddle point: interior for the
        population by the choice of ``center_norm``; a small sample's may leave the balls, which
        only the non-private references use), or with the proximal term of BYOA Algs. 4 / 5
        (both moduli > 0) the regularized saddle point on the balls (:func:`_ball_saddle`: the
        phases' sensitivity holds on the domain only)."""
        if prox is None:
            return {"x": torch.linalg.solve(moments.coupling.T, moments.q),
                    "y": -torch.linalg.solve(moments.coupling, moments.p)}
        x_block, y_block = self.blocks
        return _ball_saddle(moments.coupling, -moments.p, -moments.q, 0.0, 0.0, prox,
                            x_block.radius, y_block.radius)


class CscGame(RankOneGame):
    """G4, C-SC (BYOA Cor. 4.9): f = <a, x><c, y> + <p, x> - mu_y ||y - q||^2 / 2 on balls of
    radius D. Population saddle point y* = -B^{-1} P, x* = mu_y B^{-T} (y* - Q): the default
    ``center_norm`` (D / 4) min(b, b^2 / (mu_y (1 + b))), b = r^2 / d, puts both blocks within
    D / 4 (interior). Empirical and proximal saddle points are the constrained ones
    (:func:`_ball_saddle`: a phase's noisy center may put them on a boundary), so
    min_x Phi = F at the saddle point exactly. Best responses: y, the projection of
    Q + B^T x / mu_y (isotropic quadratic); x, the radius along -(B y + P) (linear in x).
    Constants: l = r^2 + mu_y, L = sqrt((r^2 D + p_max)^2 + (r^2 D + mu_y (D + q_max))^2),
    strong convexity {x: 0, y: mu_y}; the default mu_y = 0.1 meets Cor. 4.9's
    mu_y >= L / (D sqrt(n)) from n = 232 on."""

    def __init__(self, d: int = 10, r: float = 1.0, mu_y: float = 0.1, rho: float = 0.1,
                 center_norm: float | None = None, radius: float = 4.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        b = r ** 2 / d
        norm = (radius / 4.0 * min(b, b ** 2 / (mu_y * (1.0 + b))) if center_norm is None
                else center_norm)
        super().__init__(d, r, rho, norm, radius, seed, dtype)
        self.mu_y = mu_y

    @property
    def constants(self) -> Constants:
        radius, r2 = self.blocks[0].radius, self.r ** 2
        p_max = float(torch.linalg.vector_norm(self.p_bar)) + self.rho
        q_max = float(torch.linalg.vector_norm(self.q_bar)) + self.rho
        lipschitz = ((r2 * radius + p_max) ** 2
                     + (r2 * radius + self.mu_y * (radius + q_max)) ** 2) ** 0.5
        return Constants(lipschitz, r2 + self.mu_y, {"x": 0.0, "y": self.mu_y}, radius)

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        x, y = point["x"], point["y"]
        dy = y - example["q"]
        return ((example["a"] @ x) * (example["c"] @ y) + example["p"] @ x
                - 0.5 * self.mu_y * (dy @ dy))

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        x, y = point["x"].unsqueeze(1), point["y"].unsqueeze(1)
        ax = (examples["a"] * x).sum(-1, keepdim=True)
        cy = (examples["c"] * y).sum(-1, keepdim=True)
        return {"x": cy * examples["a"] + examples["p"],
                "y": ax * examples["c"] - self.mu_y * (y - examples["q"])}

    def value(self, point: Point, moments: Moments) -> torch.Tensor:
        x, y = point["x"], point["y"]
        return (torch.einsum("ri,ij,rj->r", x, moments.coupling, y) + x @ moments.p
                - 0.5 * self.mu_y * ((y * y).sum(-1) - 2 * y @ moments.q + moments.q_square))

    def best_responses(self, point: Point, moments: Moments) -> tuple[torch.Tensor, torch.Tensor]:
        x_block, y_block = self.blocks
        best_y = y_block.project(moments.q + point["x"] @ moments.coupling / self.mu_y)
        toward_x = -(point["y"] @ moments.coupling.T + moments.p)
        return best_y, x_block.radius * _direction(toward_x)

    def saddle(self, moments: Moments, prox: Prox | None = None) -> Point:
        """The saddle point on the balls (:func:`_ball_saddle`): inside them the stationary
        point [[0, B], [-B^T, mu_y I]] [x; y] = [-P; mu_y Q] (the proximal term adds each
        block's modulus to its diagonal and modulus x center to its right-hand side); exact
        also where a phase's noisy center puts it on a boundary."""
        x_block, y_block = self.blocks
        return _ball_saddle(moments.coupling, -moments.p, self.mu_y * moments.q, 0.0, self.mu_y,
                            prox, x_block.radius, y_block.radius)


def _with_prox(right_x: torch.Tensor, right_y: torch.Tensor, mu_x: float, mu_y: float,
               prox: Prox | None) -> tuple[torch.Tensor, torch.Tensor, float, float]:
    """The right-hand sides and moduli with the proximal term absorbed: each block's modulus
    added to its mu and modulus x center to its right-hand side."""
    if prox is not None:
        centers, moduli = prox
        mu_x, mu_y = mu_x + moduli.get("x", 0.0), mu_y + moduli.get("y", 0.0)
        right_x = right_x + moduli.get("x", 0.0) * centers["x"] if "x" in moduli else right_x
        right_y = right_y + moduli.get("y", 0.0) * centers["y"] if "y" in moduli else right_y
    return right_x, right_y, mu_x, mu_y


def _ball_saddle(coupling: torch.Tensor, right_x: torch.Tensor, right_y: torch.Tensor,
                 mu_x: float, mu_y: float, prox: Prox | None, radius_x: float,
                 radius_y: float) -> Point:
    """The saddle point of mu_x ||x||^2 / 2 - <right_x, x> + x^T B y - mu_y ||y||^2 / 2 +
    <right_y, y> (plus the proximal term) over the balls ||x|| <= R_x, ||y|| <= R_y (mu_y,
    with the proximal term, > 0): the solution of
    [[(mu_x + alpha) I, B], [-B^T, (mu_y + beta) I]] [x; y] = [right_x; right_y] with the balls'
    multipliers alpha, beta >= 0 zero unless their ball is tight (KKT). In B's singular basis
    the system is 2 x 2 per singular value; ||y|| falls with beta, and ||x|| (at its alpha's
    beta) with alpha (the derivative of the concave dual function of the x ball), so each
    tight multiplier is the root of its norm minus its radius (beta inside alpha)."""
    right_x, right_y, mu_x, mu_y = _with_prox(right_x, right_y, mu_x, mu_y, prox)
    u, singular, vh = torch.linalg.svd(coupling)
    rx, ry = u.T @ right_x, vh @ right_y

    def solve(alpha: float, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = mu_x + alpha, mu_y + beta
        det = a * b + singular * singular
        return (b * rx - singular * ry) / det, (singular * rx + a * ry) / det

    def at(alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = solve(alpha, 0.0)
        if _excess(y, radius_y) > 0:
            x, y = solve(alpha, multiplier(lambda beta: _excess(solve(alpha, beta)[1],
                                                                 radius_y)))
        return x, y

    x, y = at(0.0)
    if not _excess(x, radius_x) <= 0:   # nan where mu_x = 0 and B is singular
        x, y = at(multiplier(lambda alpha: _excess(at(alpha)[0], radius_x)))
    return {"x": u @ x, "y": vh.T @ y}


def _excess(value: torch.Tensor, radius: float) -> float:
    return float(torch.linalg.vector_norm(value)) - radius


def _direction(value: torch.Tensor) -> torch.Tensor:
    """``value`` / ||value|| row by row (0 for a zero row)."""
    norms = torch.linalg.vector_norm(value, dim=-1, keepdim=True)
    return value / torch.clamp(norms, min=1e-300)
