"""Exact solvers for the problems without closed forms (P3, G3: "Newton to
1e-12"): damped Newton for a generalized linear objective, sum_i w_i rho(<a_i, x> - b_i) +
<l, x> + m / 2 ||x - c||^2 with a smooth convex link rho, and the solution on a ball through
the ball's multiplier nu (the unconstrained solution of the objective plus nu / 2 ||x||^2 whose
norm is the radius)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
from scipy.optimize import brentq

#: Newton's method stops once the squared Newton decrement g^T H^-1 g (twice the remaining
#: suboptimality near the optimum) is below this, after one more step; below _FULL_STEPS it
#: takes full steps (the line search cannot resolve smaller decreases in float64).
_DECREMENT = 1e-20
_FULL_STEPS = 1e-12
_STEPS = 200
#: The excess :func:`ball_solution` gives a solution that escaped, times (1 + radius).
ESCAPED = 1e12

T = TypeVar("T")


class NoMinimizer(RuntimeError):
    """Newton's method found no minimizer (none exists, or the iterates left ``escape``)."""


@dataclass(frozen=True)
class Link:
    """A smooth convex scalar function rho and its first two derivatives (elementwise)."""

    value: Callable[[torch.Tensor], torch.Tensor]
    first: Callable[[torch.Tensor], torch.Tensor]
    second: Callable[[torch.Tensor], torch.Tensor]


SOFTPLUS = Link(torch.nn.functional.softplus, torch.sigmoid,
                lambda t: torch.sigmoid(t) * torch.sigmoid(-t))


def log_cosh(tau: float) -> Link:
    """rho(t) = tau log cosh(t / tau) (stably: |u| + softplus(-2|u|) - log 2, u = t / tau)."""
    def value(t: torch.Tensor) -> torch.Tensor:
        u = (t / tau).abs()
        return tau * (u + torch.nn.functional.softplus(-2.0 * u) - math.log(2.0))

    return Link(value, lambda t: torch.tanh(t / tau),
                lambda t: (1.0 - torch.tanh(t / tau) ** 2) / tau)


@dataclass(frozen=True)
class GeneralizedLinear:
    """sum_i weights_i rho(<rows_i, x> - offsets_i) + <linear, x> + modulus / 2 ||x - center||^2."""

    link: Link
    rows: torch.Tensor
    offsets: torch.Tensor
    weights: torch.Tensor
    linear: torch.Tensor
    modulus: float
    center: torch.Tensor

    def value(self, x: torch.Tensor) -> float:
        t = self.rows @ x - self.offsets
        gap = x - self.center
        return float(self.weights @ self.link.value(t) + self.linear @ x
                     + 0.5 * self.modulus * (gap @ gap))

    def gradient(self, x: torch.Tensor) -> torch.Tensor:
        t = self.rows @ x - self.offsets
        return (self.rows.T @ (self.weights * self.link.first(t)) + self.linear
                + self.modulus * (x - self.center))

    def hessian(self, x: torch.Tensor) -> torch.Tensor:
        t = self.rows @ x - self.offsets
        curvature = self.weights * self.link.second(t)
        eye = torch.eye(len(x), dtype=x.dtype, device=x.device)
        return self.rows.T @ (curvature.unsqueeze(1) * self.rows) + self.modulus * eye

    def shifted(self, nu: float) -> GeneralizedLinear:
        """This objective plus nu / 2 ||x||^2 (up to a constant)."""
        modulus = self.modulus + nu
        center = self.center * (self.modulus / modulus) if modulus else self.center
        return GeneralizedLinear(self.link, self.rows, self.offsets, self.weights, self.linear,
                                 modulus, center)


def minimize(objective: GeneralizedLinear, start: torch.Tensor,
             escape: float = math.inf) -> torch.Tensor:
    """argmin of ``objective`` by damped Newton (backtracking on the value) to a squared
    decrement of 1e-20; :class:`NoMinimizer` if the Hessian is singular, an iterate's norm
    exceeds ``escape`` or 200 steps do not converge."""
    x = start.clone()
    for _ in range(_STEPS):
        gradient = objective.gradient(x)
        try:
            step = torch.linalg.solve(objective.hessian(x), gradient)
        except torch.linalg.LinAlgError as error:
            raise NoMinimizer("singular Hessian") from error
        decrement = float(gradient @ step)
        if not math.isfinite(decrement):
            raise NoMinimizer("non-finite Newton step")
        if decrement <= _DECREMENT:
            return x - step
        scale = 1.0
        if decrement > _FULL_STEPS:
            current = objective.value(x)
            while objective.value(x - scale * step) > current and scale > 1e-12:
                scale *= 0.5
        x = x - scale * step
        if float(torch.linalg.vector_norm(x)) > escape:
            raise NoMinimizer("the iterates left the escape radius")
    raise NoMinimizer(f"no squared Newton decrement of {_DECREMENT} in {_STEPS} steps")


def multiplier(excess: Callable[[float], float]) -> float:
    """The multiplier t > 0 at which a norm falling in t meets its radius: the root of
    ``excess(t)`` (the norm minus the radius, positive at t = 0), bracketed by doubling and
    found by Brent's method to float precision."""
    low, high = 0.0, 1.0
    while excess(high) > 0:
        low, high = high, 2.0 * high
    return float(brentq(excess, low, high, xtol=1e-300, rtol=4.0 * float(np.finfo(float).eps)))


def ball_solution(solve: Callable[[float], T], norm: Callable[[T], float], radius: float) -> T:
    """The solution on the ball ||.|| <= ``radius`` of a problem whose solution with the extra
    term nu / 2 ||.||^2 is ``solve(nu)`` (nu >= 0; its ``norm`` falls with nu): ``solve(0)``
    if it exists (no :class:`NoMinimizer`) and lies in the ball, else ``solve(nu)`` at the
    nu > 0 where the norm meets the radius (KKT), by Brent's method to float precision."""
    if math.isinf(radius):
        return solve(0.0)
    try:
        inside = solve(0.0)
        if norm(inside) <= radius:
            return inside
    except NoMinimizer:
        low = 1.0
        for _ in range(60):   # no solution at nu = 0: find a nu whose solution is outside
            if norm(solve(low)) > radius:
                break
            low *= 0.5
        else:
            raise NoMinimizer("no multiplier of the ball found") from None
        shift = low
        return solve(shift + multiplier(lambda nu: _excess(solve, norm, shift + nu, radius)))
    return solve(multiplier(lambda nu: _excess(solve, norm, nu, radius)))


def _excess(solve: Callable[[float], T], norm: Callable[[T], float], nu: float,
            radius: float) -> float:
    """``norm(solve(nu)) - radius``; a solution that escapes (:class:`NoMinimizer` at a tiny nu,
    where the minimizer lies far out) is outside the ball: a large positive excess, whose sign
    is all the bracketing root search needs."""
    try:
        return norm(solve(nu)) - radius
    except NoMinimizer:
        return ESCAPED * (1.0 + radius)
