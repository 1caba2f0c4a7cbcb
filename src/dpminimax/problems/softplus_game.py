"""G3 (our testbed): a non-affine convex-concave game, for Algs. 4 o 5 and the weak gap
(experiment E5: on affine games the weak gap shows no privacy cost).

f(x, y; xi) = softplus(<a, x> - b) + <u, x><v, y> - softplus(<c, y> - e) on the balls of radius
D, xi uniform on M atoms (finite support). Our choice of atoms: a, c have norm s
and u norm r, drawn on the sphere in +- pairs (M / 2 draws and their negatives), v = Q u (Q a
fixed orthogonal matrix), b = <a, p_bar>, e = <c, q_bar> (centers of norm ``center_norm``): each
softplus part is then even about its center, and the saddle point comes from the coupling
E[u v^T], away from the origin where Algs. 4 / 5 start. Any objective is F = g(x) + x^T B y -
h(y) with g, h weighted softplus sums and B the weighted mean of u v^T, over the atoms
(population) or a sample's distinct examples (empirical). Constants: softplus is 1-Lipschitz
and 1/4-smooth, so L = sqrt((s + r^2 D)^2 + (r^2 D + s)^2), l = s^2 / 4 + r^2, mu = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from dpminimax.problems.base import (
    Block,
    Constants,
    Examples,
    Point,
    Prox,
    random_orthogonal,
    sphere,
)
from dpminimax.problems.games import ExactGame
from dpminimax.problems.newton import (
    SOFTPLUS,
    GeneralizedLinear,
    NoMinimizer,
    ball_solution,
    minimize,
)
from dpminimax.seeding import make_generator

FIELDS = ("a", "b", "u", "v", "c", "e")
#: Newton's method on the saddle-point equation stops after a step of at most this (relative).
_STEP = 1e-13
_STEPS = 200


@dataclass(frozen=True)
class Support:
    """Weighted examples: the atoms (population) or a sample's distinct examples."""

    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    e: torch.Tensor
    weights: torch.Tensor
    coupling: torch.Tensor

    def g(self, linear: torch.Tensor, modulus: float, center: torch.Tensor) -> GeneralizedLinear:
        """g(x) + <linear, x> + modulus / 2 ||x - center||^2."""
        return GeneralizedLinear(SOFTPLUS, self.a, self.b, self.weights, linear, modulus, center)

    def h(self, linear: torch.Tensor, modulus: float, center: torch.Tensor) -> GeneralizedLinear:
        """h(y) + <linear, y> + modulus / 2 ||y - center||^2."""
        return GeneralizedLinear(SOFTPLUS, self.c, self.e, self.weights, linear, modulus, center)


class SoftplusGame(ExactGame):
    """G3; the instance (atoms, Q, centers) is fixed by ``seed``. The population saddle point is
    checked to lie within half the radius (so the solution is interior)."""

    def __init__(self, d: int = 10, atoms: int | None = None, s: float = 1.0, r: float = 1.0,
                 center_norm: float = 1.0, radius: float = 4.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__((Block("x", d, radius), Block("y", d, radius)), maximized=("y",),
                         dtype=dtype)
        self.d, self.s, self.r = d, s, r
        pairs = (4 * d if atoms is None else atoms) // 2
        generator = make_generator(seed, "problem")
        rotation = random_orthogonal(d, generator, dtype)
        self.p_bar, self.q_bar = center_norm * sphere(2, d, generator, dtype)
        a, c = (s * torch.cat([t, -t]) for t in sphere(2 * pairs, d, generator, dtype).split(pairs))
        u = r * sphere(pairs, d, generator, dtype)
        u = torch.cat([u, -u])
        self.atoms = {"a": a, "b": a @ self.p_bar, "u": u, "v": u @ rotation.T, "c": c,
                      "e": c @ self.q_bar}
        self._population = self.saddle(self.statistics())
        if max(float(torch.linalg.vector_norm(v)) for v in self._population.values()) \
                > radius / 2:
            raise ValueError("the population saddle point is not within half the radius")

    @property
    def constants(self) -> Constants:
        radius = self.blocks[0].radius
        side = self.s + self.r ** 2 * radius
        return Constants(math.sqrt(2.0) * side, self.s ** 2 / 4 + self.r ** 2,
                         {"x": 0.0, "y": 0.0}, radius)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        index = torch.randint(len(self.atoms["a"]), (n,), generator=generator)
        return {name: value[index] for name, value in self.atoms.items()}

    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        x, y = point["x"], point["y"]
        softplus = torch.nn.functional.softplus
        return (softplus(example["a"] @ x - example["b"])
                + (example["u"] @ x) * (example["v"] @ y)
                - softplus(example["c"] @ y - example["e"]))

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        x, y = point["x"].unsqueeze(1), point["y"].unsqueeze(1)
        ux = (examples["u"] * x).sum(-1, keepdim=True)
        vy = (examples["v"] * y).sum(-1, keepdim=True)
        sa = torch.sigmoid((examples["a"] * x).sum(-1, keepdim=True) - examples["b"][..., None])
        sc = torch.sigmoid((examples["c"] * y).sum(-1, keepdim=True) - examples["e"][..., None])
        return {"x": sa * examples["a"] + vy * examples["u"],
                "y": ux * examples["v"] - sc * examples["c"]}

    def statistics(self, examples: Examples | None = None) -> Support:
        """The atoms with weight 1 / M, or a sample's distinct examples with their frequencies."""
        if examples is None:
            fields, weights = self.atoms, torch.full((len(self.atoms["a"]),),
                                                     1.0 / len(self.atoms["a"]), dtype=self.dtype)
        else:
            d = self.d
            rows, counts = torch.unique(torch.cat(
                [examples[k] if examples[k].dim() == 2 else examples[k].unsqueeze(1)
                 for k in FIELDS], 1), dim=0, return_counts=True)
            fields = dict(zip(FIELDS, rows.split([d, 1, d, d, d, 1], dim=1), strict=True))
            fields["b"], fields["e"] = fields["b"][:, 0], fields["e"][:, 0]
            weights = counts.to(rows.dtype) / counts.sum()
        coupling = (fields["u"] * weights.unsqueeze(1)).T @ fields["v"]
        return Support(fields["a"], fields["b"], fields["c"], fields["e"], weights, coupling)

    def value(self, point: Point, support: Support) -> torch.Tensor:
        """F(x, y) (R,) under ``support``."""
        x, y = point["x"], point["y"]
        softplus = torch.nn.functional.softplus
        return (softplus(x @ support.a.T - support.b) @ support.weights
                + torch.einsum("ri,ij,rj->r", x, support.coupling, y)
                - softplus(y @ support.c.T - support.e) @ support.weights)

    def best_responses(self, point: Point, support: Support) -> tuple[torch.Tensor, torch.Tensor]:
        """``(argmax_y F(x, y), argmin_x F(x, y))`` over the balls, each (R, d): h(y) -
        <B^T x, y> and g(x) + <B y, x> minimized on a ball by Newton's method."""
        x_block, y_block = self.blocks
        zero = torch.zeros(self.d, dtype=self.dtype)
        best_y = torch.stack([_on_ball(support.h(-support.coupling.T @ x, 0.0, zero),
                                       y_block.radius) for x in point["x"]])
        best_x = torch.stack([_on_ball(support.g(support.coupling @ y, 0.0, zero),
                                       x_block.radius) for y in point["y"]])
        return best_y, best_x

    def weak_gap(self, points: Point, examples: Examples | None = None) -> torch.Tensor:
        """max_y (1/S) sum_s F(x~_s, y) - min_x (1/S) sum_s F(x, y~_s) (a scalar) over the S
        rows of ``points`` (seeds): F is affine in the coupling, so the best
        responses are those to the mean points."""
        support = self.statistics(examples)
        means = {name: value.mean(0, keepdim=True) for name, value in points.items()}
        best_y, best_x = self.best_responses(means, support)
        runs = points["x"].shape[0]
        return (self.value({"x": points["x"], "y": best_y.expand(runs, -1)}, support).mean()
                - self.value({"x": best_x.expand(runs, -1), "y": points["y"]}, support).mean())

    def population_solution(self) -> Point:
        return {name: value.clone() for name, value in self._population.items()}

    def saddle(self, support: Support, prox: Prox | None = None) -> Point:
        """The saddle point on the balls (plus the proximal term): the zero of the operator
        (grad_x, -grad_y) with the balls' multipliers alpha, beta >= 0 zero unless their ball is
        tight (KKT), each the root of its block's norm minus the radius (beta inside alpha, as
        in :func:`~dpminimax.problems.games._ball_saddle`), the unconstrained saddle point by
        damped Newton on the equation (the Newton step descends ||G||^2: G is monotone)."""
        x_block, y_block = self.blocks
        centers, moduli = prox if prox is not None else ({}, {})
        zero = torch.zeros(self.d, dtype=self.dtype)
        m_x, m_y = float(moduli.get("x", 0.0)), float(moduli.get("y", 0.0))
        c_x = centers["x"].to(zero) if "x" in centers else zero
        c_y = centers["y"].to(zero) if "y" in centers else zero
        escape = 100.0 * (1.0 + max(x_block.radius, y_block.radius))
        last = [torch.cat([x_block.project(c_x), y_block.project(c_y)])]

        def solve(alpha: float, beta: float) -> torch.Tensor:
            g = support.g(zero, m_x, c_x).shifted(alpha)
            h = support.h(zero, m_y, c_y).shifted(beta)
            last[0] = _saddle_newton(g, h, support.coupling, last[0], escape)
            return last[0]

        def at(alpha: float) -> torch.Tensor:
            return ball_solution(lambda beta: solve(alpha, beta),
                                 lambda z: float(torch.linalg.vector_norm(z[self.d:])),
                                 y_block.radius)

        z = ball_solution(at, lambda z: float(torch.linalg.vector_norm(z[:self.d])),
                          x_block.radius)
        return {"x": z[:self.d], "y": z[self.d:]}


def _saddle_newton(g: GeneralizedLinear, h: GeneralizedLinear, coupling: torch.Tensor,
                   start: torch.Tensor, escape: float) -> torch.Tensor:
    """The zero of G(x, y) = (grad g(x) + B y, grad h(y) - B^T x) by Newton's method with
    Armijo backtracking on ||G||^2 (full steps where it cannot resolve a decrease), stopped
    after a step of norm <= 1e-13 (1 + ||z||); :class:`NoMinimizer` where it fails."""
    d = len(coupling)

    def operator(z: torch.Tensor) -> torch.Tensor:
        x, y = z[:d], z[d:]
        return torch.cat([g.gradient(x) + coupling @ y, h.gradient(y) - coupling.T @ x])

    z = start.clone()
    for _ in range(_STEPS):
        residual = operator(z)
        jacobian = torch.cat([torch.cat([g.hessian(z[:d]), coupling], 1),
                              torch.cat([-coupling.T, h.hessian(z[d:])], 1)])
        try:
            step = torch.linalg.solve(jacobian, residual)
        except torch.linalg.LinAlgError as error:
            raise NoMinimizer("singular Jacobian") from error
        size = float(torch.linalg.vector_norm(step))
        if not math.isfinite(size):
            raise NoMinimizer("non-finite Newton step")
        if size <= _STEP * (1.0 + float(torch.linalg.vector_norm(z))):
            return z - step
        merit, scale = float(residual @ residual), 1.0
        while scale > 1e-12:
            trial = operator(z - scale * step)
            if float(trial @ trial) <= (1.0 - 1e-4 * scale) * merit:
                break
            scale *= 0.5
        else:   # ||G||^2 at float precision: the full step
            scale = 1.0
        z = z - scale * step
        if float(torch.linalg.vector_norm(z)) > escape:
            raise NoMinimizer("the iterates left the escape radius")
    raise NoMinimizer(f"no Newton step below {_STEP} in {_STEPS} steps")


def _on_ball(objective: GeneralizedLinear, radius: float) -> torch.Tensor:
    """argmin of ``objective`` over the ball of ``radius`` centred at 0 (each solve starts
    where the last one ended)."""
    last = [torch.zeros_like(objective.center)]

    def solve(nu: float) -> torch.Tensor:
        x = minimize(objective.shifted(nu), last[0], 100.0 * (1 + radius))
        last[0] = x * min(1.0, radius / max(float(torch.linalg.vector_norm(x)), 1e-300))
        return x

    return ball_solution(solve, lambda x: float(torch.linalg.vector_norm(x)), radius)
