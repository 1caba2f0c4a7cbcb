"""How far one replaced example moves a tuning problem's exact fits, against the replace-one
sensitivities of the output-perturbation releases (the OP inner solver) that rest on it."""

from __future__ import annotations

import torch

from dpminimax.problems.base import stack_examples


def op_sensitivities(constants, modulus: float, lam: float, n: int) -> dict[str, float]:
    """The OP inner fits' replace-one sensitivities where g(x, .) is ``modulus``-strongly
    convex, derived here from the constants: 2 l0g_y / (modulus n) for y* and
    2 (l0f_y + lambda l0g_y) / ((lambda modulus - L1f) n) for y^lambda."""
    c = constants
    return {"y": 2 * c.l0g_y / (modulus * n),
            "y_lambda": 2 * (c.l0f_y + lam * c.l0g_y) / ((lam * modulus - c.l1f) * n)}


def largest_fit_changes(problem, examples, x, lam, rows, extra=()) -> dict[str, float]:
    """The largest ||fit(S') - fit(S)|| of y*(x) and y^lambda(x) (penalty ``lam`` (1,)) over
    S' = S with example ``row`` (each of ``rows``) replaced by an extreme one, a = -+ the fit's
    direction with either label b = -+1, or by each (a, b) of ``extra``."""
    def fits(sample):
        stats = problem.statistics(stack_examples([sample]))
        return {"y": problem.inner_solution(x, stats),
                "y_lambda": problem.penalty_solution(x, lam, stats)}

    before, largest = fits(examples), {}
    for name, fit in before.items():
        direction = torch.nn.functional.normalize(fit, dim=-1)[0]
        replacements = [(sign * direction, label) for sign in (-1.0, 1.0)
                        for label in (-1.0, 1.0)] + list(extra)
        largest[name] = 0.0
        for row in rows:
            for a, b in replacements:
                other = {k: v.clone() for k, v in examples.items()}
                other["a"][row], other["b"][row] = a, b
                change = torch.linalg.vector_norm(fits(other)[name] - fit)
                largest[name] = max(largest[name], float(change))
    return largest
