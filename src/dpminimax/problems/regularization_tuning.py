"""Section 7's regularization tuning (Eq. (4)) for a generalized linear lower level:
what P-B, P-C ridge and P-C logistic share, with the fixes of A15 (R = ||theta||^2 / 2, omega in
[omega_min, omega_max]) and A16 (a fixed split, neighbours replace a point within its split,
per-example terms scaled by the split).

xi = (a, b, val): a ~ N(0, I / d) projected onto the unit ball, the label b drawn from a^T
theta_star by the subclass (:meth:`~RegularizationTuning.labels`); the first half of a sample
trains, the second half validates (``val``). The d coordinates of theta form K contiguous groups
G_k of d / K each, one omega_k per group (P-C: K = 1). With x = omega - omega_c (omega_c the
interval's centre; X = [-h, h]^K, h = (omega_max - omega_min) / 2, so X is the box
[omega_min, omega_max]^K; for K = 1 the interval is the ball B(0, h)), y = theta and the
example loss phi(a^T y, b) (:meth:`~RegularizationTuning.link_loss`):
    g(x, y; xi) = (n / n_tr) [not val] phi(a^T y, b) + sum_k omega_k ||y_{G_k}||^2 / 2,
    f(x, y; xi) = (n / n_val) [val] phi(a^T y, b),
so g_S is the training loss plus sum_k omega_k R_k and f_S the validation loss (Eq. (4)).
grad_x g = (||y_{G_k}||^2 / 2)_k reads no data, so the outer vector of Alg. 1 line 4 is the
same for every example (:meth:`~RegularizationTuning.public_outer`).
"""

from __future__ import annotations

import math
from abc import abstractmethod

import torch

from dpminimax.problems.base import Block, Box, Examples, sphere
from dpminimax.problems.bilevel import BilevelProblem, Stats
from dpminimax.seeding import make_generator

#: Points of the instance's fixed test sample (the test loss of a tuned omega).
TEST_SIZE = 20_000
#: The most candidates :meth:`RegularizationTuning.candidates` builds (a product grid has
#: count^K points).
MAX_CANDIDATES = 100_000


class RegularizationTuning(BilevelProblem):
    """Tuning K regularization weights (module docstring); the instance (theta_star and the
    test sample) is fixed by ``seed``. Subclasses give the labels, the example loss phi and its
    derivative, the exact solutions and the constants; the signal's group profile
    (:meth:`group_profile`) and the tuning metrics."""

    outer_is_public = True
    #: Points of the grid of shared omegas that finds the sample's best one.
    optimum_grid = 400

    def __init__(self, groups: int, d_y: int, y_radius: float, signal: float,
                 omega_min: float, omega_max: float, seed: int, dtype: torch.dtype) -> None:
        if not 0 < omega_min < omega_max:
            raise ValueError(f"need 0 < omega_min < omega_max, got {omega_min}, {omega_max}")
        if groups < 1 or d_y % groups:
            raise ValueError(f"{groups} groups of equal size need d_y a multiple of the "
                             f"group count, got d_y = {d_y}")
        half = (omega_max - omega_min) / 2
        super().__init__(Block("x", 1, half) if groups == 1 else Box("x", groups, half),
                         Block("y", d_y, y_radius), dtype)
        self.groups, self.group_size = groups, d_y // groups
        self.omega_min, self.omega_max = omega_min, omega_max
        self.omega_center = (omega_min + omega_max) / 2
        #: the coordinates' groups (d,) and their one-hot membership (d, K)
        self.group_of = torch.arange(d_y) // self.group_size
        self.membership = torch.eye(groups, dtype=dtype).repeat_interleave(self.group_size, 0)
        direction = sphere(1, d_y, make_generator(seed, "problem"), dtype)[0]
        self.theta_star = signal * direction * self._profile_scale()
        test = self.sample(TEST_SIZE, make_generator(seed, "test"))
        self.test = self.test_statistics({k: v.unsqueeze(0) for k, v in test.items()})

    @abstractmethod
    def labels(self, margin: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """The labels b (n,) of examples whose a^T theta_star is ``margin`` (n,)."""

    @abstractmethod
    def link_loss(self, z: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """phi(z, b), the loss of an example whose prediction a^T y is z."""

    @abstractmethod
    def link_slope(self, z: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """d phi / dz, so an example's data gradient in y is weight x slope x a."""

    @abstractmethod
    def test_statistics(self, test: Examples) -> Stats:
        """What :meth:`test_loss` needs of the fixed test sample (``test`` (1, TEST_SIZE, .))."""

    @abstractmethod
    def test_loss(self, y: torch.Tensor) -> torch.Tensor:
        """The test loss mean phi of fits ``y`` (R, d_y) on the fixed test sample."""

    def group_profile(self) -> torch.Tensor:
        """The groups' relative signal (K,) (default: the same in every group)."""
        return torch.ones(self.groups, dtype=self.dtype)

    def _profile_scale(self) -> torch.Tensor:
        """Each coordinate's factor (d,) on signal * (a uniform direction): the profile m_k
        over sqrt(sum_k m_k^2 |G_k| / d), so E ||theta_star||^2 = signal^2 (1 for K = 1)."""
        profile = self.group_profile()
        norm = torch.sqrt((profile * profile).sum() * self.group_size / self.y.dim)
        return (profile / norm)[self.group_of]

    def omegas(self, x: torch.Tensor) -> torch.Tensor:
        """The groups' omegas omega_c + x, (R, K)."""
        return self.omega_center + x

    def omega(self, x: torch.Tensor) -> torch.Tensor:
        """The first group's omega, (R,): the tuned omega of Section 7's scalar tuning."""
        return self.omegas(x)[..., 0]

    def _coordinate_omegas(self, x: torch.Tensor) -> torch.Tensor:
        """Each coordinate's omega (the diagonal of D), (R, d)."""
        return self.omegas(x)[..., self.group_of.to(x.device)]

    def lower_modulus(self, x: torch.Tensor) -> torch.Tensor:
        return self.omegas(x).amin(-1)

    def _group_squares(self, y: torch.Tensor) -> torch.Tensor:
        """||y_{G_k}||^2 (..., K)."""
        return (y * y).unflatten(-1, (self.groups, self.group_size)).sum(-1)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        if n % 2:
            raise ValueError(f"{type(self).__name__} splits its sample in two halves: n must "
                             f"be even, got {n}")
        d = self.y.dim
        a = Block("a", d, 1.0).project(
            torch.randn(n, d, generator=generator, dtype=self.dtype) / math.sqrt(d))
        b = self.labels(a @ self.theta_star, generator)
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
        loss = weight * self.link_loss(example["a"] @ y, example["b"])
        if level == "f":
            return loss
        return loss + 0.5 * (self.omegas(x) * self._group_squares(y)).sum(-1)

    def per_example_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                         examples: Examples) -> torch.Tensor:
        a = examples["a"]
        if block == "x":
            value = (0.5 * self._group_squares(y) if level == "g" else torch.zeros_like(x))
            return value.unsqueeze(1).expand(-1, a.shape[1], -1)
        z = (a @ y.unsqueeze(-1)).squeeze(-1)
        grads = (self._weights(examples, level) * self.link_slope(z, examples["b"])
                 ).unsqueeze(-1) * a
        if level == "f":
            return grads
        return grads + self._coordinate_omegas(x).unsqueeze(1) * y.unsqueeze(1)

    @abstractmethod
    def data_mean_grad(self, level: str, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        """grad_y of ``level``'s split loss (mean phi over the split) at ``y`` (R, d_y)."""

    def mean_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                  stats: Stats) -> torch.Tensor:
        if block == "x":
            return 0.5 * self._group_squares(y) if level == "g" else torch.zeros_like(x)
        grad = self.data_mean_grad(level, y, stats)
        return grad + self._coordinate_omegas(x) * y if level == "g" else grad

    @abstractmethod
    def lower_hessian(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        """grad^2_yy g_S at (x, y), (R, d, d)."""

    def hypergradient_at(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        """Eq. (1) with grad_x f = 0 and grad^2_{x y} g_S = (E_1 y, ..., E_K y) (E_k the
        restriction to G_k): -(grad_y f_S)^T [grad^2_yy g_S]^-1 E_k y for each k, one
        factorization and K right-hand sides."""
        upper = self.mean_grad("f", "y", x, y, stats)
        restricted = y.unsqueeze(-1) * self.membership.to(y.device)  # (R, d, K)
        direction = torch.linalg.solve(self.lower_hessian(x, y, stats), restricted)
        return -(upper.unsqueeze(-1) * direction).sum(-2)

    def public_outer(self, x: torch.Tensor, y: torch.Tensor, y_lambda: torch.Tensor,
                     lam: torch.Tensor) -> torch.Tensor:
        """Alg. 1 line 4's vector, which reads no data here: grad_x f = 0 and grad_x g =
        (R_k(y))_k, so it is lambda (R_k(y~l) - R_k(y~))_k (our correction of Sec. 7's rule:
        post-processing)."""
        return lam.unsqueeze(-1) * 0.5 * (self._group_squares(y_lambda)
                                          - self._group_squares(y))

    def _axis(self, count: int) -> torch.Tensor:
        """``count`` log-spaced omegas in [omega_min, omega_max] (one: omega_min)."""
        return (torch.logspace(math.log10(self.omega_min), math.log10(self.omega_max), count,
                               dtype=self.dtype) if count > 1
                else torch.tensor([self.omega_min], dtype=self.dtype))

    def candidates(self, count: int) -> torch.Tensor:
        """DP-Grid's candidates as points x (count^K, K): the product grid of ``count``
        log-spaced omegas per group (one candidate: omega_min everywhere, the least
        regularization)."""
        if count ** self.groups > MAX_CANDIDATES:
            raise ValueError(f"a product grid of {count} omegas per group over {self.groups} "
                             f"groups has {count ** self.groups} points (at most "
                             f"{MAX_CANDIDATES}): grid search is exponential in K")
        axes = torch.meshgrid(*[self._axis(count)] * self.groups, indexing="ij")
        return torch.stack(axes, -1).reshape(-1, self.groups) - self.omega_center

    def _diagonal(self, count: int) -> torch.Tensor:
        """``count`` log-spaced shared omegas (every group the same) as points x (count, K)."""
        return self._axis(count).unsqueeze(-1).expand(-1, self.groups) - self.omega_center

    def best_shared(self, stats: Stats, count: int | None = None) -> torch.Tensor:
        """Each run's best shared omega on the sample (R, K): the minimizer of F_S over
        ``count`` (default :attr:`optimum_grid`) log-spaced omegas, the same in every group
        (for K = 1 the sample's best omega in the interval)."""
        count = self.optimum_grid if count is None else count
        reference = next(iter(stats.values()))
        runs = len(reference)
        points = self._diagonal(count).to(reference.device)
        grid = points.unsqueeze(0).expand(runs, -1, -1)
        flat = {key: value.repeat_interleave(count, 0) for key, value in stats.items()}
        objective = self.hyperobjective(grid.reshape(-1, self.groups), flat).view(runs, -1)
        return grid[torch.arange(runs), objective.argmin(-1)]

    def validation_losses(self, y: torch.Tensor, examples: Examples) -> torch.Tensor:
        """Every example's f at each candidate fit: ``y`` (R, M, d_y) -> (R, M, n)."""
        z = torch.einsum("rkd,rnd->rkn", y, examples["a"])
        return (self._weights(examples, "f").unsqueeze(1)
                * self.link_loss(z, examples["b"].unsqueeze(1)))

    def tuning_metrics(self, x: torch.Tensor, stats: Stats) -> dict[str, torch.Tensor]:
        """Section 7's scalar tuning: the tuned omega, the test loss of the exact fit at it
        (the deployed model, a diagnostic), of the fit at the
        sample's best omega in the interval (a log grid of :attr:`optimum_grid` points;
        ``test_loss_best``) and the difference (``excess_test_loss``)."""
        best = self.best_shared(stats)
        tuned, ideal = (self.test_loss(self.inner_solution(point, stats)) for point in (x, best))
        return {"omega_out": self.omega(x), "test_loss": tuned, "omega_best": self.omega(best),
                "test_loss_best": ideal, "excess_test_loss": tuned - ideal}
