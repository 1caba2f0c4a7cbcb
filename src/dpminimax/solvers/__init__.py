"""The non-private base solvers of BYOA (paper 003, "bring your own algorithm"; Sec. 5):
each solves a run's strongly convex (SC-SC) finite-sum subproblem, counts its per-sample
gradient evaluations and returns only a point whose distance to the exact subproblem solution
is certified to meet the caller's :class:`Target` (the accuracy conditions of Algs. 1-5 then
hold with probability 1, so the paper's privacy accounting is unchanged). :func:`solve_runs`
solves R runs at once (one torch call per step for all runs, each run certified, counted and
sampled on its own); :func:`solve` is its one-run case.

``exact`` is the problem's closed-form :meth:`~dpminimax.problems.Problem.empirical_solution`:
it evaluates no gradient and counts none (its count is None, not 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from dpminimax.problems.base import Examples, Point, Problem, Prox, stack_examples
from dpminimax.solvers.base import (
    AUDIT_LEVELS,
    SolverError,
    Subproblem,
    Target,
    distance_potential,
    markov_failure,
    markov_iterations,
)
from dpminimax.solvers.minimization import (
    accelerated_gradient,
    gradient_descent,
    gradient_descent_rate,
    katyusha,
    prox_svrg,
    prox_svrg_potential,
    prox_svrg_rate,
    svrg,
)
from dpminimax.solvers.saddle import extragradient, extragradient_rate, palaniappan_bach_svrg

#: The most passes over the data a solver may make before :class:`SolverError`.
MAX_PASSES = 100_000
#: How a solver stops: on its certificate, or after the iterations of Markov stopping.
STOPPINGS = ("certificate", "markov")


@dataclass(frozen=True)
class Solver:
    """A base solver: ``run(subproblem, start)`` returns every run's certified point (blocks
    (R, dim)); ``saddle``: whether it solves min-max problems (the others minimize only);
    ``rate``: per run (R, 1), the factor by which an iteration (one certificate check apart)
    shrinks, in expectation, a bound on ||z - z*||^2 with known constants, for Markov stopping
    (None: none known at our step sizes); ``potential``: per run
    (R,), that bound at the start (None: :func:`~dpminimax.solvers.base.distance_potential`)."""

    run: Callable[[Subproblem, Point], Point] | None
    saddle: bool
    rate: Callable[[Subproblem], torch.Tensor] | None = None
    potential: Callable[[Subproblem, Point], torch.Tensor] | None = None


SOLVERS: dict[str, Solver] = {
    "exact": Solver(None, True),
    "gd": Solver(gradient_descent, False, gradient_descent_rate),
    "agd": Solver(accelerated_gradient, False),
    "svrg": Solver(svrg, False),
    "katyusha": Solver(katyusha, False),
    "prox_svrg": Solver(prox_svrg, False, prox_svrg_rate, prox_svrg_potential),
    "extragradient": Solver(extragradient, True, extragradient_rate),
    "pb_svrg": Solver(palaniappan_bach_svrg, True),
}


class Solution(NamedTuple):
    """A certified point and the per-sample gradient evaluations spent (None: not counted, the
    exact solver)."""

    point: Point
    gradient_evaluations: int | None


class Audited(NamedTuple):
    """An uncertified point of Markov stopping, its evaluations, whether it
    meets the target and its ratio ||z - z*||_w / r (checked against the exact solution, not
    counted), the ratio at each audit level's iteration (:data:`~dpminimax.solvers.base.
    AUDIT_LEVELS`), the iterations planned and the first after which the point met its target
    (-1: never)."""

    point: Point
    gradient_evaluations: int
    meets_target: bool
    ratio: float
    probes: dict[str, float]
    planned: int
    met: int


def check_solver(name: str, problem: Problem, stopping: str = "certificate") -> None:
    """Refuse a solver unknown or unfit for ``problem`` (a minimizer on a min-max problem), or
    Markov stopping with a solver that has no a-priori rate."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; known solvers: {sorted(SOLVERS)}")
    if problem.maximized and not SOLVERS[name].saddle:
        raise ValueError(f"solver {name!r} minimizes; the problem maximizes "
                         f"{list(problem.maximized)} (use one of "
                         f"{sorted(k for k, s in SOLVERS.items() if s.saddle)})")
    if stopping == "markov" and SOLVERS[name].rate is None:
        raise ValueError(f"solver {name!r} has no a-priori rate for Markov stopping (use one "
                         f"of {sorted(k for k, s in SOLVERS.items() if s.rate is not None)})")


def solve(name: str, problem: Problem, examples: Examples, prox: Prox | None,
          target: Target | float, generator: torch.Generator, start: Point | None = None,
          max_passes: int = MAX_PASSES, stopping: str = "certificate",
          delta: float | None = None) -> Solution | Audited:
    """Solve ``problem``'s empirical objective on one run's ``examples`` (n, ...) plus the
    proximal term ``prox`` with solver ``name`` until the certificate meets ``target`` (a
    float: the plain distance radius). ``start`` (default: the prox centers, 0 where a block
    has none, projected onto the balls) is where the iterates begin; ``generator`` draws the
    solver's samples. An iterative solver that cannot certify within ``max_passes`` x n
    evaluations raises :class:`SolverError` (it never returns an uncertified point).
    ``stopping="markov"``: see :func:`solve_runs`."""
    return solve_runs([name], problem, [examples], [prox], [target], [generator],
                      None if start is None else [start], max_passes, stopping, delta)[0]


def solve_runs(names: str | Sequence[str], problem: Problem, samples: Sequence[Examples],
               proxes: Sequence[Prox | None], targets: Sequence[Target | float],
               generators: Sequence[torch.Generator],
               starts: Sequence[Point | None] | None = None,
               max_passes: int = MAX_PASSES, stopping: str = "certificate",
               delta: float | None = None) -> list[Solution] | list[Audited]:
    """:func:`solve` for R runs at once: run r's ``samples[r]`` (n, ...; the same n for all),
    ``proxes[r]``, ``targets[r]``, ``generators[r]``, ``starts[r]`` and solver ``names[r]`` (one
    name: all runs). The runs of one solver are solved together (a run stops counting once
    certified; the others go on); each gets what its own :func:`solve` guarantees, a certified
    point and its own count. One run past its budget is a :class:`SolverError`.

    ``stopping="markov"`` (the accuracy-condition audit): no certificate; each
    run makes the iterations after which the solver's a-priori rate (:attr:`Solver.rate`)
    meets the in-expectation accuracy of the paper's Markov route at privacy ``delta``
    (:func:`~dpminimax.solvers.base.markov_iterations`, from the solver's rate and potential),
    and comes back :class:`Audited` (the count as with the certificate: each iteration's full
    operator, the last one unused), its ratio to the exact subproblem solution measured at the
    stop, at the iterations of each audit level and at every check (the first that meets the
    target); the exact solutions are a diagnostic, never returned as the point."""
    if stopping not in STOPPINGS or (stopping == "markov") == (delta is None):
        raise ValueError(f"stopping {stopping!r} with delta {delta}: use 'certificate', or "
                         f"'markov' with the privacy delta")
    runs = len(samples)
    names = [names] * runs if isinstance(names, str) else list(names)
    starts = [None] * runs if starts is None else list(starts)
    for name in set(names):
        check_solver(name, problem, stopping)
    solutions: list[Solution | None] = [None] * runs
    for name in dict.fromkeys(names):
        group = [r for r in range(runs) if names[r] == name]
        solved = _solve_group(name, problem, *([values[r] for r in group] for values in (
            samples, proxes, targets, generators, starts)), max_passes=max_passes,
            delta=delta)
        for r, solution in zip(group, solved, strict=True):
            solutions[r] = solution
    return solutions


def _solve_group(name: str, problem: Problem, samples: list[Examples],
                 proxes: list[Prox | None], targets: list[Target | float],
                 generators: list[torch.Generator], starts: list[Point | None],
                 max_passes: int, delta: float | None) -> list[Solution] | list[Audited]:
    """:func:`solve_runs` for runs of one solver ``name`` (``delta``: Markov stopping)."""
    solver = SOLVERS[name]
    if solver.run is None:
        return [Solution(problem.empirical_solution(sample, prox), None)
                for sample, prox in zip(samples, proxes, strict=True)]
    stacked = stack_examples(samples)
    subproblem = Subproblem(
        problem, stacked, proxes,
        [target if isinstance(target, Target) else Target(float(target)) for target in targets],
        generators, budget=max_passes * next(iter(stacked.values())).shape[1])
    centers = subproblem.regularizer.centers
    start = {b: torch.stack([centers[b][r] if point is None else point[b]
                             for r, point in enumerate(starts)]) for b in subproblem.names}
    start = subproblem.project(start)
    if delta is not None:
        initial = (solver.potential or distance_potential)(subproblem, start)
        contraction = solver.rate(subproblem)
        subproblem.planned = markov_iterations(subproblem, initial, contraction,
                                               markov_failure(problem, delta))
        exact = [problem.empirical_solution(sample, prox)
                 for sample, prox in zip(samples, proxes, strict=True)]
        subproblem.audit({b: torch.stack([z[b] for z in exact]).to(start[b])
                          for b in subproblem.names},
                         {level: markov_iterations(subproblem, initial, contraction, failure)
                          for level, failure in AUDIT_LEVELS.items()})
    try:
        point = solver.run(subproblem, start)
    except SolverError as error:
        raise SolverError(f"solver {name!r}: {error}") from None
    solutions = [Solution({b: z[r] for b, z in point.items()}, int(count))
                 for r, count in enumerate(subproblem.evaluations)]
    if delta is None:
        return solutions
    ratios = subproblem.ratio(point).tolist()
    probes = {level: ratio.tolist() for level, ratio in subproblem.probed.items()}
    return [Audited(*solution, ratio <= 1.0, ratio,
                    {level: values[r] for level, values in probes.items()}, planned, met)
            for r, (solution, ratio, planned, met) in enumerate(zip(
                solutions, ratios, subproblem.planned.tolist(), subproblem.met.tolist(),
                strict=True))]


__all__ = ["AUDIT_LEVELS", "MAX_PASSES", "SOLVERS", "STOPPINGS", "Audited", "Solution", "Solver",
           "SolverError", "Subproblem", "Target", "check_solver", "markov_failure", "solve",
           "solve_runs"]
