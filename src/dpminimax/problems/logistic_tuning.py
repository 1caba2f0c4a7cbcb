"""P-C with an l2-logistic lower level (our testbed P-C, "l2-logistic regression:
iterative"; E7): Section 7's scalar tuning of omega on
:class:`~dpminimax.problems.regularization_tuning.RegularizationTuning`.

b in {-1, +1} with P(b = 1 | a) = sigmoid(a^T theta_star), ||theta_star|| = ``signal``, and
phi(z, b) = log(1 + exp(-b z)). y*(x) and y^lambda(x) have no closed form: both minimize
sum_i w_i phi(a_i^T y, b_i) + y^T W y / 2 (w, W: the splits' weights and the omegas, times
lambda for the penalty problem), strongly convex, solved by Newton's method
(:func:`newton_solve`) to a gradient norm below :data:`NEWTON_TOLERANCE`; Eq. (1) uses the exact
Hessian at y. The statistics are the splits' examples themselves (there is no sufficient
statistic).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dpminimax.problems.base import Examples
from dpminimax.problems.bilevel import BilevelConstants, Stats
from dpminimax.problems.regularization_tuning import RegularizationTuning

#: Newton's stopping tolerance on the gradient norm relative to 1 + the examples' total weight
#: (1 + lambda for the penalty problem), and its most steps.
NEWTON_TOLERANCE = 1e-13
NEWTON_STEPS = 100
#: max |phi'''(z)| of the logistic loss, 1 / (6 sqrt(3)) (at sigmoid(z) = 1/2 +- 1 / (2 sqrt 3)).
LOGISTIC_THIRD = 1.0 / (6.0 * math.sqrt(3.0))


def logistic_terms(a: torch.Tensor, b: torch.Tensor, weights: torch.Tensor,
                   y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """sum_i w_i log(1 + exp(-b_i a_i^T y)), its gradient (R, d) and Hessian (R, d, d) in y,
    for examples ``a`` (R, n, d), ``b``, ``weights`` (R, n) and ``y`` (R, d)."""
    margin = b * torch.einsum("rnd,rd->rn", a, y)
    loss = (weights * F.softplus(-margin)).sum(-1)
    grad = torch.einsum("rn,rnd->rd", -weights * b * torch.sigmoid(-margin), a)
    curvature = weights * torch.sigmoid(margin) * torch.sigmoid(-margin)
    return loss, grad, torch.einsum("rn,rni,rnj->rij", curvature, a, a)


def newton_solve(a: torch.Tensor, b: torch.Tensor, weights: torch.Tensor,
                 diagonal: torch.Tensor) -> torch.Tensor:
    """argmin_y sum_i w_i log(1 + exp(-b_i a_i^T y)) + y^T diag(``diagonal``) y / 2 for R
    runs at once, from y = 0: Newton steps capped at length 1 (the loss's curvature changes by
    at most a factor e per unit step, as ||a|| <= 1). Raises if a run's gradient norm is not
    below :data:`NEWTON_TOLERANCE` (1 + its total weight) after :data:`NEWTON_STEPS` steps."""
    y = a.new_zeros(a.shape[0], a.shape[-1])
    tolerance = NEWTON_TOLERANCE * (1.0 + weights.sum(-1))
    for _ in range(NEWTON_STEPS):
        _, grad, hessian = logistic_terms(a, b, weights, y)
        grad = grad + diagonal * y
        if bool((torch.linalg.vector_norm(grad, dim=-1) <= tolerance).all()):
            return y
        step = torch.linalg.solve(hessian + torch.diag_embed(diagonal), grad)
        y = y - step / torch.clamp(torch.linalg.vector_norm(step, dim=-1, keepdim=True),
                                   min=1.0)
    raise RuntimeError(f"Newton's method did not reach a relative gradient norm of "
                       f"{NEWTON_TOLERANCE:g} in {NEWTON_STEPS} steps")


class LogisticTuning(RegularizationTuning):
    """P-C logistic (module docstring): one omega (K = 1). The logistic loss's curvature is at
    most 1/4 of E a a^T = I / d, so omega lives two decades below the ridge's: omega in
    [0.001, 0.1], where the sample's best omega is inside the interval at n = 1000-4000 for
    ``signal`` = 1 (a^T theta_star has standard deviation 1 / sqrt(d))."""

    #: F_S at 60 omegas per run: each point is R Newton solves on the training split.
    optimum_grid = 60

    def __init__(self, d_x: int = 1, d_y: int = 10, signal: float = 1.0,
                 omega_min: float = 0.001, omega_max: float = 0.1, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        if d_x != 1:
            raise ValueError(f"Section 7 tunes one scalar omega: d_x must be 1, got {d_x}")
        # omega ||y*||^2 / 2 <= g_S(y*) <= g_S(0) = log 2, and lambda omega ||y^l||^2 / 2 <=
        # (1 + lambda) log 2: both norms <= sqrt(4 log 2 / omega_min) for lambda >= 1
        super().__init__(1, d_y, math.sqrt(4.0 * math.log(2.0) / omega_min), signal,
                         omega_min, omega_max, seed, dtype)

    @property
    def constants(self) -> BilevelConstants:
        """|phi'| <= 1, phi'' <= 1/4, |phi'''| <= 1 / (6 sqrt 3), ||a|| <= 1, split weight 2:
        grad_y f = 2 phi' b a (<= 2), grad_x f = 0; grad_y g = 2 phi' a + omega y (its
        data-dependent part <= 2: ``l0g_y``), grad_x g = ||y||^2 / 2; the joint Hessian of g
        is [[0, y^T], [y, 2 phi'' a a^T + omega I]] (norm <= R_Y + 1/2 + omega_max); its change
        is at most 2 / sqrt(3) (the [[0, dy^T], [dy, domega]] part, as for the ridge) plus
        2 |phi'''| from the data term: ``l2g``; mu_g = omega_min (:meth:`lower_modulus` is
        omega)."""
        r_y = self.y.radius
        return BilevelConstants(
            l0f=2.0, l1f=0.5, l0g=math.hypot(2.0 + self.omega_max * r_y, r_y * r_y / 2),
            l1g=r_y + 0.5 + self.omega_max, l2g=2.0 / math.sqrt(3.0) + 2.0 * LOGISTIC_THIRD,
            mu_g=self.omega_min, l0f_y=2.0, l0g_y=2.0)

    def labels(self, margin: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        coin = torch.rand(margin.shape, generator=generator, dtype=self.dtype)
        return torch.where(coin < torch.sigmoid(margin), 1.0, -1.0).to(self.dtype)

    def link_loss(self, z: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.softplus(-b * z)

    def link_slope(self, z: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return -b * torch.sigmoid(-b * z)

    @staticmethod
    def _split(examples: Examples, mask: torch.Tensor, name: str) -> Stats:
        """The rows ``mask`` selects (the same count in every run) and their mean weights."""
        runs, count = mask.shape[0], int(mask[0].sum())
        chosen = mask.bool()
        a = examples["a"][chosen].view(runs, count, -1)
        b = examples["b"][chosen].view(runs, count)
        return {f"a_{name}": a, f"b_{name}": b,
                f"w_{name}": torch.full_like(b, 1.0 / count)}

    def statistics(self, examples: Examples) -> Stats:
        return {**self._split(examples, 1.0 - examples["val"], "tr"),
                **self._split(examples, examples["val"], "val")}

    def test_statistics(self, test: Examples) -> Stats:
        return self._split(test, torch.ones_like(test["b"]), "test")

    def _terms(self, split: str, y: torch.Tensor, stats: Stats):
        return logistic_terms(stats[f"a_{split}"], stats[f"b_{split}"], stats[f"w_{split}"], y)

    def data_mean_grad(self, level: str, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        return self._terms("tr" if level == "g" else "val", y, stats)[1]

    def lower_hessian(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        return self._terms("tr", y, stats)[2] + torch.diag_embed(self._coordinate_omegas(x))

    def inner_solution(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return newton_solve(stats["a_tr"], stats["b_tr"], stats["w_tr"],
                            self._coordinate_omegas(x))

    def penalty_solution(self, x: torch.Tensor, lam: torch.Tensor,
                         stats: Stats) -> torch.Tensor:
        """argmin f_S + lambda g_S: both splits' examples with weights 1 / n_val and
        lambda / n_tr, the regularizer times lambda."""
        joined = {key: torch.cat([stats[f"{key}_val"], stats[f"{key}_tr"]], 1)
                  for key in ("a", "b")}
        weights = torch.cat([stats["w_val"], lam.unsqueeze(-1) * stats["w_tr"]], 1)
        return newton_solve(joined["a"], joined["b"], weights,
                            lam.unsqueeze(-1) * self._coordinate_omegas(x))

    def hyperobjective(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return self._terms("val", self.inner_solution(x, stats), stats)[0]

    def test_loss(self, y: torch.Tensor) -> torch.Tensor:
        test = {key: value.expand(len(y), *value.shape[1:]) for key, value in self.test.items()}
        return logistic_terms(test["a_test"], test["b_test"], test["w_test"], y)[0]
