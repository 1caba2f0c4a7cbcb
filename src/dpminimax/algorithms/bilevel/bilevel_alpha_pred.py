"""The a-priori predicted accuracy alpha_pred of DP bilevel Algorithm 1 with output-perturbation
inner solvers (A1-OP) and its parameter set (our derivation from Theorem 4.1 with every
constant explicit): the smallest alpha for which

1. lambda = max{2 B / alpha, lambda_min} (the penalty gap B / lambda <= alpha / 2; A5's floor);
2. T = ceil((256 / 3) L_lambda Delta_h / alpha^2) (Proposition 4.6 with target alpha / 2, with
   the constants of its proof);
3. beta = (L1f + lambda L1g) e_lambda + lambda L1g e_y <= alpha / 16 (the inequality after
   Lemma 4.4) with the OP inner errors e = s_op (sqrt(d_y) + sqrt(2 ln(4 T / gamma))) (output
   perturbation, gamma / (4 T) per call as in Alg. 2's radii), e_lambda + max{0, e_y - L0f /
   (lambda mu_g)} for y~l (our projection onto B(y~, 2 L0f / (lambda mu_g)) can move it that much
   further);
4. sigma (sqrt(d_x) + sqrt(2 ln(T / gamma))) <= alpha / 16 (the outer noise, Prop. 4.6's proof).

The guarantee is then ||G_{F_S,eta}(x_out)|| <= alpha at eta = 1 / (2 L_lambda) with probability
>= 1 - 3 gamma / 2 (gamma / 2 over the 2 T inner calls, gamma over the T outer draws). The
noise levels are the method's own: sigma, s_op for y* and y^lambda are read from
:meth:`DpBilevel.plan` at (epsilon, delta, lambda, T) (our zCDP split).

Lemma 4.3's constants B, L_lambda and Delta_h are not in the paper (it cites Kwon et al. 2023 /
Chen et al. 2024 without constants); their derivation: ``papers/bilevel/NOTES.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpminimax.algorithms.base import RunSpec
from dpminimax.algorithms.bilevel.dp_bilevel import DpBilevel
from dpminimax.problems.base import Block, Box
from dpminimax.problems.bilevel import BilevelConstants

#: Proposition 4.6's step count with target alpha / 2: T >= (64 / 3) L Delta / (alpha / 2)^2.
STEP_FACTOR = 256.0 / 3.0
#: Each of the two privacy terms (bias, outer noise) gets alpha / 16: alpha / 8 of target / 2.
TERM_SHARE = 1.0 / 16.0
#: Bisection stops when the bracket's ratio is below 1 + this.
RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class PenaltyConstants:
    """Lemma 4.3 made explicit (module docstring): ||grad L*_lambda - grad F|| <= ``gap`` /
    lambda, L*_lambda is ``smoothness``-smooth, 0 <= F - L*_lambda <= ``value_gap`` / lambda,
    F(x_0) - inf_X F <= ``initial_gap``; all for lambda >= 2 L1f / mu_g."""

    gap: float
    smoothness: float
    value_gap: float
    initial_gap: float


def farthest_point(block: Block) -> float:
    """sup ||x|| over the block's feasible set: the distance from x_0 = 0, where Alg. 1 starts."""
    return block.radius * math.sqrt(block.dim) if isinstance(block, Box) else block.radius


def penalty_constants(constants: BilevelConstants, reach: float) -> PenaltyConstants:
    """B, L_lambda, L0f^2 / (2 mu_g) and Delta_F <= s L0f ``reach`` (module docstring)."""
    c = constants
    kappa_g = c.l1g / c.mu_g
    s = math.hypot(1.0, kappa_g)
    return PenaltyConstants(
        gap=s * c.l0f / c.mu_g * (c.l1f + c.l2g * c.l0f / (2.0 * c.mu_g)),
        smoothness=(c.l1f + c.l2g * c.l0f / c.mu_g) * (math.hypot(1.0, 1.0 + 2.0 * kappa_g)
                                                      + 2.0 * kappa_g * s),
        value_gap=c.l0f ** 2 / (2.0 * c.mu_g),
        initial_gap=s * c.l0f * reach)


@dataclass(frozen=True)
class AlphaPrediction:
    """One alpha with the parameter set Thm. 4.1 assigns to it and both sides of its conditions:
    ``lam``, ``outer_steps`` T, ``initial_gap`` Delta_h, the noise ``sigma`` of the mean outer
    vector and ``inner_sigma`` (y, y_lambda) of the OP releases, their high-probability
    ``inner_errors`` (y~l's with the projection's share), the bias bound ``bias`` and the outer
    noise bound ``outer_noise``."""

    alpha: float
    lam: float
    outer_steps: int
    initial_gap: float
    sigma: float
    inner_sigma: tuple[float, float]
    inner_errors: tuple[float, float]
    bias: float
    outer_noise: float

    @property
    def feasible(self) -> bool:
        """Conditions 3 and 4: both privacy terms within alpha / 16."""
        return max(self.bias, self.outer_noise) <= TERM_SHARE * self.alpha

    @property
    def binding(self) -> str:
        """The larger privacy term: ``bias`` (lower level) or ``noise`` (upper level)."""
        return "bias" if self.bias >= self.outer_noise else "noise"


def release_noise(params: dict[str, Any], n: int, epsilon: float, delta: float, lam: float,
                  steps: int) -> tuple[float, float, float]:
    """The standard deviations A1-OP's plan gives its releases at (epsilon, delta, lambda, T):
    the outer noise on the mean (the sum's noise / n), the OP noise of y~ and of y~l."""
    plan = DpBilevel().plan(RunSpec(0, epsilon, delta, {
        **params, "n": n, "lam": lam, "outer_steps": steps, "schedule": "fixed"}), n)
    outer, y, y_lambda = (plan.release(name) for name in ("outer", "inner_y",
                                                          "inner_y_lambda"))
    return (outer.noise_multiplier * outer.sensitivity / n,
            y.noise_multiplier * y.sensitivity, y_lambda.noise_multiplier * y_lambda.sensitivity)


def prediction_at(alpha: float, params: dict[str, Any], n: int, epsilon: float,
                  delta: float) -> AlphaPrediction:
    """Conditions 1-4 of the module docstring at ``alpha`` for A1-OP with method ``params``
    (problem, instance, d_x, d_y, gamma)."""
    resolved = DpBilevel().resolve(params)
    problem = DpBilevel.problem(resolved)
    c, gamma = problem.constants, float(resolved["gamma"])
    penalty = penalty_constants(c, farthest_point(problem.x))
    lam = max(2.0 * penalty.gap / alpha, c.lambda_min)
    initial_gap = penalty.initial_gap + penalty.value_gap / lam
    steps = math.ceil(STEP_FACTOR * penalty.smoothness * initial_gap / alpha ** 2)
    sigma, sigma_y, sigma_lambda = release_noise(params, n, epsilon, delta, lam, steps)
    tail = math.sqrt(problem.y.dim) + math.sqrt(2.0 * math.log(4 * steps / gamma))
    error_y = sigma_y * tail
    error_lambda = sigma_lambda * tail + max(0.0, error_y - c.l0f / (lam * c.mu_g))
    return AlphaPrediction(
        alpha=alpha, lam=lam, outer_steps=steps, initial_gap=initial_gap, sigma=sigma,
        inner_sigma=(sigma_y, sigma_lambda), inner_errors=(error_y, error_lambda),
        bias=(c.l1f + lam * c.l1g) * error_lambda + lam * c.l1g * error_y,
        outer_noise=sigma * (math.sqrt(problem.x.dim) + math.sqrt(2.0 * math.log(steps / gamma))))


def predicted_alpha(params: dict[str, Any], n: int, epsilon: float,
                    delta: float) -> AlphaPrediction:
    """alpha_pred: the smallest feasible alpha (:func:`prediction_at`), by bisection in log
    alpha (both privacy terms shrink relative to alpha as alpha grows: lambda and T fall)."""
    def feasible(alpha: float) -> bool:
        return prediction_at(alpha, params, n, epsilon, delta).feasible

    high = 1.0
    while not feasible(high):
        high *= 2.0
    low = high / 2.0
    while feasible(low):
        low, high = low / 2.0, low
    while high / low > 1.0 + RELATIVE_TOLERANCE:
        middle = math.sqrt(low * high)
        low, high = (low, middle) if feasible(middle) else (middle, high)
    return prediction_at(high, params, n, epsilon, delta)
