"""What every base solver of BYOA (paper 003) shares: the subproblem it solves, the oracle that
counts per-sample gradient evaluations, the accuracy target and the deterministic certificate
that is its only stopping rule (spec 003 §2.9a, §7 rows 3 and 11).

Everything is written in operator form over a problem's blocks: G(z) has block b equal to
grad_b of the objective on a minimized block and -grad_b on a maximized one, so a minimization
and a saddle-point problem are both the variational inequality "find z* in Z with
<G(z*), z - z*> >= 0 for all z in Z" (Z the product of the blocks' balls). The objective is the
empirical mean of the per-example losses (the *data* part, reached only through the counted
oracle) plus the proximal term (the *regularizer*: moduli[b] / 2 ||z_b - c_b||^2, with a minus
on a maximized block; free, spec §7 row 11).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from dpminimax.problems.base import Block, Examples, Point, Problem, Prox


class SolverError(RuntimeError):
    """A base solver could not certify its target within its budget (it never returns an
    uncertified point)."""


@dataclass(frozen=True)
class Target:
    """The accuracy a caller needs: sqrt(sum_b weights[b] ||z_b - z*_b||^2) <= ``radius`` for
    the exact subproblem solution z* (``weights`` None: 1 on every block, the plain distance).

    Alg. 1: radius L / (mu n); Alg. 2: L / (mu_k nbar); Alg. 3, condition (3): weights
    (mu_x, mu_y), radius L / (sqrt(mu) n); Algs. 4 / 5: weights (mu_k, mu) / (mu, mu_k), radius
    L / (sqrt(mu) nbar) (spec 003 §2.1-2.5)."""

    radius: float
    weights: Mapping[str, float] | None = None

    def weight(self, block: str) -> float:
        return 1.0 if self.weights is None else float(self.weights[block])


@dataclass(frozen=True)
class Quadratic:
    """An isotropic quadratic per block in operator form, moduli[b] / 2 ||z_b - centers[b]||^2
    (minus on a maximized block): its operator and its prox step with the ball's indicator."""

    moduli: Mapping[str, float]
    centers: Mapping[str, torch.Tensor]

    def operator(self, point: Point) -> Point:
        """moduli[b] (z_b - c_b) per block (0 where the modulus is 0)."""
        return {b: self.moduli[b] * (z - self.centers[b]) if self.moduli[b] else
                torch.zeros_like(z) for b, z in point.items()}

    def prox(self, blocks: Mapping[str, Block], point: Point, step: float) -> Point:
        """argmin_z ||z - u||^2 / (2 step) + this quadratic over Z (the product of ``blocks``'
        balls), block by block: Pi((u + step m c) / (1 + step m)) (spec §2.9b)."""
        return {b: blocks[b].project(
            (u + step * self.moduli[b] * self.centers[b]) / (1.0 + step * self.moduli[b])
            if self.moduli[b] else u) for b, u in point.items()}


class Subproblem:
    """One run's finite-sum subproblem: ``problem``'s empirical objective on ``examples``
    (n, ...) plus the proximal term ``prox``, with the a-priori constants the solvers' step
    sizes come from (never from the sample) and the counter of per-sample oracle calls: one
    call returns every block's gradient at one example and costs 1, a full operator costs n
    (spec 003 §7 row 11). More than ``budget`` evaluations is a :class:`SolverError`."""

    def __init__(self, problem: Problem, examples: Examples, prox: Prox | None,
                 budget: int) -> None:
        self.problem, self.examples = problem, examples
        self.n = len(next(iter(examples.values())))
        self.blocks = {block.name: block for block in problem.blocks}
        self.names = tuple(self.blocks)
        constants = problem.constants
        centers, prox_moduli = prox if prox is not None else ({}, {})
        sample = next(iter(examples.values()))
        self.regularizer = Quadratic(
            {b: float(prox_moduli.get(b, 0.0)) for b in self.names},
            {b: centers[b] if b in centers else torch.zeros(
                self.blocks[b].dim, dtype=sample.dtype, device=sample.device)
             for b in self.names})
        #: Strong convexity (concavity) of the data part, per block (per-sample, Assumption
        #: 3.2 / 4.2), and of the whole subproblem (data plus regularizer).
        self.data_moduli = {b: float(constants.strong_convexity[b]) for b in self.names}
        self.moduli = {b: self.data_moduli[b] + self.regularizer.moduli[b] for b in self.names}
        if min(self.moduli.values()) <= 0:
            raise ValueError(f"a base solver needs a strongly monotone subproblem; its moduli "
                             f"(problem plus proximal term) are {self.moduli}")
        #: Per-sample smoothness l of the data part, and the Lipschitz constant L_G of the whole
        #: operator (data plus regularizer): l + the largest proximal modulus.
        self.smoothness = float(constants.smoothness)
        self.lipschitz = self.smoothness + max(self.regularizer.moduli.values())
        self.budget = budget
        self.evaluations = 0
        self.last_bound = math.inf

    def rows(self, indices: torch.Tensor) -> Examples:
        """The examples at ``indices`` with a run axis of 1: (1, len(indices), ...)."""
        return {key: value[indices].unsqueeze(0) for key, value in self.examples.items()}

    def per_example(self, point: Point, batch: Examples) -> Point:
        """The data operator of every example of ``batch`` (from :meth:`rows`), blocks (B, dim);
        counted: B evaluations."""
        size = next(iter(batch.values())).shape[1]
        self.count(size)
        grads = self.problem.per_example_grads(
            {b: z.unsqueeze(0) for b, z in point.items()}, batch)
        return {b: -grads[b][0] if b in self.problem.maximized else grads[b][0]
                for b in self.names}

    def epoch(self, snapshot: Point, full: Point, size: int, generator: torch.Generator
              ) -> list[tuple[Examples, Point]]:
        """The inner steps of an SVRG-type epoch: ``size`` examples drawn uniformly with
        replacement, each (batch of one) with its variance-reduction correction
        full - B_i(snapshot); the anchors B_i(snapshot) are computed (and counted: ``size``
        evaluations) at once, so a step evaluates only B_i(z) (1 evaluation)."""
        batch = self.rows(torch.randint(self.n, (size,), generator=generator))
        anchor = self.per_example(snapshot, batch)
        corrections = zip(*((full[b] - anchor[b]).unbind(0) for b in self.names), strict=True)
        examples = zip(*(value.split(1, dim=1) for value in batch.values()), strict=True)
        return [(dict(zip(batch, parts, strict=True)),
                 dict(zip(self.names, correction, strict=True)))
                for parts, correction in zip(examples, corrections, strict=True)]

    def data_operator(self, point: Point) -> Point:
        """The data part's operator (its mean over the n examples); counted: n evaluations."""
        every = {key: value.unsqueeze(0) for key, value in self.examples.items()}
        return {b: g.mean(0) for b, g in self.per_example(point, every).items()}

    def operator(self, point: Point) -> Point:
        """G(z) of the whole subproblem (data plus regularizer); n evaluations."""
        return add(self.data_operator(point), self.regularizer.operator(point))

    def shifted(self) -> Quadratic:
        """The regularizer plus the data part's own strong convexity, moved into the prox (the
        splitting of Palaniappan-Bach and Katyusha: the data part left is merely monotone):
        modulus mu_b + p_b, center p_b c_b / (mu_b + p_b)."""
        return Quadratic(self.moduli, {
            b: self.regularizer.moduli[b] / self.moduli[b] * self.regularizer.centers[b]
            for b in self.names})

    @property
    def shifted_smoothness(self) -> float:
        """A Lipschitz constant of the per-example operator minus the data moduli: l + max_b
        mu_b - min_b mu_b (removing min_b mu_b from a mu_b-strongly monotone l-Lipschitz
        operator keeps it l-Lipschitz; the rest changes it by at most the spread)."""
        moduli = self.data_moduli.values()
        return self.smoothness + max(moduli) - min(moduli)

    def project(self, point: Point) -> Point:
        return {b: self.blocks[b].project(z) for b, z in point.items()}

    def count(self, evaluations: int) -> None:
        self.evaluations += evaluations
        if self.evaluations > self.budget:
            raise SolverError(
                f"no certified point within {self.budget} gradient evaluations "
                f"({self.budget // self.n} passes over n = {self.n}); the last certified "
                f"bound was {self.last_bound:.3g}")

    def certified(self, point: Point, operator: Point, target: Target) -> bool:
        """Whether the certificate at ``point`` (``operator`` = G(point), already counted)
        meets ``target``; the bound is kept as ``last_bound``."""
        self.last_bound = certificate(self, point, operator, target)
        if not math.isfinite(self.last_bound):
            raise SolverError(f"the certificate is {self.last_bound} (the iterates diverged)")
        return self.last_bound <= target.radius


def certificate(subproblem: Subproblem, point: Point, operator: Point,
                target: Target) -> float:
    """A deterministic upper bound on sqrt(sum_b w_b ||z_b - z*_b||^2) at a feasible ``point``
    from its operator G (spec 003 §2.9a), with m_b the subproblem's moduli, so that
    M(D) = sum_b m_b ||D_b||^2 <= <G(z) - G(z*), z - z*>, and the weights' factor
    sum_b w_b ||D_b||^2 <= max_b (w_b / m_b) M. The smaller of:

    * sqrt(M) <= sqrt(sum_b ||G_b(z)||^2 / m_b) (strong monotonicity and <G(z*), z - z*> >= 0;
      the unconstrained residual, tight at an interior solution);
    * with the natural residual r = z - Pi_Z(z - G(z) / l_G): sqrt(M) <= l_G ||r|| /
      sqrt(min_b m_b) + l_G sqrt(sum_b ||r_b||^2 / m_b) (the projection inequality at
      Pi_Z(...) against the VI at z*; the weighted form of §2.9a's
      (1 + eta l_G) / (eta mu) ||r||, valid when z* is on the boundary).
    """
    moduli, lipschitz = subproblem.moduli, subproblem.lipschitz
    factor = max(target.weight(b) / moduli[b] for b in moduli)
    residual_bound = math.sqrt(sum(float(operator[b].square().sum()) / moduli[b]
                                   for b in moduli))
    moved = subproblem.project({b: z - operator[b] / lipschitz for b, z in point.items()})
    natural = {b: point[b] - moved[b] for b in moduli}
    norm = math.sqrt(sum(float(r.square().sum()) for r in natural.values()))
    weighted = math.sqrt(sum(float(natural[b].square().sum()) / moduli[b] for b in moduli))
    natural_bound = lipschitz * (norm / math.sqrt(min(moduli.values())) + weighted)
    return math.sqrt(factor) * min(residual_bound, natural_bound)


def variance_reduced(subproblem: Subproblem, target: Target, start: Point,
                     generator: torch.Generator, prox: Quadratic, shift: Mapping[str, float],
                     step: float, inner: int) -> Point:
    """The SVRG loop shared by prox-SVRG (spec §2.9b) and Palaniappan-Bach (§2.9d): per epoch
    the full data operator at the snapshot (n; it certifies the snapshot), then ``inner``
    steps z <- prox(z - step g) with g = B_i(z) - shift z - B_i(snapshot) + B(snapshot), i
    uniform (the data's own moduli ``shift`` moved into ``prox``); the last iterate is the
    next snapshot. n + 2 ``inner`` evaluations per epoch."""
    snapshot = start
    while True:
        full = subproblem.data_operator(snapshot)
        if subproblem.certified(snapshot, add(full, subproblem.regularizer.operator(snapshot)),
                                target):
            return snapshot
        point = snapshot
        for example, correction in subproblem.epoch(snapshot, full, inner, generator):
            grad = subproblem.per_example(point, example)
            point = prox.prox(subproblem.blocks, {
                b: z - step * (grad[b][0] + correction[b] - shift[b] * z)
                for b, z in point.items()}, step)
        snapshot = point


def add(first: Point, second: Point, scale: float = 1.0) -> Point:
    """first + scale x second, block by block."""
    return {b: first[b] + scale * second[b] for b in first}
