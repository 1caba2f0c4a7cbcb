"""E0 (H6): the stability lemmas on replace-one neighbours, over a grid of n
and d and many pairs. Lemma 3.3: ||x_S - x_S'|| <= 2L / (mu n) (P1, P2-SC); Lemma 4.3:
mu_x ||dx||^2 + mu_y ||dy||^2 <= 4 L^2 / (mu n^2) (G1). Neighbours replace one example by a
fresh draw, and on P1 also by an extreme atom (a along w*, the largest noise: the largest
residual the support allows)."""

from __future__ import annotations

import pytest
import torch

from dpminimax.problems import get_problem
from dpminimax.seeding import make_generator

PAIRS = 20


def _ratio(problem, sample, neighbour) -> float:
    """Measured movement of the exact empirical solution over the lemma's bound."""
    first, second = problem.empirical_solution(sample), problem.empirical_solution(neighbour)
    constants = problem.constants
    moduli = constants.strong_convexity
    if problem.maximized:
        moved = sum(moduli[b] * float(torch.linalg.vector_norm(first[b] - second[b])) ** 2
                    for b in first)
        return moved / (4 * constants.lipschitz ** 2 / (min(moduli.values()) * _n(sample) ** 2))
    (block,) = first
    moved = float(torch.linalg.vector_norm(first[block] - second[block]))
    return moved / (2 * constants.lipschitz / (moduli[block] * _n(sample)))


def _n(sample) -> int:
    return len(next(iter(sample.values())))


def _replace_first(sample, example):
    return {key: torch.cat([example[key], value[1:]]) for key, value in sample.items()}


@pytest.mark.parametrize("name", ["p1_least_squares", "p2_sc_logistic", "g1_quadratic_game"])
@pytest.mark.parametrize("n", [256, 4096])
@pytest.mark.parametrize("d", [5, 20])
def test_the_stability_lemmas_hold_on_every_sampled_pair(name, n, d):
    problem = get_problem(name, seed=0, d=d)
    ratios = []
    for pair in range(PAIRS):
        sample = problem.sample(n, make_generator(pair, "data"))
        fresh = problem.sample(1, make_generator(pair, "fresh"))
        ratios.append(_ratio(problem, sample, _replace_first(sample, fresh)))
    assert max(ratios) <= 1.0
    # the check is not vacuous: most neighbours move the solution (on P2's finite support a
    # fresh draw can repeat the example it replaces)
    assert sum(ratio > 0.0 for ratio in ratios) >= PAIRS // 2


@pytest.mark.parametrize("n", [256, 4096])
def test_lemma_3_3_holds_for_the_extreme_atom_of_p1(n):
    problem = get_problem("p1_least_squares", seed=0, d=10)
    direction = problem.w_star / torch.linalg.vector_norm(problem.w_star)
    a = problem.r_a * direction
    extreme = {"a": a.unsqueeze(0), "b": (a @ problem.w_star + problem.s).reshape(1)}
    fresh_ratios, extreme_ratios = [], []
    for pair in range(PAIRS):
        sample = problem.sample(n, make_generator(pair, "data"))
        fresh = problem.sample(1, make_generator(pair, "fresh"))
        fresh_ratios.append(_ratio(problem, sample, _replace_first(sample, fresh)))
        extreme_ratios.append(_ratio(problem, sample, _replace_first(sample, extreme)))
    assert max(extreme_ratios) <= 1.0
    assert sum(extreme_ratios) > sum(fresh_ratios)  # the extreme atom moves it further
