"""How far one replaced example moves a tuning problem's exact fits (the stability that the
output-perturbation releases' sensitivities rest on)."""

from __future__ import annotations

import torch

from dpminimax.problems.base import stack_examples


def largest_fit_change(problem, examples, x, lam, name, replacements, rows) -> float:
    """The largest ||fit(S') - fit(S)|| over S' = S with example ``row`` (each of ``rows``)
    replaced by each (a, b) of ``replacements``; the fit is y*(x) (``name`` "y") or
    y^lambda(x) (``name`` "y_lambda", penalty ``lam`` (1,))."""
    def fit(sample):
        stats = problem.statistics(stack_examples([sample]))
        return (problem.inner_solution(x, stats) if name == "y"
                else problem.penalty_solution(x, lam, stats))

    before, largest = fit(examples), 0.0
    for row in rows:
        for a, b in replacements:
            other = {k: v.clone() for k, v in examples.items()}
            other["a"][row], other["b"][row] = a, b
            largest = max(largest, float(torch.linalg.vector_norm(fit(other) - before)))
    return largest
