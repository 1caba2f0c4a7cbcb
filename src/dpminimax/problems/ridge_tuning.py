"""Section 7's regularization tuning with a ridge lower level (Eq. (4)): the ridge
machinery (:class:`RidgeTuningBase`) on :class:`~dpminimax.problems.regularization_tuning.
RegularizationTuning`, P-C's scalar tuning (:class:`RidgeTuning`) and, in
:mod:`dpminimax.problems.group_ridge`, P-B's group ridge.

b = clip(a^T theta_star + noise z, [-1, 1]) with ||theta_star|| about ``signal``, phi(z, b) =
(z - b)^2 / 2. Closed forms from the split moments (C = mean a a^T, c = mean a b) with
D = diag(omega_{k(j)}) the coordinates' omegas: y*(x) = (C_tr + D)^-1 c_tr,
y^lambda(x) = (C_val + lambda (C_tr + D))^-1 (c_val + lambda c_tr) and, by Eq. (1),
dF_S / domega_k = -(C_val y* - c_val)^T (C_tr + D)^-1 E_k y*: O(d^3 + d^2 K).
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Examples
from dpminimax.problems.bilevel import BilevelConstants, Stats
from dpminimax.problems.regularization_tuning import TEST_SIZE, RegularizationTuning


class RidgeTuningBase(RegularizationTuning):
    """Ridge tuning over K groups (module docstring); the instance (theta_star and the test
    sample) is fixed by ``seed``. Subclasses set the signal's group profile
    (:meth:`group_profile`) and the tuning metrics."""

    def __init__(self, groups: int, d_y: int, noise: float, signal: float, omega_min: float,
                 omega_max: float, seed: int, dtype: torch.dtype) -> None:
        self.noise = noise
        # ||y*||, ||y^lambda|| <= sqrt(2 / omega_min) for lambda >= 1 (g_S(0) <= 1 / 2 and
        # sum_k omega_k ||y_{G_k}||^2 >= omega_min ||y||^2)
        super().__init__(groups, d_y, math.sqrt(2.0 / omega_min), signal, omega_min,
                         omega_max, seed, dtype)

    @property
    def constants(self) -> BilevelConstants:
        """|a^T y - b| <= R_Y + 1 and ||a|| <= 1; the split weights n / n_tr = n / n_val = 2.
        grad_y f = 2 r a (<= 2 (R_Y + 1)), grad_x f = 0; grad_y g = 2 r a + D y, grad_x g =
        (||y_{G_k}||^2 / 2)_k (norm <= ||y||^2 / 2; the data-dependent part of grad_y g is
        2 r a: ``l0g_y``); the joint Hessian of g is [[0, B^T], [B, 2 a a^T + D]] with
        B = (E_1 y, ..., E_K y) (||B|| = max_k ||y_{G_k}|| <= R_Y), norm <= R_Y + 2 +
        omega_max; its change between two points is [[0, dB^T], [dB, dD]] with ||dB|| <=
        ||dy||, ||dD|| <= ||domega||, whose norm is at most (c + sqrt(c^2 + 4 v^2)) / 2 over
        c^2 + v^2 = 1, i.e. ``l2g`` = 2 / sqrt(3); g(x, .) is min_k omega_k-strongly convex
        (mu_g = omega_min; :meth:`lower_modulus` is min_k omega_k itself)."""
        r_y, residual = self.y.radius, 2.0 * (self.y.radius + 1.0)
        return BilevelConstants(
            l0f=residual, l1f=2.0,
            l0g=math.hypot(residual + self.omega_max * r_y, r_y * r_y / 2),
            l1g=r_y + 2.0 + self.omega_max, l2g=2.0 / math.sqrt(3.0), mu_g=self.omega_min,
            l0f_y=residual, l0g_y=residual)

    def labels(self, margin: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return torch.clamp(margin + self.noise * torch.randn(
            margin.shape, generator=generator, dtype=self.dtype), -1.0, 1.0)

    def link_loss(self, z: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return 0.5 * (z - b) ** 2

    def link_slope(self, z: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return z - b

    def test_statistics(self, test: Examples) -> Stats:
        return self._moments(test, torch.ones(1, TEST_SIZE, dtype=self.dtype))

    def _moments(self, examples: Examples, mask: torch.Tensor) -> Stats:
        """C = mean a a^T, c = mean a b, bb = mean b^2 over the rows ``mask`` selects."""
        weights = mask / mask.sum(-1, keepdim=True)
        a, b = examples["a"], examples["b"]
        return {"C": torch.einsum("rn,rni,rnj->rij", weights, a, a),
                "c": torch.einsum("rn,rni->ri", weights * b, a),
                "bb": (weights * b * b).sum(-1)}

    def statistics(self, examples: Examples) -> Stats:
        train = self._moments(examples, 1.0 - examples["val"])
        val = self._moments(examples, examples["val"])
        return {**{f"{k}_tr": v for k, v in train.items()},
                **{f"{k}_val": v for k, v in val.items()}}

    def _lower_matrix(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        """grad^2_yy g_S = C_tr + D, (R, d, d)."""
        return stats["C_tr"] + torch.diag_embed(self._coordinate_omegas(x))

    def lower_hessian(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        return self._lower_matrix(x, stats)

    def data_mean_grad(self, level: str, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        split = "tr" if level == "g" else "val"
        return (stats[f"C_{split}"] @ y.unsqueeze(-1)).squeeze(-1) - stats[f"c_{split}"]

    def inner_solution(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return torch.linalg.solve(self._lower_matrix(x, stats), stats["c_tr"])

    def penalty_solution(self, x: torch.Tensor, lam: torch.Tensor,
                         stats: Stats) -> torch.Tensor:
        lam3 = lam.view(-1, 1, 1)
        matrix = stats["C_val"] + lam3 * self._lower_matrix(x, stats)
        return torch.linalg.solve(matrix, stats["c_val"] + lam.unsqueeze(-1) * stats["c_tr"])

    def _loss(self, y: torch.Tensor, moments: Stats, split: str = "") -> torch.Tensor:
        """mean (a^T y - b)^2 / 2 over a split, from its moments."""
        quad = (y * (moments[f"C{split}"] @ y.unsqueeze(-1)).squeeze(-1)).sum(-1)
        return 0.5 * quad - (moments[f"c{split}"] * y).sum(-1) + 0.5 * moments[f"bb{split}"]

    def hyperobjective(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return self._loss(self.inner_solution(x, stats), stats, "_val")

    def test_loss(self, y: torch.Tensor) -> torch.Tensor:
        """The test loss mean (a^T y - b)^2 / 2 of fits ``y`` (R, d_y) on the fixed test sample."""
        return self._loss(y, {key: value.expand(len(y), *value.shape[1:])
                              for key, value in self.test.items()})


class RidgeTuning(RidgeTuningBase):
    """P-C ridge (Section 7, one omega: K = 1, theta_star = signal times a uniform
    direction)."""

    def __init__(self, d_x: int = 1, d_y: int = 10, noise: float = 0.7, signal: float = 0.3,
                 omega_min: float = 0.02, omega_max: float = 1.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        if d_x != 1:
            raise ValueError(f"Section 7 tunes one scalar omega: d_x must be 1, got {d_x}")
        super().__init__(1, d_y, noise, signal, omega_min, omega_max, seed, dtype)
