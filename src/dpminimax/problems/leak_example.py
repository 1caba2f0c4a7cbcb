"""P-D, Example 3.1 of the DP bilevel paper with our fix: g is the mean
(not the sum), ||xi|| <= 1, X = B(0, 2).

    f(x, y) = ||x + y||^2 / 2 (no data),   g(x, y; xi) = ||y - xi||^2 / 2,   x, y in R^d,
so y*(x) = xi_bar for every x, grad^2_xy g = 0 and grad F_S(x) = x + xi_bar by Eq. (1): one
exact hypergradient at 0 releases the data mean although f reads no data. Also
y^lambda(x) = (lambda xi_bar - x) / (1 + lambda). Y = B(0, 2) holds y* and every y^lambda.
"""

from __future__ import annotations

import math

import torch

from dpminimax.problems.base import Block, Examples
from dpminimax.problems.bilevel import BilevelConstants, BilevelProblem, Stats, ball


class LeakExample(BilevelProblem):
    """P-D in dimension d = ``d_x`` = ``d_y`` (examples uniform in the unit ball; ``seed`` is
    unused: the instance has no random part)."""

    outer_vector_shared = True

    def __init__(self, d_x: int = 1, d_y: int | None = None, seed: int = 0,
                 dtype: torch.dtype = torch.float64) -> None:
        if d_y not in (None, d_x):
            raise ValueError(f"Example 3.1 has x and y in one space: d_x = {d_x} != d_y = {d_y}")
        super().__init__(Block("x", d_x, 2.0), Block("y", d_x, 2.0), dtype)

    @property
    def constants(self) -> BilevelConstants:
        """grad f = (x + y, x + y), at most sqrt(2) (2 + 2); grad_y g = y - xi, at most 3;
        grad_x g = 0; Hessians [[I, I], [I, I]] (norm 2) and [[0, 0], [0, I]] (norm 1)."""
        return BilevelConstants(l0f=math.sqrt(2.0) * 4.0, l1f=2.0, l0g=3.0, l1g=1.0, l2g=0.0,
                                mu_g=1.0)

    def sample(self, n: int, generator: torch.Generator) -> Examples:
        return {"xi": ball(n, self.x.dim, generator, self.dtype)}

    def example_loss(self, level: str, x: torch.Tensor, y: torch.Tensor,
                     example: Examples) -> torch.Tensor:
        gap = x + y if level == "f" else y - example["xi"]
        return 0.5 * gap @ gap

    def per_example_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                         examples: Examples) -> torch.Tensor:
        xi = examples["xi"]
        if level == "f":
            return (x + y).unsqueeze(1).expand_as(xi)
        return torch.zeros_like(xi) if block == "x" else y.unsqueeze(1) - xi

    def per_example_penalty_x(self, x: torch.Tensor, y_lambda: torch.Tensor, y: torch.Tensor,
                              lam: torch.Tensor, examples: Examples) -> torch.Tensor:
        """grad_x g = 0."""
        return self.per_example_grad("g", "x", x, y, examples)

    def statistics(self, examples: Examples) -> Stats:
        return {"xi": examples["xi"].mean(1)}

    def mean_grad(self, level: str, block: str, x: torch.Tensor, y: torch.Tensor,
                  stats: Stats) -> torch.Tensor:
        if level == "f":
            return x + y
        return torch.zeros_like(x) if block == "x" else y - stats["xi"]

    def inner_solution(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        return stats["xi"].expand_as(x).clone()

    def penalty_solution(self, x: torch.Tensor, lam: torch.Tensor,
                         stats: Stats) -> torch.Tensor:
        lam = lam.unsqueeze(-1)
        return (lam * stats["xi"] - x) / (1.0 + lam)

    def hypergradient_at(self, x: torch.Tensor, y: torch.Tensor, stats: Stats) -> torch.Tensor:
        return x + y  # grad^2_xy g = 0

    def hyperobjective(self, x: torch.Tensor, stats: Stats) -> torch.Tensor:
        gap = x + stats["xi"]
        return 0.5 * (gap * gap).sum(-1)
