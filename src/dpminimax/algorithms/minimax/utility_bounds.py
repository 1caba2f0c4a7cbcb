"""The utility bounds BYOA (paper 003) prints for its algorithms, exactly as printed
(Thms. 3.4, 3.7, 4.4, 4.8), evaluated with a problem's a-priori constants: what the rate study
draws dashed beside the measured error. Each function returns ``{metric: bound}`` for the metric
columns of the synthetic-optimization task (the bound is on the expectation over the data and the
noise: compare it with a mean over seeds). ``log`` is log2 where the paper writes log(n) (the phase
count K) and ln inside log(c / delta) (our reading). With epsilon = inf (a non-private
twin) the privacy terms vanish and the statistical terms remain.
"""

from __future__ import annotations

import math

from dpminimax.problems import Constants, Problem


def _privacy_ratio(dim: int, delta: float, epsilon: float, c: float) -> float:
    """d log(c / delta) / epsilon^2 (0 at epsilon = inf)."""
    return 0.0 if math.isinf(epsilon) else dim * math.log(c / delta) / epsilon ** 2


def output_perturbation_bounds(problem: Problem, n: int, epsilon: float, delta: float,
                               constants: Constants | None = None) -> dict[str, float]:
    """Theorem 3.4 (Alg. 1) for a minimization problem, Theorem 4.4 (Alg. 3) for a min-max;
    ``constants`` replaces the problem's (a ridged objective's)."""
    constants = problem.constants if constants is None else constants
    lipschitz, smooth = constants.lipschitz, constants.smoothness
    moduli = constants.strong_convexity
    dim = max(block.dim for block in problem.blocks)
    if not problem.maximized:
        mu = moduli[problem.blocks[0].name]
        kappa = smooth / mu
        privacy = _privacy_ratio(dim, delta, epsilon, 2.5)
        return {
            "excess_empirical_risk": 33.0 * lipschitz ** 2 * kappa * privacy / (mu * n ** 2),
            "excess_population_risk": lipschitz ** 2 * kappa * (
                7.0 / (mu * n) + 48.0 * privacy / (mu * n ** 2)),
        }
    mu_x, mu_y = (moduli[block.name] for block in problem.blocks)
    mu = min(mu_x, mu_y)
    kappas = (smooth / mu_x) * (smooth / mu_y) + smooth / mu
    privacy = _privacy_ratio(dim, delta, epsilon, 5.0)
    return {
        "empirical_strong_gap": 257.0 * lipschitz ** 2 * kappas * privacy / (mu * n ** 2),
        "population_strong_gap": 3.0 * lipschitz ** 2 * kappas * (
            3.0 / (mu * n) + 128.0 * privacy / (mu * n ** 2)),
    }


def phased_output_perturbation_bounds(problem: Problem, n: int, epsilon: float,
                                      delta: float) -> dict[str, float]:
    """Theorem 3.7 (Alg. 2): E F(x~_K) - F(x*) <= 4 L D log(n) (1 / sqrt(n) +
    7 sqrt(d log(2.5 / delta)) / (n epsilon))."""
    constants = problem.constants
    privacy = math.sqrt(_privacy_ratio(problem.blocks[0].dim, delta, epsilon, 2.5))
    return {"excess_population_risk": 4.0 * constants.lipschitz * constants.diameter
            * math.log2(n) * (1.0 / math.sqrt(n) + 7.0 * privacy / n)}


def phased_minimax_bounds(problem: Problem, n: int, epsilon: float,
                          delta: float) -> dict[str, float]:
    """Theorem 4.8 (Algs. 4 o 5): the weak gap max_y E F(x~_K, y) - min_x E F(x, y~_K) <=
    16 L D log(n)^2 (1 / sqrt(n) + 5 sqrt(d log(5 / delta)) / (n epsilon)), d = max(d_x, d_y).
    Drawn beside the population weak gap of the seeds (where the game defines it) and beside
    the population *strong* gap, which is at least the weak gap: a strong gap under the bound
    confirms the theorem, one above it says nothing either way."""
    constants = problem.constants
    dim = max(block.dim for block in problem.blocks)
    privacy = math.sqrt(_privacy_ratio(dim, delta, epsilon, 5.0))
    bound = (16.0 * constants.lipschitz * constants.diameter * math.log2(n) ** 2
             * (1.0 / math.sqrt(n) + 5.0 * privacy / n))
    return {"population_strong_gap": bound, "population_weak_gap": bound}


def csc_bounds(problem: Problem, n: int, epsilon: float, delta: float) -> dict[str, float]:
    """Corollary 4.9 (C-SC variant): max_y E F(x~_K, y) - F(x*, y*) <= 6 L D log(n)
    (1 / sqrt(n) + 4 sqrt(d_x log(2.5 / delta)) / (n epsilon)) + L^2 log(n)^2 (8 / (mu_y n) +
    65 d_x log(2.5 n / delta) / (mu_y n^2 epsilon^2)) (the log(2.5 n / delta) as printed); it
    bounds E Phi(x~_K) - Phi(x*) too, the population primal gap."""
    constants = problem.constants
    x, y = problem.blocks
    lipschitz, mu_y, log_n = constants.lipschitz, constants.strong_convexity[y.name], math.log2(n)
    linear = math.sqrt(_privacy_ratio(x.dim, delta, epsilon, 2.5))
    square = _privacy_ratio(x.dim, delta / n, epsilon, 2.5)
    return {"population_primal_gap": 6.0 * lipschitz * constants.diameter * log_n * (
        1.0 / math.sqrt(n) + 4.0 * linear / n) + lipschitz ** 2 * log_n ** 2 * (
        8.0 / (mu_y * n) + 65.0 * square / (mu_y * n ** 2))}
