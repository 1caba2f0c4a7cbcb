"""Bilevel problems (DP bilevel, Eq. (BO)): min_{x in X} F(x) = f(x, y*(x)) with
y*(x) = argmin_y g(x, y), over an upper block x (the feasible ball X) and a lower block y (the
compact ball Y of Assumption 2.6, which holds y*(x) and y^lambda(x) for every x in X).

A :class:`BilevelProblem` is data: its blocks, its a-priori constants (Assumptions 2.5 / 2.6,
from the definition, never a sample), a sampler, per-example losses and gradients of f and g,
and the exact, evaluation-only quantities of one run's sample, computed from its sufficient
statistics (:meth:`~BilevelProblem.statistics`): y*(x), y^lambda(x), the hypergradient of
Eq. (1), the penalty gradient of Eq. (3) at the exact inner solutions, F_S(x). Shapes: x (R, d_x),
y (R, d_y), examples (R, n, ...) (one sample per run), statistics (R, ...); float64.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from dpminimax.problems.base import Block, Examples

Stats = dict[str, torch.Tensor]


@dataclass(frozen=True)
class BilevelConstants:
    """Assumptions 2.5 / 2.6 over X x Y: per-example Lipschitz constants ``l0f``, ``l0g`` (of
    the joint gradient), smoothness ``l1f``, ``l1g``, the Hessian-Lipschitz constant ``l2g``
    of g and the strong convexity ``mu_g`` of g(x, .). ``l0f_y``, ``l0g_y`` bound the part of
    one example's grad_y f, grad_y g that depends on the example (what a replacement changes;
    default l0f, l0g): the inner solvers' sensitivities use them."""

    l0f: float
    l1f: float
    l0g: float
    l1g: float
    l2g: float
    mu_g: float
    l0f_y: float | None = None
    l0g_y: float | None = None

    @property
    def inner_f(self) -> float:
        """The example-dependent bound of grad_y f (``l0f_y``, else l0f)."""
        return self.l0f if self.l0f_y is None else self.l0f_y

    @property
    def inner_g(self) -> float:
        """The example-dependent bound of grad_y g (``l0g_y``, else l0g)."""
        return self.l0g if self.l0g_y is None else self.l0g_y

    @property
    def ell(self) -> float:
        """ell = max{L0f, L1f, L0g, L1g, L2g} (Assumptions 2.5-2.6)."""
        return max(self.l0f, self.l1f, self.l0g, self.l1g, self.l2g)

    @property
    def kappa(self) -> float:
        return self.ell / self.mu_g

    @property
    def lambda_min(self) -> float:
        """The smallest penalty the lemmas allow (A5): max{2 L1f / mu_g, 2 L1g / mu_g,
        L0f / L0g, L1f / L1g} (Lemma 8.1 needs 2 L1f / mu_g for strong convexity)."""
        return max(2 * self.l1f / self.mu_g, 2 * self.l1g / self.mu_g, self.l0f / self.l0g,
                   self.l1f / self.l1g)

    @property
    def aid_bound(self) -> float:
        """C_AID = L0f + 2 L1g L0f / mu_g + (L1g / mu_g)^2 L0f: n / 2 times the replace-one
        change of Eq. (1)'s expression at a fixed y in Y (each factor of grad_x f -
        grad^2_xy g [grad^2_yy g]^-1 grad_y f moved by one example in turn;
        DP-AID sensitivity)."""
        ratio = self.l1g / self.mu_g
        return self.l0f * (1.0 + 2.0 * ratio + ratio * ratio)

    @property
    def outer_bound(self) -> float:
        """C_out = L0f + 2 L1g L0f / mu_g (A4): the norm bound of one example's outer vector
        grad_x f_i(y~l) + lambda (grad_x g_i(y~l) - grad_x g_i(y~)) once y~l is projected onto
        B(y~, 2 L0f / (lambda mu_g)); the bound of Lemma 4.5, independent of lambda."""
        return self.l0f + 2.0 * self.l1g * self.l0f / self.mu_g


@dataclass(frozen=True)
class FixedSample:
    """One sample every run of a program trains on (the attack's neighbouring datasets S+ and
    S-, our attack design), in place of each run drawing its own."""

    examples: Examples

    @property
    def n(self) -> int:
        return len(next(iter(self.examples.values())))


class BilevelProblem(ABC):
    """A bilevel ERM (BO/ERM) over blocks ``x`` and ``y`` (see the module docstring)."""

    #: A per-example bound on the data-dependent part of grad_x f, what a naive outer step
    #: calibrates its noise to (mechanism M2); 0 where grad_x f reads no data (P-A, P-D).
    upper_data_bound: float = 0.0
    #: Whether Alg. 1 line 4's outer vector reads no data (:meth:`public_outer`; Section 7).
    outer_is_public: bool = False
    #: Whether Eq. (3)'s per-example vector is one vector for every example (grad_x f and
    #: grad_x g read no data: P-D), so its clipped sum over n examples is n clipped copies.
    outer_vector_shared: bool = False

    def __init__(self, x: Block, y: Block, dtype: torch.dtype = torch.float64) -> None:
        self.x, self.y, self.dtype = x, y, dtype

    @property
    @abstractmethod
    def constants(self) -> BilevelConstants:
        """The a-priori constants of this instance."""

    @abstractmethod
    def sample(self, n: int, generator: torch.Generator) -> Examples:
        """``n`` i.i.d. examples (leading axis n)."""

    @abstractmethod
    def example_loss(self, level: str, x: torch.Tensor, y: torch.Tensor,
                     example: Examples) -> torch.Tensor:
        """f(x, y; xi) (``level`` "f") or g(x, y; xi) (``"g"``) for one point and example."""

    @abstractmethod
    def per_example_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                         examples: Examples) -> torch.Tensor:
        """The gradient in ``block`` of every example's f or g, (R, n, dim)."""

    def per_example_penalty_x(self, x: torch.Tensor, y_lambda: torch.Tensor, y: torch.Tensor,
                              lam: torch.Tensor, examples: Examples) -> torch.Tensor:
        """Eq. (3)'s penalty term lambda (grad_x g(x, y~l; xi) - grad_x g(x, y~; xi)) for every
        example (R, n, d_x), ``lam`` (R,). Problems whose grad_x g is linear in y override
        this with one evaluation at lambda (y~l - y~)."""
        return lam.view(-1, 1, 1) * (self.per_example_grad("g", "x", x, y_lambda, examples)
                                     - self.per_example_grad("g", "x", x, y, examples))

    @abstractmethod
    def statistics(self, examples: Examples) -> Stats:
        """The sufficient statistics (R, ...) of the runs' samples (R, n, ...)."""

    @abstractmethod
    def mean_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                  stats: Stats) -> torch.Tensor:
        """The gradient in ``block`` of f_S or g_S (R, dim), from the statistics."""

    @abstractmethod
    def inner_solution(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        """y*(x) = argmin_y g_S(x, y) (R, d_y)."""

    @abstractmethod
    def penalty_solution(self, x: torch.Tensor, lam: torch.Tensor,
                         stats: Stats) -> torch.Tensor:
        """y^lambda(x) = argmin_y f_S(x, y) + lambda g_S(x, y) (the penalty reformulation, Sec.
        4.1), ``lam`` (R,)."""

    @abstractmethod
    def hypergradient_at(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        """Eq. (1)'s expression at a given y (R, d_x): grad_x f_S - grad^2_xy g_S
        [grad^2_yy g_S]^-1 grad_y f_S, all at (x, y) (DP-AID's outer vector at a private y)."""

    def hypergradient(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        """grad F_S(x) of Eq. (1) (R, d_x): :meth:`hypergradient_at` y*(x)."""
        return self.hypergradient_at(x, self.inner_solution(x, stats), stats)

    @abstractmethod
    def hyperobjective(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        """F_S(x) = f_S(x, y*(x)) (R,)."""

    def penalty_gradient(self, x: torch.Tensor, lam: torch.Tensor, stats: Stats,
                         y: torch.Tensor | None = None,
                         y_lambda: torch.Tensor | None = None) -> torch.Tensor:
        """Eq. (3): grad_x f_S(x, y^l) + lambda (grad_x g_S(x, y^l) - grad_x g_S(x, y)), at the
        exact inner solutions unless ``y`` / ``y_lambda`` are given (the mean of the outer
        vectors of Alg. 1 line 4 before noise)."""
        y = self.inner_solution(x, stats) if y is None else y
        y_lambda = self.penalty_solution(x, lam, stats) if y_lambda is None else y_lambda
        return (self.mean_grad("f", "x", x, y_lambda, stats) + lam.unsqueeze(-1) * (
            self.mean_grad("g", "x", x, y_lambda, stats) - self.mean_grad("g", "x", x, y, stats)))

    def lower_modulus(self, x: torch.Tensor) -> torch.Tensor:
        """The strong convexity of g_S(x, .) at each run's x (R,), at least ``mu_g``: a public
        function of x, which the output-perturbation inner calls may scale their noise to
        (default: ``mu_g`` everywhere)."""
        return torch.full((len(x),), self.constants.mu_g, dtype=x.dtype, device=x.device)

    def public_outer(self, x: torch.Tensor, y: torch.Tensor, y_lambda: torch.Tensor,
                     lam: torch.Tensor) -> torch.Tensor:
        """Alg. 1 line 4's mean outer vector where it reads no data (``outer_is_public``; no
        example argument: a function of the released inner solutions alone, our correction of Sec.
        7's rule)."""
        raise NotImplementedError(f"{type(self).__name__}: its outer vector reads the data")

    def population_statistics(self) -> Stats | None:
        """The statistics (1, ...) of the population (Thm. 6.1's F_P), where known; None."""
        return None

    def tuning_metrics(self, x: torch.Tensor, stats: Stats) -> dict[str, torch.Tensor]:
        """A tuning problem's extra (R,) metrics at the output x (Section 7); none here."""
        return {}

    def gradient_mapping(self, x: torch.Tensor, gradient: torch.Tensor,
                         eta: torch.Tensor) -> torch.Tensor:
        """G_{v,eta}(x) = (x - Proj_X(x - eta v)) / eta (the paper's gradient mapping), ``eta``
        (R,)."""
        eta = eta.unsqueeze(-1)
        return (x - self.x.project(x - eta * gradient)) / eta


def ball(n: int, dim: int, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """``n`` points uniform in the unit ball of R^dim."""
    draws = torch.randn(n, dim, generator=generator, dtype=dtype)
    directions = draws / torch.linalg.vector_norm(draws, dim=-1, keepdim=True)
    radii = torch.rand(n, 1, generator=generator, dtype=dtype) ** (1.0 / dim)
    return directions * radii
