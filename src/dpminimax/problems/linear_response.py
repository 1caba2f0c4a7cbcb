"""P-A, the linear-response bilevel problem (our testbed), the rate testbed with d_x and d_y
decoupled.

xi = (s, u, v): s uniform in [0, 1]^{d_y}; u, v = u0, v0 (norm 0.5) plus N(0, 0.25 I / d_y),
projected onto the unit ball; A(s) = a diag(s) M0 with M0 (d_y, d_x) of orthonormal columns
(rows if d_x > d_y), so ||A|| <= a.
    g(x, y; xi) = ||y||^2 / 2 - <y, A(s) x + u>,   f(x, y; xi) = ||y - v||^2 / 2 + rho Psi(x),
Psi(x) = sum_k x_k^2 / (1 + x_k^2) (nonconvex), X = B(0, D_x), Y = B(0, a D_x + 1). Closed forms
from the sample means (A_bar = a diag(s_bar) M0): y*(x) = A_bar x + u_bar,
y^lambda(x) = (v_bar + lambda y*(x)) / (1 + lambda), grad F_S(x) = rho grad Psi(x) +
A_bar^T (y*(x) - v_bar); O(d_x d_y) per evaluation.

At x = 0, Psi's gradient vanishes and grad F(0) = A_bar^T (u_bar - v_bar) ~ (a / 2) M0^T
(u0 - v0), of norm about (a / 2) ||u0 - v0|| sqrt(d_x / d_y) for our random (u0, v0):
the start gradient changes with the dimensions. ``start_gradient`` g > 0 (the dimension
sweeps) holds it fixed instead: u0, v0 = (+-c w + sqrt(1 - c^2) f) / 2 with w = M0 e / ||M0 e||
(e a random unit vector of R^{d_x}), f a random unit vector orthogonal to M0's range (0 where
that range is R^{d_y}) and c = 2 g / a, so u0 - v0 = c w, ||M0^T w|| = 1 and ||grad F_P(0)||
= g up to the unit-ball projection's correction, at every (d_x, d_y).
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Block, Examples, sphere
from dpminimax.problems.bilevel import BilevelConstants, BilevelProblem, Stats
from dpminimax.seeding import make_generator

#: Fresh examples behind the population statistics (E u, E v, E ||v||^2).
POPULATION_DRAWS = 200_000


class LinearResponseBilevel(BilevelProblem):
    """P-A; the instance (M0, u0, v0) is fixed by ``seed``, with ``start_gradient`` > 0 the
    (u0, v0) of the module docstring that hold ||grad F_P(0)|| at it."""

    def __init__(self, d_x: int = 4, d_y: int = 16, a: float = 1.0, rho: float = 1.0,
                 radius: float = 2.0, seed: int = 0, start_gradient: float = 0.0,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__(Block("x", d_x, radius), Block("y", d_y, a * radius + 1.0), dtype)
        self.a, self.rho = a, rho
        generator = make_generator(seed, "problem")
        tall = torch.linalg.qr(torch.randn(max(d_x, d_y), min(d_x, d_y), generator=generator,
                                           dtype=dtype))[0]
        self.m0 = tall if d_y >= d_x else tall.T
        self.u0, self.v0 = 0.5 * sphere(2, d_y, generator, dtype)
        if start_gradient > 0:
            self.u0, self.v0 = self._fixed_start(2.0 * start_gradient / a, generator)
        self.seed, self._population = seed, None

    def _fixed_start(self, c: float, generator: torch.Generator) -> torch.Tensor:
        """(u0, v0) = (+-c w + sqrt(1 - c^2) f) / 2 of the module docstring."""
        if not 0 < c <= 1:
            raise ValueError(f"P-A: start_gradient must be in (0, a / 2]; got c = {c:g}")
        w = self.m0 @ sphere(1, self.x.dim, generator, self.dtype)[0]
        w = w / torch.linalg.vector_norm(w)
        f = torch.zeros_like(w)
        if self.y.dim > self.x.dim:
            z = sphere(1, self.y.dim, generator, self.dtype)[0]
            f = z - self.m0 @ (self.m0.T @ z)
            f = f / torch.linalg.vector_norm(f)
        side = math.sqrt(1.0 - c * c) * f
        return 0.5 * torch.stack([c * w + side, -c * w + side])

    @property
    def constants(self) -> BilevelConstants:
        """||grad Psi|| <= 2 ||x||, so grad_x f <= 2 rho D_x, grad_y f <= R_Y + 1; grad_x g =
        -A^T y <= a R_Y, grad_y g <= R_Y + a D_x + 1; the joint Hessian of g has norm
        (1 + sqrt(1 + 4 a^2)) / 2; Psi'' <= 2."""
        d_x, r_y = self.x.radius, self.y.radius
        return BilevelConstants(
            l0f=math.hypot(2 * self.rho * d_x, r_y + 1.0), l1f=max(1.0, 2 * self.rho),
            l0g=math.hypot(self.a * r_y, r_y + self.a * d_x + 1.0),
            l1g=(1.0 + math.sqrt(1.0 + 4 * self.a ** 2)) / 2.0, l2g=0.0, mu_g=1.0)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        s = torch.rand(n, self.y.dim, generator=generator, dtype=self.dtype)
        unit = Block("unit", self.y.dim, 1.0)
        u, v = (unit.project(w) for w in self._unprojected(n, generator))
        return {"s": s, "u": u, "v": v}

    def _unprojected(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        """u0 and v0 plus their N(0, 0.25 I / d_y) noise, before the projection."""
        return tuple(center + 0.5 / math.sqrt(self.y.dim) * torch.randn(
            n, self.y.dim, generator=generator, dtype=self.dtype)
            for center in (self.u0, self.v0))

    def _psi_grad(self, x: torch.Tensor) -> torch.Tensor:
        return 2.0 * x / (1.0 + x * x) ** 2

    def example_loss(self, level: str, x: torch.Tensor, y: torch.Tensor,
                     example: Examples) -> torch.Tensor:
        if level == "f":
            gap = y - example["v"]
            return 0.5 * gap @ gap + self.rho * (x * x / (1.0 + x * x)).sum()
        response = self.a * example["s"] * (self.m0 @ x) + example["u"]
        return 0.5 * y @ y - y @ response

    def per_example_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                         examples: Examples) -> torch.Tensor:
        s = examples["s"]
        if level == "f":
            if block == "x":
                return (self.rho * self._psi_grad(x)).unsqueeze(1).expand(-1, s.shape[1], -1)
            return y.unsqueeze(1) - examples["v"]
        if block == "x":  # -a (s_i * y) M0 for every i: one batched product with diag(y) M0
            return torch.bmm(s, (-self.a * y).unsqueeze(-1) * self.m0)
        return y.unsqueeze(1) - self.a * s * (x @ self.m0.T).unsqueeze(1) - examples["u"]

    def per_example_penalty_x(self, x: torch.Tensor, y_lambda: torch.Tensor, y: torch.Tensor,
                              lam: torch.Tensor, examples: Examples) -> torch.Tensor:
        """grad_x g = -A(s)^T y is linear in y: one product at lambda (y~l - y~)."""
        return self.per_example_grad("g", "x", x, lam.unsqueeze(-1) * (y_lambda - y), examples)

    def population_statistics(self) -> Stats:
        """E s = 1 / 2; E u = u0 + E[Proj(w) - w] and E ||v||^2 = ||v0||^2 + 1 / 4 +
        E[||Proj(w)||^2 - ||w||^2] for the unprojected draw w = u0 (v0) + noise: the exact
        part plus the projection's correction, estimated from :data:`POPULATION_DRAWS` fresh
        draws (the correction is zero unless ||w|| > 1, a 3-sigma event at d_y = 16, so its
        Monte Carlo error is far below a plain sample mean's)."""
        if self._population is None:
            unit = Block("unit", self.y.dim, 1.0)
            w_u, w_v = self._unprojected(POPULATION_DRAWS,
                                         make_generator(self.seed, "population"))
            u, v = unit.project(w_u), unit.project(w_v)
            v_sq = (self.v0 @ self.v0 + 0.25 + ((v * v).sum(-1) - (w_v * w_v).sum(-1)).mean())
            self._population = {"s": torch.full((1, self.y.dim), 0.5, dtype=self.dtype),
                                "u": (self.u0 + (u - w_u).mean(0)).unsqueeze(0),
                                "v": (self.v0 + (v - w_v).mean(0)).unsqueeze(0),
                                "v_sq": v_sq.reshape(1)}
        return self._population

    def statistics(self, examples: Examples) -> Stats:
        return {"s": examples["s"].mean(1), "u": examples["u"].mean(1),
                "v": examples["v"].mean(1), "v_sq": (examples["v"] ** 2).sum(-1).mean(1)}

    def _response(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        """A_bar x (R, d_y)."""
        return self.a * stats["s"] * (x @ self.m0.T)

    def _response_adjoint(self, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        """A_bar^T y (R, d_x)."""
        return self.a * (stats["s"] * y) @ self.m0

    def mean_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                  stats: Stats) -> torch.Tensor:
        if level == "f":
            return self.rho * self._psi_grad(x) if block == "x" else y - stats["v"]
        if block == "x":
            return -self._response_adjoint(y, stats)
        return y - self._response(x, stats) - stats["u"]

    def inner_solution(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return self._response(x, stats) + stats["u"]

    def penalty_solution(self, x: torch.Tensor, lam: torch.Tensor,
                         stats: Stats) -> torch.Tensor:
        lam = lam.unsqueeze(-1)
        return (stats["v"] + lam * self.inner_solution(x, stats)) / (1.0 + lam)

    def hypergradient_at(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        """grad^2_yy g_S = I, grad^2_xy g_S = -A_bar^T."""
        return self.rho * self._psi_grad(x) + self._response_adjoint(y - stats["v"], stats)

    def hyperobjective(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        y = self.inner_solution(x, stats)
        return (self.rho * (x * x / (1.0 + x * x)).sum(-1) + 0.5 * (y * y).sum(-1)
                - (y * stats["v"]).sum(-1) + 0.5 * stats["v_sq"])
