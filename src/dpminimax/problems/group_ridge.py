"""P-B, group-ridge multi-hyperparameter tuning (our testbed P-B, E8): Section 7 generalized
to one regularization weight per group of coordinates, on the ridge machinery P-C shares
(:class:`~dpminimax.problems.ridge_tuning.RidgeTuningBase`: the sample, the split of A16, the
closed forms, Eq. (1) and the constants; with one group, every one of them is P-C's, bit for
bit).

The d_y = d_theta coordinates form K = d_x contiguous groups of d_theta / K; the lower level is
the training loss plus sum_k omega_k ||theta_{G_k}||^2 / 2 with omega in the box
[omega_min, omega_max]^K (:class:`~dpminimax.problems.base.Box`: the projection clips each
omega_k), the upper level the validation loss. theta_star has group-varying signal: the first
floor(K / 2) groups carry none (their best omega is omega_max) and the others a signal
growing linearly with the group's index (:meth:`GroupRidgeTuning.group_profile`), so the best
omegas differ across groups and one shared omega (P-C's tuning) cannot reach them.
"""

from __future__ import annotations

import torch

from dpminimax.problems.bilevel import Stats
from dpminimax.problems.ridge_tuning import RidgeTuningBase

#: Steps (at most) of the search for the sample's best omega, its stopping tolerance on the
#: gradient mapping, the memory of its nonmonotone line search and the search's halvings.
SEARCH_STEPS = 2000
SEARCH_TOLERANCE = 1e-12
SEARCH_MEMORY = 10
SEARCH_HALVINGS = 40
#: Shared omegas of the grid that starts the search (``test_loss_shared``).
SHARED_GRID = 100


class GroupRidgeTuning(RidgeTuningBase):
    """P-B (module docstring); ``d_x`` is the group count K (``d_y`` a multiple of it). The
    label noise is our 0.1; ``signal`` = ||theta_star|| = 2 makes the signal groups
    strong (a^T theta_star has standard deviation about 2 / sqrt(d_theta) = 0.25 at
    d_theta = 64, so the clip at +-1 is a 4-sigma event) and their best omega omega_min; the
    omega interval is P-C's, so the constants are P-C's too."""

    def __init__(self, d_x: int = 2, d_y: int = 64, noise: float = 0.1, signal: float = 2.0,
                 omega_min: float = 0.02, omega_max: float = 1.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        super().__init__(d_x, d_y, noise, signal, omega_min, omega_max, seed, dtype)

    def group_profile(self) -> torch.Tensor:
        """0 on the first floor(K / 2) groups, then 1, 2, ..., ceil(K / 2) (K = 1: one group
        with all the signal, P-C's theta_star)."""
        zero = self.groups // 2
        ramp = torch.arange(1, self.groups - zero + 1, dtype=self.dtype)
        return torch.cat([torch.zeros(zero, dtype=self.dtype), ramp])

    def omega(self, x: torch.Tensor) -> torch.Tensor:
        """The groups' omegas omega_c + x, (R, K)."""
        return self.omegas(x)

    def best_omega(self, stats: Stats, start: torch.Tensor | None = None) -> torch.Tensor:
        """Each run's best omega in the box on its sample (R, K): spectral projected gradient
        (Birgin, Martinez and Raydan 2000: Barzilai-Borwein steps, a nonmonotone Armijo search
        over the last :data:`SEARCH_MEMORY` values) on F_S with the exact hypergradient
        (Eq. (1), NP-AID's direction), all runs at once, from ``start`` (default: the best
        shared omega, :meth:`~RidgeTuningBase.best_shared` over :data:`SHARED_GRID` omegas).
        A run stops once its gradient mapping is below :data:`SEARCH_TOLERANCE` or its line
        search fails (F_S flat to rounding), all after :data:`SEARCH_STEPS` steps. F_S need not
        be convex in omega: this is a stationary point at least as good as the start."""
        x = self.best_shared(stats, SHARED_GRID) if start is None else start
        value, grad = self.hyperobjective(x, stats), self.hypergradient(x, stats)
        step = torch.ones_like(value)
        active = torch.ones_like(value, dtype=torch.bool)
        history = [value]
        for _ in range(SEARCH_STEPS):
            direction = self.x.project(x - step.unsqueeze(-1) * grad) - x
            active &= torch.linalg.vector_norm(direction, dim=-1) / step >= SEARCH_TOLERANCE
            if not bool(active.any()):
                break
            direction = torch.where(active.unsqueeze(-1), direction, 0.0)
            reference = torch.stack(history[-SEARCH_MEMORY:]).amax(0)
            slope = (grad * direction).sum(-1)
            fraction = torch.ones_like(value)
            for _ in range(SEARCH_HALVINGS):
                candidate = x + fraction.unsqueeze(-1) * direction
                new = self.hyperobjective(candidate, stats)
                accepted = (new <= reference + 1e-4 * fraction * slope) | ~active
                if bool(accepted.all()):
                    break
                fraction = torch.where(accepted, fraction, fraction / 2)
            active &= accepted
            candidate = torch.where(active.unsqueeze(-1), candidate, x)
            new = torch.where(active, new, value)
            new_grad = self.hypergradient(candidate, stats)
            moved, change = candidate - x, new_grad - grad
            curvature = (moved * change).sum(-1)
            step = torch.where(curvature > 0, (moved * moved).sum(-1)
                               / curvature.clamp(min=1e-300), torch.full_like(step, 1e8)
                               ).clamp(1e-8, 1e8)
            x, value, grad = candidate, new, new_grad
            history.append(value)
        return x

    def tuning_metrics(self, x: torch.Tensor, stats: Stats) -> dict[str, torch.Tensor]:
        """Scalars (R,) of a tuned omega vector: the test loss of the exact ridge fit at
        omega_out (a diagnostic), at the sample's best omega in the box
        (:meth:`best_omega`; ``test_loss_best``) and their difference (``excess_test_loss``);
        F_S(omega_out) - F_S(best) (metric 2, ``excess_hyperobjective``); the test loss at the
        best shared omega (one omega for all groups, P-C's tuning: ``test_loss_shared``, and
        ``excess_test_loss_shared`` over the best); the RMS distance of log10 omega_out from
        the best omega's over the groups (``log_omega_gap``) and omega_out's range
        (``omega_out_min``, ``omega_out_max``)."""
        shared = self.best_shared(stats, SHARED_GRID)
        best = self.best_omega(stats, shared)
        tuned, ideal, common = (self.test_loss(self.inner_solution(point, stats))
                                for point in (x, best, shared))
        gap = torch.log10(self.omega(x)) - torch.log10(self.omega(best))
        return {"test_loss": tuned, "test_loss_best": ideal, "excess_test_loss": tuned - ideal,
                "excess_hyperobjective": (self.hyperobjective(x, stats)
                                          - self.hyperobjective(best, stats)),
                "test_loss_shared": common, "excess_test_loss_shared": common - ideal,
                "log_omega_gap": gap.pow(2).mean(-1).sqrt(),
                "omega_out_min": self.omega(x).amin(-1), "omega_out_max": self.omega(x).amax(-1)}
