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


class SyntheticOptimization(Task):
    """Minimization: excess population and empirical risk; min-max: population and empirical
    strong gap (BYOA spec 003 §5.5); both: the distance of every block to the population
    solution."""

    name: ClassVar[str] = "synthetic_optimization"
    attacked: ClassVar[bool] = False

    def evaluate(self, method: Method, fit: FitResult, data: PreparedDataset | None,
                 device: torch.device) -> list[dict[str, Any]]:
        problem = method.problem(fit.resolved_params[0])
        params = {name: value.to(problem.dtype) for name, value in fit.state.items()}
        samples = [method.sample(problem, run, fit.resolved_params[r], device)
                   for r, run in enumerate(fit.runs)]
        solution = problem.population_solution()
        rows: list[dict[str, Any]] = [{} for _ in fit.runs]
        for r, sample in enumerate(samples):
            one = {name: value[r:r + 1] for name, value in params.items()}
            if problem.maximized:
                rows[r]["population_strong_gap"] = float(problem.strong_gap(one)[0])
                rows[r]["empirical_strong_gap"] = float(problem.strong_gap(one, sample)[0])
            else:
                rows[r]["excess_population_risk"] = float(problem.excess_risk(one)[0])
                rows[r]["excess_empirical_risk"] = float(problem.excess_risk(one, sample)[0])
            for name, value in one.items():
                rows[r][f"distance_{name}"] = float(torch.linalg.vector_norm(
                    value[0] - solution[name].to(value)))
        return rows
