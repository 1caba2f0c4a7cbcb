"""The non-private base solvers of BYOA (paper 003, "bring your own algorithm"; spec §2.8-2.9):
each solves one run's strongly convex (SC-SC) finite-sum subproblem, counts its per-sample
gradient evaluations and returns only a point whose distance to the exact subproblem solution
is certified to meet the caller's :class:`Target` (the accuracy conditions of Algs. 1-5 then
hold with probability 1, so the paper's privacy accounting is unchanged).

``exact`` is the problem's closed-form :meth:`~dpminimax.problems.Problem.empirical_solution`:
it evaluates no gradient and counts none (its count is None, not 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from dpminimax.problems.base import Examples, Point, Problem, Prox
from dpminimax.solvers.base import SolverError, Subproblem, Target
from dpminimax.solvers.minimization import (
    accelerated_gradient,
    gradient_descent,
    katyusha,
    svrg,
)
from dpminimax.solvers.saddle import extragradient, palaniappan_bach_svrg

#: The most passes over the data a solver may make before :class:`SolverError`.
MAX_PASSES = 100_000


@dataclass(frozen=True)
class Solver:
    """A base solver: ``run(subproblem, target, start, generator)`` returns a certified point;
    ``saddle``: whether it solves min-max problems (the others minimize only)."""

    run: Callable[[Subproblem, Target, Point, torch.Generator], Point] | None
    saddle: bool


SOLVERS: dict[str, Solver] = {
    "exact": Solver(None, True),
    "gd": Solver(gradient_descent, False),
    "agd": Solver(accelerated_gradient, False),
    "svrg": Solver(svrg, False),
    "katyusha": Solver(katyusha, False),
    "extragradient": Solver(extragradient, True),
    "pb_svrg": Solver(palaniappan_bach_svrg, True),
}


class Solution(NamedTuple):
    """A certified point and the per-sample gradient evaluations spent (None: not counted, the
    exact solver)."""

    point: Point
    gradient_evaluations: int | None


def check_solver(name: str, problem: Problem) -> None:
    """Refuse a solver unknown or unfit for ``problem`` (a minimizer on a min-max problem)."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; known solvers: {sorted(SOLVERS)}")
    if problem.maximized and not SOLVERS[name].saddle:
        raise ValueError(f"solver {name!r} minimizes; the problem maximizes "
                         f"{list(problem.maximized)} (use one of "
                         f"{sorted(k for k, s in SOLVERS.items() if s.saddle)})")


def solve(name: str, problem: Problem, examples: Examples, prox: Prox | None,
          target: Target | float, generator: torch.Generator, start: Point | None = None,
          max_passes: int = MAX_PASSES) -> Solution:
    """Solve ``problem``'s empirical objective on one run's ``examples`` (n, ...) plus the
    proximal term ``prox`` with solver ``name`` until the certificate meets ``target`` (a
    float: the plain distance radius). ``start`` (default: the prox centers, 0 where a block
    has none, projected onto the balls) is where the iterates begin; ``generator`` draws the
    solver's samples. An iterative solver that cannot certify within ``max_passes`` x n
    evaluations raises :class:`SolverError` (it never returns an uncertified point)."""
    check_solver(name, problem)
    solver = SOLVERS[name]
    if solver.run is None:
        return Solution(problem.empirical_solution(examples, prox), None)
    target = target if isinstance(target, Target) else Target(float(target))
    n = len(next(iter(examples.values())))
    subproblem = Subproblem(problem, examples, prox, budget=max_passes * n)
    if start is None:
        start = {b: subproblem.regularizer.centers[b] for b in subproblem.names}
    try:
        point = solver.run(subproblem, target, subproblem.project(start), generator)
    except SolverError as error:
        raise SolverError(f"solver {name!r} (target radius {target.radius:.3g}): "
                          f"{error}") from None
    return Solution(point, subproblem.evaluations)


__all__ = ["MAX_PASSES", "SOLVERS", "Solution", "Solver", "SolverError", "Subproblem",
           "Target", "check_solver", "solve"]
