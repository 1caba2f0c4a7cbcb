"""The private inner solvers of DP bilevel Algorithm 1 line 3 (Alg. 2, DP-Loc-GD, with rigorous
privacy), for R runs.

The two strongly convex subproblems of an outer step (:func:`subproblems`, Alg. 2's
parameters / Cor. 8.3) are solved by

* ``op``, output perturbation (allowed by footnote 4): the exact argmin released once
  with the replace-one sensitivity 2 L / (mu n) of strongly convex ERM with L-Lipschitz
  examples;
* ``loc_gd``, DP-Loc-GD (Algorithm 2): M rounds of T_GD projected noisy gradient steps with
  eta_t = 1 / (mu (t + 1)) restarting every round, each round's average over y_0..y_{T_GD-1}
  (A6) the next round's centre, radii R_m of Alg. 2's analysis, M of A8, its T_GD (A9). Each step
  releases the sum of the examples' gradients clipped at L (replace-one sensitivity
  2 L, unconditionally).

Noise only enters through the releases the plan declares (:class:`BatchedRelease`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from dpminimax.privacy.release import BatchedRelease
from dpminimax.problems.bilevel import BilevelConstants

#: Ulps of slack :func:`outside_ball` allows for the round-off of ||value - center||.
ROUND_OFF = 16
#: The subproblems of one outer step: y~ ~ argmin g(x_t, .), y~l ~ argmin f + lambda g.
SUBPROBLEMS = ("y", "y_lambda")


@dataclass(frozen=True)
class Subproblem:
    """A strongly convex inner problem: modulus ``mu``, per-example Lipschitz constant
    ``lipschitz`` over Y, and a radius ``radius`` with the argmin in B(y0, radius), y0 = 0."""

    mu: float
    lipschitz: float
    radius: float

    def output_sensitivity(self, n: int) -> float:
        """Replace-one sensitivity of the exact argmin, 2 L / (mu n)."""
        return 2.0 * self.lipschitz / (self.mu * n)


def subproblems(constants: BilevelConstants, lam: float) -> dict[str, Subproblem]:
    """Alg. 2's parameters: g(x, .) has (mu_g, L0g, L0g / mu_g) (Remark 2.7); f + lambda g has
    modulus lambda mu_g - L1f (>= lambda mu_g / 2 for lambda >= 2 L1f / mu_g, A5), examples
    (L0f + lambda L0g)-Lipschitz (<= 2 lambda L0g, Lemma 8.1) and its argmin within
    L0f / (lambda mu_g) of y* (Lemma 8.5). The Lipschitz constants are those of the examples'
    example-dependent parts (:attr:`BilevelConstants.inner_g`, ``inner_f``), what one
    replacement changes."""
    c = constants
    return {"y": Subproblem(c.mu_g, c.inner_g, c.l0g / c.mu_g),
            "y_lambda": Subproblem(lam * c.mu_g - c.l1f, c.inner_f + lam * c.inner_g,
                                   c.l0g / c.mu_g + c.l0f / (lam * c.mu_g))}


def modulus_shrink(constants: BilevelConstants, name: str, modulus: torch.Tensor,
                   lam: torch.Tensor | float = 0.0) -> torch.Tensor:
    """The factor (<= 1) by which an output-perturbation release of subproblem ``name`` may
    shrink where g(x, .) is ``modulus``-strongly convex (>= mu_g; a public function of x): the
    planned modulus of :func:`subproblems` over the same at ``modulus``, mu_g / modulus for
    g and (lambda mu_g - L1f) / (lambda modulus - L1f) for f + lambda g."""
    c = constants
    if name == "y":
        return c.mu_g / modulus
    return (lam * c.mu_g - c.l1f) / (lam * modulus - c.l1f)


def solution_lipschitz(constants: BilevelConstants, name: str) -> float:
    """How fast subproblem ``name``'s solution moves with x: y*(.) is L1g / mu_g-Lipschitz,
    y^lambda(.) 4 L1g / mu_g-Lipschitz (Lemma 8.4)."""
    return (1.0 if name == "y" else 4.0) * constants.l1g / constants.mu_g


@dataclass(frozen=True)
class LocGdSchedule:
    """Algorithm 2's data-independent schedule: ``rounds`` M, ``steps`` T_GD per round, the
    noise ``multiplier`` of each step's gradient-sum release (sensitivity 2 L), the radii
    R_0..R_{M-1} and R_M, the high-probability bound on the output's error."""

    rounds: int
    steps: int
    multiplier: float
    radii: tuple[float, ...]
    error_bound: float


def loc_gd_schedule(sub: Subproblem, n: int, d_y: int, rho: float, epsilon_call: float,
                    gamma: float, steps: int | None = None,
                    rounds: int | None = None) -> LocGdSchedule:
    """M = max{1, ceil(log2 ln(mu eps' n / L))} (A8) unless ``rounds`` (1: non-localized DP-GD,
    A1-GD); T_GD = max{100, ceil(2 n^2 rho (1 + ln n) / (M d_y))} (Alg. 2's analysis) unless
    ``steps``; zCDP noise: the M T_GD releases of the call cost ``rho`` together (sigma_GD = (2 L /
    n) sqrt(M T_GD / (2 rho)), our zCDP split); Alg. 2's radii with the full-batch K_m = 2 R_m
    sigma_GD and failure probability ``gamma``."""
    if rounds is None:
        ratio = sub.mu * epsilon_call * n / sub.lipschitz
        rounds = max(1, math.ceil(math.log2(math.log(ratio)))) if ratio > math.e else 1
    if steps is None:
        steps = max(100, math.ceil(2 * n * n * rho * (1 + math.log(n)) / (rounds * d_y)))
    multiplier = math.sqrt(rounds * steps / (2.0 * rho))
    radii = localized_radii(sub, n, d_y, gamma, rounds, steps, multiplier, sub.radius)
    return LocGdSchedule(rounds, steps, multiplier, radii[:-1], radii[-1])


def localized_radii(sub: Subproblem, n: int, d_y: int, gamma: float, rounds: int, steps: int,
                    multiplier: float, first: float) -> tuple[float, ...]:
    """R_0 = ``first``, R_1..R_M of Alg. 2's analysis (full batch: K_m = 2 R_m sigma_GD), sigma_GD =
    (2 L / n) ``multiplier``; R_M bounds the output's error with probability 1 - gamma."""
    sigma = 2.0 * sub.lipschitz / n * multiplier
    noise = sigma ** 2 * (math.sqrt(d_y) + math.sqrt(2 * math.log(4 * rounds * steps / gamma))
                          ) ** 2
    radii = [first]
    for _ in range(rounds):
        gap = (2.0 * radii[-1] * sigma * math.sqrt(2 * math.log(4 * rounds / gamma) / steps)
               + (1 + math.log(steps)) / (sub.mu * steps) * (sub.lipschitz ** 2 + noise))
        radii.append(math.sqrt(2.0 * gap / sub.mu))
    return tuple(radii)


def project_ball(value: torch.Tensor, center: torch.Tensor, radius: torch.Tensor) -> torch.Tensor:
    """Projection of each run's ``value`` (R, d) onto B(center_r, radius_r)."""
    gap = value - center
    norms = torch.linalg.vector_norm(gap, dim=-1, keepdim=True)
    return center + gap * torch.clamp(radius.unsqueeze(-1) / torch.clamp(norms, min=1e-300),
                                      max=1.0)


def outside_ball(value: torch.Tensor, center: torch.Tensor,
                 radius: torch.Tensor) -> torch.Tensor:
    """Whether :func:`project_ball` moves each run's ``value`` (R,): ||value - center|| exceeds
    the radius by more than the round-off of the difference (a few ulp of the operands'
    scale), so a point on or inside the sphere, or one :func:`project_ball` already returned,
    is not counted."""
    norms = torch.linalg.vector_norm(value - center, dim=-1)
    scale = radius + torch.linalg.vector_norm(center, dim=-1) + norms
    return norms - radius > ROUND_OFF * torch.finfo(value.dtype).eps * scale


def loc_gd(example_grads: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor],
           start: torch.Tensor, mu: torch.Tensor, radii: torch.Tensor,
           steps: int, release: BatchedRelease, generators: Sequence[torch.Generator],
           sampler: Callable[[], tuple[torch.Tensor, torch.Tensor]] | None = None,
           batch_size: torch.Tensor | None = None) -> torch.Tensor:
    """Algorithm 2 (DP-Loc-GD) for R runs: ``example_grads(y, index)`` (R, B, d) are the
    gradients at y (R, d) of the examples ``index`` (None: all n), privatized by ``release``
    (clipped at its bound, summed, noised); the noisy mean drives
    y_{t+1} = Proj_{B(y^m_0, R_m)}[y_t - eta_t (grad + nu_t)], eta_t = 1 / (mu (t + 1));
    ``radii`` (R, M) are the rounds' R_m. With a
    ``sampler`` of Poisson batches (index, mask), Algorithm 4 (DP-Loc-SGD): the sum over each
    step's batch, divided by the expected ``batch_size`` (R,)."""
    center = start
    for radius in radii.unbind(dim=1):
        y, total = center, torch.zeros_like(center)
        for t in range(steps):
            total = total + y
            if sampler is None:
                grads = example_grads(y, None)
                noisy = release.privatize(grads, generators) / grads.shape[1]
            else:
                index, mask = sampler()
                noisy = release.privatize(example_grads(y, index), generators,
                                          mask) / batch_size.unsqueeze(-1)
            y = project_ball(y - noisy / (mu.unsqueeze(-1) * (t + 1)), center, radius)
        center = total / steps
    return center
