"""Papers' own closed-form noise calibrations, reported beside (never instead of) the accountant.

DP-FERMI (Lowy, Gupta, Razaviyayn, ICLR 2023), Theorem 3.3 (= Thm. D.2), sensitive-attribute
part: Algorithm 1 is (epsilon, delta)-DP with respect to the sensitive attributes (neighbours
differ in one example's s_i) if

    sigma_w^2     >= 16 T ln(1/delta) / (epsilon^2 n^2 rho),
    sigma_theta^2 >= 16 L^2 D^2 ln(1/delta) T / (epsilon^2 n^2 rho),

under the conditions epsilon <= 2 ln(1/delta) and T >= (n sqrt(epsilon) / (2 m))^2, with L the
Lipschitz constant of F(x, .), D a bound on |W_rj| and rho a lower bound on every group's share.
The released code takes the bounds with equality, rho = (smallest group count - 1) / n and
T = epochs * ceil(n / m) (the released code). These are pure formulas: what they do and do not
guarantee is for the caller to record (Thm. 3.3's conditions are the caveats).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def code_rho(group_counts: Sequence[int]) -> float:
    """``(min_r count_r - 1) / n``: the released code's rho; the ``- 1`` keeps it a
    lower bound on every group's share in a neighbour that moved one example out of a group."""
    counts = [int(c) for c in group_counts]
    if not counts or min(counts) < 1:
        raise ValueError(f"every group needs at least one example, got counts {counts}")
    return (min(counts) - 1) / sum(counts)


def code_steps(n: int, batch_size: int, epochs: int) -> int:
    """``epochs * ceil(n / m)``: the step count of shuffled epochs with the last partial batch
    kept, as in the released code."""
    return int(epochs) * math.ceil(n / batch_size)


def _variance_unit(epsilon: float, delta: float, n: int, steps: int, rho: float) -> float:
    """``16 T ln(1/delta) / (epsilon^2 n^2 rho)``, shared by both bounds of Thm. 3.3."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if not 0.0 < rho <= 1.0:
        raise ValueError(f"rho must be in (0, 1], got {rho}")
    return 16.0 * steps * math.log(1.0 / delta) / (epsilon**2 * n**2 * rho)


def theorem_3_3_sigma_w(epsilon: float, delta: float, n: int, steps: int, rho: float) -> float:
    """sigma_w of DP-FERMI Thm. 3.3 (sensitive attributes), with equality; 0 for epsilon = inf."""
    if math.isinf(epsilon):
        return 0.0
    return math.sqrt(_variance_unit(epsilon, delta, n, steps, rho))


def theorem_3_3_sigma_theta(epsilon: float, delta: float, n: int, steps: int, rho: float,
                            lipschitz: float, w_bound: float) -> float:
    """sigma_theta of DP-FERMI Thm. 3.3 (sensitive attributes): ``L D sigma_w``."""
    return lipschitz * w_bound * theorem_3_3_sigma_w(epsilon, delta, n, steps, rho)


def theorem_3_3_conditions(epsilon: float, delta: float, n: int, batch_size: int,
                           steps: int) -> dict[str, bool]:
    """The two conditions of Thm. 3.3 on (epsilon, delta, T): ``epsilon <= 2 ln(1/delta)`` and
    ``T >= (n sqrt(epsilon) / (2 m))^2`` (both hold trivially without privacy, epsilon = inf)."""
    if math.isinf(epsilon):
        return {"epsilon_at_most_2_ln_inv_delta": True, "enough_steps": True}
    return {
        "epsilon_at_most_2_ln_inv_delta": epsilon <= 2.0 * math.log(1.0 / delta),
        "enough_steps": steps >= (n * math.sqrt(epsilon) / (2.0 * batch_size)) ** 2,
    }
