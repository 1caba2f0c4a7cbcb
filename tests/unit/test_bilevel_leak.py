"""The §3 leak (spec 002 §3.2) on P-D: one exact hypergradient (M0), the non-private penalty
method (M1) and the naive outer noise (M2) tell S+ from S- perfectly and give xi_n back to
machine precision; Algorithm 1 (M3) keeps its empirical epsilon below its epsilon."""

from __future__ import annotations

import math

import pytest

from dpminimax.attacks.bilevel_leak import leak_table

EPSILONS = (0.5, 4.0)


@pytest.fixture(scope="module")
def rows():
    params = {"outer_steps": 100, "eta": 0.5, "lam": 10.0}
    return {(row["mechanism"], row["epsilon"]): row
            for row in leak_table(d=2, n=100, runs=100, epsilons=EPSILONS, delta=1e-5,
                                  params=params)}


@pytest.mark.parametrize("mechanism", ["M0", "M1", "M2"])
def test_exact_and_naive_mechanisms_leak_the_last_example(rows, mechanism):
    row = rows[mechanism, math.inf]
    assert row["auc"] == 1.0
    assert row["reconstruction_error"] < 1e-12
    assert row["epsilon_hat"] > 3.0  # as large as 2 x 100 runs can show


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_algorithm_1_keeps_the_empirical_epsilon_below_its_epsilon(rows, epsilon):
    row = rows["M3", epsilon]
    assert row["epsilon_hat"] < epsilon
    assert row["auc"] < 0.75
