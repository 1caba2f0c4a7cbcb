"""P-C, Section 7's scalar regularization tuning with a ridge lower level (spec 002 §4, §6.2),
with the fixes of A15 (R = ||theta||^2 / 2, omega in [omega_min, omega_max]) and A16 (a fixed
split, neighbours replace a point within its split, per-example terms scaled by the split).

xi = (a, b, val): a ~ N(0, I / d) projected onto the unit ball, b = clip(a^T theta_star +
noise z, [-1, 1]) with ||theta_star|| = ``signal``; the first half of a sample trains, the
second half validates (``val``). With x = omega - omega_c (X = B(0, (omega_max - omega_min) / 2),
omega_c the interval's centre, so X is the interval) and y = theta:
    g(x, y; xi) = (n / n_tr) [not val] (a^T y - b)^2 / 2 + omega ||y||^2 / 2,
    f(x, y; xi) = (n / n_val) [val] (a^T y - b)^2 / 2,
so g_S is the training loss plus omega R and f_S the validation loss (Eq. (4)). Closed forms
from the split moments (C = mean a a^T, c = mean a b): y*(x) = (C_tr + omega I)^-1 c_tr,
y^lambda(x) = (C_val + lambda (C_tr + omega I))^-1 (c_val + lambda c_tr) and, by Eq. (1),
F_S'(omega) = -(C_val y* - c_val)^T (C_tr + omega I)^-1 y*. grad_x g = R(y) reads no data, so
the outer vector of Alg. 1 line 4 is the same for every example (:meth:`public_outer`).
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Block, Examples, sphere
from dpminimax.problems.bilevel import BilevelConstants, BilevelProblem, Stats
from dpminimax.seeding import make_generator

#: Points of the instance's fixed test sample (the test loss of a tuned omega).
TEST_SIZE = 20_000
#: Points of the grid that finds the sample's best omega (``test_loss_best``).
OPTIMUM_GRID = 400


class RidgeTuning(BilevelProblem):
    """P-C ridge; the instance (theta_star and the test sample) is fixed by ``seed``."""

    outer_is_public = True

    def __init__(self, d_x: int = 1, d_y: int = 10, noise: float = 0.7, signal: float = 0.3,
                 omega_min: float = 0.02, omega_max: float = 1.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        if d_x != 1:
            raise ValueError(f"Section 7 tunes one scalar omega: d_x must be 1, got {d_x}")
        if not 0 < omega_min < omega_max:
            raise ValueError(f"need 0 < omega_min < omega_max, got {omega_min}, {omega_max}")
        # ||y*||, ||y^lambda|| <= sqrt(2 / omega) for lambda >= 1 (g_S(0) <= 1 / 2)
        super().__init__(Block("x", 1, (omega_max - omega_min) / 2),
                         Block("y", d_y, math.sqrt(2.0 / omega_min)), dtype)
        self.omega_min, self.omega_max = omega_min, omega_max
        self.omega_center = (omega_min + omega_max) / 2
        self.noise = noise
        self.theta_star = signal * sphere(1, d_y, make_generator(seed, "problem"), dtype)[0]
        test = self.sample(TEST_SIZE, make_generator(seed, "test"))
        self.test = self._moments({k: v.unsqueeze(0) for k, v in test.items()},
                                  torch.ones(1, TEST_SIZE, dtype=dtype))

    @property
    def constants(self) -> BilevelConstants:
        """|a^T y - b| <= R_Y + 1 and ||a|| <= 1; the split weights n / n_tr = n / n_val = 2.
        grad_y f = 2 r a (<= 2 (R_Y + 1)), grad_x f = 0; grad_y g = 2 r a + omega y, grad_x g
        = ||y||^2 / 2 (the data-dependent part of grad_y g is 2 r a: ``l0g_y``); the joint
        Hessian of g is [[0, y^T], [y, 2 a a^T + omega I]] (norm <= R_Y + 2 + omega_max), its
        third derivative I (``l2g`` 1); g(x, .) is omega-strongly convex (mu_g = omega_min;
        :meth:`lower_modulus` is omega itself)."""
        r_y, residual = self.y.radius, 2.0 * (self.y.radius + 1.0)
        return BilevelConstants(
            l0f=residual, l1f=2.0,
            l0g=math.hypot(residual + self.omega_max * r_y, r_y * r_y / 2),
            l1g=r_y + 2.0 + self.omega_max, l2g=1.0, mu_g=self.omega_min,
            l0f_y=residual, l0g_y=residual)

    def omega(self, x: torch.Tensor) -> torch.Tensor:
        """omega = omega_c + x, (R,)."""
        return self.omega_center + x[..., 0]

    def lower_modulus(self, x: torch.Tensor) -> torch.Tensor:
        return self.omega(x)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        if n % 2:
            raise ValueError(f"P-C splits its sample in two halves: n must be even, got {n}")
        d = self.y.dim
        a = Block("a", d, 1.0).project(
            torch.randn(n, d, generator=generator, dtype=self.dtype) / math.sqrt(d))
        b = torch.clamp(a @ self.theta_star + self.noise * torch.randn(
            n, generator=generator, dtype=self.dtype), -1.0, 1.0)
        val = (torch.arange(n) >= n // 2).to(self.dtype)
        return {"a": a, "b": b, "val": val}

    def _weights(self, examples: Examples, level: str) -> torch.Tensor:
        """(R, n): each example's split weight n / n_split in ``level``'s split, else 0."""
        mask = examples["val"] if level == "f" else 1.0 - examples["val"]
        return mask * mask.shape[-1] / mask.sum(-1, keepdim=True)

    def example_loss(self, level: str, x: torch.Tensor, y: torch.Tensor,
                     example: Examples) -> torch.Tensor:
        # a half split weighs its examples n / n_split = 2
        weight = 2.0 * (example["val"] if level == "f" else 1.0 - example["val"])
        loss = weight * 0.5 * (example["a"] @ y - example["b"]) ** 2
        return loss if level == "f" else loss + self.omega(x) * 0.5 * y @ y

    def per_example_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                         examples: Examples) -> torch.Tensor:
        a = examples["a"]
        if block == "x":
            value = (0.5 * (y * y).sum(-1) if level == "g" else torch.zeros(len(y), dtype=y.dtype,
                                                                              device=y.device))
            return value.view(-1, 1, 1).expand(-1, a.shape[1], 1)
        residual = (a @ y.unsqueeze(-1)).squeeze(-1) - examples["b"]
        grads = (self._weights(examples, level) * residual).unsqueeze(-1) * a
        return grads + self.omega(x).view(-1, 1, 1) * y.unsqueeze(1) if level == "g" else grads

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

    def _lower_matrix(self, omega: torch.Tensor, stats: Stats) -> torch.Tensor:
        """C_tr + omega I, (R, d, d)."""
        eye = torch.eye(self.y.dim, dtype=self.dtype, device=omega.device)
        return stats["C_tr"] + omega.view(-1, 1, 1) * eye

    def mean_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                  stats: Stats) -> torch.Tensor:
        if block == "x":
            return (0.5 * (y * y).sum(-1, keepdim=True) if level == "g"
                    else torch.zeros_like(x))
        split = "tr" if level == "g" else "val"
        grad = (stats[f"C_{split}"] @ y.unsqueeze(-1)).squeeze(-1) - stats[f"c_{split}"]
        return grad + self.omega(x).unsqueeze(-1) * y if level == "g" else grad

    def inner_solution(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return torch.linalg.solve(self._lower_matrix(self.omega(x), stats), stats["c_tr"])

    def penalty_solution(self, x: torch.Tensor, lam: torch.Tensor,
                         stats: Stats) -> torch.Tensor:
        lam3 = lam.view(-1, 1, 1)
        matrix = stats["C_val"] + lam3 * self._lower_matrix(self.omega(x), stats)
        return torch.linalg.solve(matrix, stats["c_val"] + lam.unsqueeze(-1) * stats["c_tr"])

    def hypergradient_at(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        """grad_x f = 0, grad^2_yy g_S = C_tr + omega I, grad^2_xy g_S = y^T."""
        upper = self.mean_grad("f", "y", x, y, stats)
        direction = torch.linalg.solve(self._lower_matrix(self.omega(x), stats), y)
        return -(upper * direction).sum(-1, keepdim=True)

    def _loss(self, y: torch.Tensor, moments: Stats, split: str = "") -> torch.Tensor:
        """mean (a^T y - b)^2 / 2 over a split, from its moments."""
        quad = (y * (moments[f"C{split}"] @ y.unsqueeze(-1)).squeeze(-1)).sum(-1)
        return 0.5 * quad - (moments[f"c{split}"] * y).sum(-1) + 0.5 * moments[f"bb{split}"]

    def hyperobjective(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return self._loss(self.inner_solution(x, stats), stats, "_val")

    def public_outer(self, x: torch.Tensor, y: torch.Tensor, y_lambda: torch.Tensor,
                     lam: torch.Tensor) -> torch.Tensor:
        """Alg. 1 line 4's vector, which reads no data here: grad_x f = 0 and grad_x g =
        R(y), so it is lambda (R(y~l) - R(y~)) (spec §4.3, A14: post-processing)."""
        return lam.unsqueeze(-1) * 0.5 * ((y_lambda * y_lambda).sum(-1, keepdim=True)
                                          - (y * y).sum(-1, keepdim=True))

    def candidates(self, count: int) -> torch.Tensor:
        """``count`` log-spaced omegas in [omega_min, omega_max] as points x (count, 1) (DP-Grid;
        one candidate: omega_min, the least regularization)."""
        omegas = (torch.logspace(math.log10(self.omega_min), math.log10(self.omega_max), count,
                                 dtype=self.dtype) if count > 1
                  else torch.tensor([self.omega_min], dtype=self.dtype))
        return (omegas - self.omega_center).unsqueeze(-1)

    def validation_losses(self, y: torch.Tensor, examples: Examples) -> torch.Tensor:
        """Every example's f at each candidate fit: ``y`` (R, K, d_y) -> (R, K, n)."""
        residual = torch.einsum("rkd,rnd->rkn", y, examples["a"]) - examples["b"].unsqueeze(1)
        return self._weights(examples, "f").unsqueeze(1) * 0.5 * residual ** 2

    def test_loss(self, y: torch.Tensor) -> torch.Tensor:
        """The test loss mean (a^T y - b)^2 / 2 of fits ``y`` (R, d_y) on the fixed test sample."""
        return self._loss(y, {key: value.expand(len(y), *value.shape[1:])
                              for key, value in self.test.items()})

    def tuning_metrics(self, x: torch.Tensor, stats: Stats) -> dict[str, torch.Tensor]:
        """The tuned omega, the test loss of the exact ridge fit at it (the deployed model of
        spec §6.2 metric 4, as a diagnostic), of the fit at the sample's best omega in the
        interval (a log grid of :data:`OPTIMUM_GRID` points; ``test_loss_best``) and the
        difference (``excess_test_loss``)."""
        points = self.candidates(OPTIMUM_GRID).to(x.device).view(1, -1, 1).expand(len(x), -1, 1)
        flat = {key: value.repeat_interleave(OPTIMUM_GRID, 0) for key, value in stats.items()}
        objective = self.hyperobjective(points.reshape(-1, 1), flat).view(len(x), -1)
        best = points[torch.arange(len(x)), objective.argmin(-1)]
        tuned, ideal = (self.test_loss(self.inner_solution(point, stats)) for point in (x, best))
        return {"omega_out": self.omega(x), "test_loss": tuned, "omega_best": self.omega(best),
                "test_loss_best": ideal, "excess_test_loss": tuned - ideal}
