"""Objectives over named variable blocks with exact answers (issue #17 item 4).

A :class:`Problem` is data, not a program: its variable blocks (x, y, ...) with their feasible
balls, which blocks are minimized and which maximized, its a-priori constants (never computed
from a sample), a sampler of examples, per-example losses and gradients for R runs at once, and
the exact answers an optimization study measures against (BYOA's excess risk and strong gap): the
population and empirical solutions, the excess risk of a minimization problem and the strong
gap of a min-max problem. Shapes: block values are (R, dim) (the run axis); examples are a dict
of tensors (R, B, ...) per run, or (n, ...) for one sample; everything is in ``dtype``
(float64 by default).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

Examples = dict[str, torch.Tensor]
Point = dict[str, torch.Tensor]
#: A proximal term: its center and its modulus per block (a block absent from both has none).
Prox = tuple[Point, Mapping[str, float]]


def stack_examples(samples: Sequence[Examples]) -> Examples:
    """The runs' samples (each (n, ...)) stacked on a leading run axis."""
    return {key: torch.stack([sample[key] for sample in samples]) for key in samples[0]}


@dataclass(frozen=True)
class Block:
    """One named variable block and its feasible set, the l2 ball of ``radius`` (inf: all of
    R^dim)."""

    name: str
    dim: int
    radius: float = math.inf

    def project(self, value: torch.Tensor) -> torch.Tensor:
        """Euclidean projection of ``value`` (..., dim) onto the ball."""
        if math.isinf(self.radius):
            return value
        norms = torch.linalg.vector_norm(value, dim=-1, keepdim=True)
        return value * torch.clamp(self.radius / torch.clamp(norms, min=1e-300), max=1.0)


@dataclass(frozen=True)
class Box(Block):
    """A block whose feasible set is the box [-radius, radius]^dim (the l_inf ball of
    ``radius``, so it holds the l2 ball of ``radius`` and its points have norm at most
    radius sqrt(dim)); the projection clips each coordinate."""

    def project(self, value: torch.Tensor) -> torch.Tensor:
        """Euclidean projection of ``value`` (..., dim) onto the box."""
        if math.isinf(self.radius):
            return value
        return torch.clamp(value, -self.radius, self.radius)


@dataclass(frozen=True)
class Constants:
    """A-priori constants of a problem over its feasible set (BYOA Sec. 2): ``lipschitz`` L
    bounds every per-example gradient norm (all blocks together), ``smoothness`` l, the strong
    convexity (concavity) ``strong_convexity`` mu of each block (0: merely convex), and
    ``diameter`` D bounds the norm of every feasible point (inf: unbounded)."""

    lipschitz: float
    smoothness: float
    strong_convexity: Mapping[str, float]
    diameter: float


class Problem(ABC):
    """A stochastic objective F(blocks) = E f(blocks; xi) (see the module docstring)."""

    def __init__(self, blocks: tuple[Block, ...], maximized: tuple[str, ...] = (),
                 dtype: torch.dtype = torch.float64) -> None:
        self.blocks = blocks
        self.maximized = maximized
        self.minimized = tuple(block.name for block in blocks if block.name not in maximized)
        self.dtype = dtype

    @property
    @abstractmethod
    def constants(self) -> Constants:
        """The a-priori constants of this instance."""

    @abstractmethod
    def sample(self, n: int, generator: torch.Generator) -> Examples:
        """``n`` i.i.d. examples (tensors with leading axis n) drawn with ``generator``."""

    @abstractmethod
    def example_loss(self, point: Point, example: Examples) -> torch.Tensor:
        """f(point; example), a scalar, for one point (blocks (dim,)) and one example."""

    @abstractmethod
    def population_solution(self) -> Point:
        """The exact minimizer / saddle point of the population objective (blocks (dim,))."""

    @abstractmethod
    def empirical_solution(self, examples: Examples, prox: Prox | None = None) -> Point:
        """The exact minimizer / saddle point of the empirical objective on one sample
        (``examples`` (n, ...)); with ``prox = (centers, moduli)`` of the empirical objective
        plus ``moduli[b] / 2 ||b - centers[b]||^2`` on every minimized block b and minus it on
        every maximized one (the phase subproblems of BYOA Algs. 2, 4 and 5: Alg. 4 regularizes
        x at mu_k around x~_{k-1} and y at mu around 0)."""

    def loss(self, point: Point, examples: Examples) -> torch.Tensor:
        """Per-example losses (R, B) of R points (blocks (R, dim)) on examples (R, B, ...)."""
        per_example = torch.func.vmap(self.example_loss, in_dims=(None, 0))
        return torch.func.vmap(per_example)(point, examples)

    def per_example_grads(self, point: Point, examples: Examples) -> Point:
        """Per-example gradients (R, B, dim) of every block (autograd of
        :meth:`example_loss`; subclasses override with closed forms)."""
        per_example = torch.func.vmap(torch.func.grad(self.example_loss), in_dims=(None, 0))
        return torch.func.vmap(per_example)(point, examples)

    def objective(self, point: Point, examples: Examples) -> torch.Tensor:
        """The empirical objective (R,): the mean loss over the examples."""
        return self.loss(point, examples).mean(dim=-1)

    def empirical_excess_risk(self, point: Point, examples: Examples) -> torch.Tensor:
        """F_S(x) - min F_S (R,) of a minimization problem over block x on one sample
        ``examples`` (n, ...), against :meth:`empirical_solution`."""
        batch = {key: value.unsqueeze(0) for key, value in examples.items()}
        best = {"x": self.empirical_solution(examples)["x"].unsqueeze(0)}
        runs = point["x"].shape[0]
        stacked = {key: value.expand(runs, *value.shape[1:]) for key, value in batch.items()}
        return self.objective(point, stacked) - self.objective(best, batch)

    def feasible(self, point: Point) -> Point:
        """``point`` projected block by block onto the feasible set."""
        return {block.name: block.project(point[block.name]) for block in self.blocks}

    def block(self, name: str) -> Block:
        return next(block for block in self.blocks if block.name == name)


def sphere(n: int, dim: int, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """``n`` points uniform on the unit sphere of R^dim."""
    draws = torch.randn(n, dim, generator=generator, dtype=dtype)
    return draws / torch.linalg.vector_norm(draws, dim=-1, keepdim=True)


def random_orthogonal(dim: int, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = torch.linalg.qr(torch.randn(dim, dim, generator=generator, dtype=dtype))
    return q * torch.sign(torch.diagonal(r)).unsqueeze(0)
