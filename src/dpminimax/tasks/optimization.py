"""Stochastic optimization on a synthetic problem with exact answers (:mod:`dpminimax.problems`):
each run's output is measured against the problem's exact optimum or saddle point, on the
population and on the run's own sample. Not attacked (the sample is drawn per run; the
privacy of such runs is checked by the conformance suite and the audit, not by membership
inference)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import torch

from dpminimax.tasks.base import Task
from dpminimax.trivial import OUTPUT, column, prefixed

if TYPE_CHECKING:
    from dpminimax.data import PreparedDataset
    from dpminimax.fit_result import FitResult
    from dpminimax.problems import Problem
    from dpminimax.problems.base import Examples, Point


class SyntheticOptimization(Task):
    """Minimization: excess population and empirical risk; min-max: population and empirical
    strong gap (Thm. 4.4), or the primal gap Phi(x~) - min Phi where only x is
    released (Cor. 4.9), and where the game defines it the population weak gap of each group
    of seeds with the same budget and n (the quantity Thm. 4.8 bounds); all: the distance of
    every block to the population solution, and for every metric the method's printed bound
    on its expectation (``<metric>_bound``) and the ratio of the run's value to it
    (``<metric>_over_bound``)."""

    name: ClassVar[str] = "synthetic_optimization"
    attacked: ClassVar[bool] = False
    draws_data: ClassVar[bool] = True

    def evaluate(self, fit: FitResult, data: PreparedDataset | None,
                 device: torch.device) -> list[dict[str, Any]]:
        """Each run's errors (class docstring) and, beside them, ``trivial_<metric>``: the
        same errors of the centre of the feasible balls, 0 in every released block (x = 0,
        (x, y) = (0, 0); the start x~_0 = 0 of BYOA's phased algorithms), a point every method
        could release without data (``trivial_output``)."""
        problem = fit.method.problem(fit.resolved_params[0])
        params = {name: value.to(problem.dtype) for name, value in fit.state.items()}
        if len(fit.samples) != len(fit.runs):
            raise ValueError(f"method {fit.method.name!r}: its program kept no training samples "
                             "(FitResult.samples) to measure the empirical quantities on")
        samples = fit.samples
        solution = problem.population_solution()
        centre = {name: torch.zeros_like(value[:1]) for name, value in params.items()}
        # the trivial point's population errors are those of every run of this problem
        trivial = prefixed(_errors(problem, centre, None, solution)) | {
            OUTPUT: trivial_output(centre)}
        # the program's per-run counts (BYOA's base solvers: gradient_evaluations) come first
        rows: list[dict[str, Any]] = [dict(c) for c in fit.counters] or [{} for _ in fit.runs]
        for r, sample in enumerate(samples):
            one = {name: value[r:r + 1] for name, value in params.items()}
            rows[r] |= _errors(problem, one, None, solution) | _errors(problem, one, sample)
            rows[r] |= trivial | prefixed(_errors(problem, centre, sample))
        if problem.maximized and hasattr(problem, "weak_gap") and set(problem.maximized) <= set(
                params):
            _add_weak_gaps(problem, params, fit, rows)
            gap = float(problem.weak_gap(centre))  # S copies of one point: its own weak gap
            for row in rows:
                row[column("population_weak_gap")] = gap
        for r in range(len(samples)):
            run = fit.runs[r]
            bounds = fit.method.utility_bounds(problem, int(fit.resolved_params[r]["n"]),
                                           run.epsilon, run.delta)
            for metric, bound in bounds.items():
                if metric not in rows[r]:  # e.g. a weak-gap bound on a game without one
                    continue
                rows[r][f"{metric}_bound"] = bound
                for name in (metric, column(metric)):
                    rows[r][f"{name}_over_bound"] = (rows[r][name] / bound if bound > 0
                                                     else float("nan"))
        return rows


def trivial_output(point: Point) -> str:
    """The trivial point in words: ``x = 0`` or ``(x, y) = (0, 0)``."""
    names = list(point)
    if len(names) == 1:
        return f"{names[0]} = 0"
    return f"({', '.join(names)}) = ({', '.join('0' for _ in names)})"


def _errors(problem: Problem, point: Point, sample: Examples | None,
            solution: Point | None = None) -> dict[str, float]:
    """The errors of one point (blocks (1, dim)) on the population (``sample`` None; with
    the distance of every block to ``solution``) or on ``sample``: the primal gap where only
    the minimized block is released (BYOA Cor. 4.9), the strong gap of a game, else the
    excess risk."""
    where = "population" if sample is None else "empirical"
    args = (point,) if sample is None else (point, sample)
    if problem.maximized and not set(problem.maximized) <= set(point):
        errors = {f"{where}_primal_gap": float(problem.primal_gap(*args)[0])}
    elif problem.maximized:
        errors = {f"{where}_strong_gap": float(problem.strong_gap(*args)[0])}
    else:
        errors = {f"excess_{where}_risk": float(problem.excess_risk(*args)[0])}
    if solution is not None:
        errors |= {f"distance_{name}": float(torch.linalg.vector_norm(
            value[0] - solution[name].to(value))) for name, value in point.items()}
    return errors


def _add_weak_gaps(problem: Problem, params: dict[str, torch.Tensor], fit: FitResult,
                   rows: list[dict[str, Any]]) -> None:
    """``population_weak_gap`` of every group of runs with the same budget and n: the weak gap
    of the group's outputs (its seeds; the quantity Thm. 4.8 bounds), the
    same value on each of the group's rows."""
    groups: dict[tuple[float, int], list[int]] = {}
    for r, run in enumerate(fit.runs):
        groups.setdefault((run.epsilon, int(fit.resolved_params[r]["n"])), []).append(r)
    for members in groups.values():
        points = {name: value[members] for name, value in params.items()}
        gap = float(problem.weak_gap(points))
        for r in members:
            rows[r]["population_weak_gap"] = gap
