"""Stochastic optimization on a synthetic problem with exact answers (:mod:`dpminimax.problems`):
each run's output is measured against the problem's exact optimum or saddle point, on the
population and on the run's own sample. Not attacked (the sample is drawn per run; the
privacy of such runs is checked by the conformance suite and the audit, not by membership
inference)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import torch

from dpminimax.tasks.base import Task

if TYPE_CHECKING:
    from dpminimax.algorithms.base import FitResult, Method
    from dpminimax.data import PreparedDataset
    from dpminimax.problems import Problem


class SyntheticOptimization(Task):
    """Minimization: excess population and empirical risk; min-max: population and empirical
    strong gap (BYOA spec 003 §5.5), or the primal gap Phi(x~) - min Phi where only x is
    released (Cor. 4.9), and where the game defines it the population weak gap of each group
    of seeds with the same budget and n (the quantity Thm. 4.8 bounds); all: the distance of
    every block to the population solution, and for every metric the method's printed bound
    on its expectation (``<metric>_bound``) and the ratio of the run's value to it
    (``<metric>_over_bound``)."""

    name: ClassVar[str] = "synthetic_optimization"
    attacked: ClassVar[bool] = False
    draws_data: ClassVar[bool] = True

    def evaluate(self, method: Method, fit: FitResult, data: PreparedDataset | None,
                 device: torch.device) -> list[dict[str, Any]]:
        problem = method.problem(fit.resolved_params[0])
        params = {name: value.to(problem.dtype) for name, value in fit.state.items()}
        if len(fit.samples) != len(fit.runs):
            raise ValueError(f"method {method.name!r}: its program kept no training samples "
                             "(FitResult.samples) to measure the empirical quantities on")
        samples = fit.samples
        solution = problem.population_solution()
        # the program's per-run counts (BYOA's base solvers: gradient_evaluations) come first
        rows: list[dict[str, Any]] = [dict(c) for c in fit.counters] or [{} for _ in fit.runs]
        for r, sample in enumerate(samples):
            one = {name: value[r:r + 1] for name, value in params.items()}
            if problem.maximized and not set(problem.maximized) <= set(one):
                # only the minimized block is released (BYOA Cor. 4.9): the primal gap
                rows[r]["population_primal_gap"] = float(problem.primal_gap(one)[0])
                rows[r]["empirical_primal_gap"] = float(problem.primal_gap(one, sample)[0])
            elif problem.maximized:
                rows[r]["population_strong_gap"] = float(problem.strong_gap(one)[0])
                rows[r]["empirical_strong_gap"] = float(problem.strong_gap(one, sample)[0])
            else:
                rows[r]["excess_population_risk"] = float(problem.excess_risk(one)[0])
                rows[r]["excess_empirical_risk"] = float(problem.excess_risk(one, sample)[0])
            for name, value in one.items():
                rows[r][f"distance_{name}"] = float(torch.linalg.vector_norm(
                    value[0] - solution[name].to(value)))
        if problem.maximized and hasattr(problem, "weak_gap") and set(problem.maximized) <= set(
                params):
            _add_weak_gaps(problem, params, fit, rows)
        for r in range(len(samples)):
            run = fit.runs[r]
            bounds = method.utility_bounds(problem, int(fit.resolved_params[r]["n"]),
                                           run.epsilon, run.delta)
            for metric, bound in bounds.items():
                if metric not in rows[r]:  # e.g. a weak-gap bound on a game without one
                    continue
                rows[r][f"{metric}_bound"] = bound
                rows[r][f"{metric}_over_bound"] = (rows[r][metric] / bound if bound > 0
                                                   else float("nan"))
        return rows


def _add_weak_gaps(problem: Problem, params: dict[str, torch.Tensor], fit: FitResult,
                   rows: list[dict[str, Any]]) -> None:
    """``population_weak_gap`` of every group of runs with the same budget and n: the weak gap
    of the group's outputs (its seeds; BYOA spec 003 §5.5, the quantity Thm. 4.8 bounds), the
    same value on each of the group's rows."""
    groups: dict[tuple[float, int], list[int]] = {}
    for r, run in enumerate(fit.runs):
        groups.setdefault((run.epsilon, int(fit.resolved_params[r]["n"])), []).append(r)
    for members in groups.values():
        points = {name: value[members] for name, value in params.items()}
        gap = float(problem.weak_gap(points))
        for r in members:
            rows[r]["population_weak_gap"] = gap
