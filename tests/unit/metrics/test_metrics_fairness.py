"""Demographic-parity and equalized-odds violations (DP-FERMI eqs. 10 and 11)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.metrics import (
    classification_report,
    demographic_parity_violation,
    equalized_odds_violation,
)

# binary labels, two groups
Y_TRUE = np.array([1, 1, 0, 0, 1, 1, 0, 0, 0, 1])
Y_PRED = np.array([1, 0, 0, 1, 1, 1, 1, 0, 0, 1])
S = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])


def test_binary_hand_example():
    # P[ŷ=1|s=0] = 2/4, P[ŷ=1|s=1] = 4/6
    assert demographic_parity_violation(Y_PRED, S) == pytest.approx(4 / 6 - 2 / 4)
    # TPR: s0 1/2, s1 3/3 -> gap 1/2; FPR: s0 1/2, s1 1/3 -> gap 1/6
    assert equalized_odds_violation(Y_PRED, Y_TRUE, S) == pytest.approx(0.5)


def test_binary_eo_is_max_of_tpr_and_fpr_gaps():
    rng = np.random.default_rng(1)
    y_true, y_pred, s = rng.integers(0, 2, (3, 200))
    rate = lambda event, cond: [event[cond & (s == g)].mean() for g in (0, 1)]
    tpr, fpr = rate(y_pred == 1, y_true == 1), rate(y_pred == 1, y_true == 0)
    expected = max(abs(tpr[0] - tpr[1]), abs(fpr[0] - fpr[1]))
    assert equalized_odds_violation(y_pred, y_true, s) == pytest.approx(expected)


def test_multiclass_three_groups_hand_example():
    s = np.array(["a", "a", "a", "b", "b", "b", "c", "c", "c"])
    y_pred = np.array([0, 1, 2, 0, 0, 1, 2, 2, 2])
    y_true = np.array([0, 1, 1, 0, 1, 1, 2, 2, 0])
    # class 2: P = 1/3 (a), 0 (b), 1 (c) -> gap 1; class 0: 1/3, 2/3, 0
    assert demographic_parity_violation(y_pred, s) == pytest.approx(1.0)
    # y'=0, y=0: a 1/1, b 1/1, c 0/1 -> gap 1
    assert equalized_odds_violation(y_pred, y_true, s) == pytest.approx(1.0)
    # restricted to class 0: gap 2/3 - 0
    assert demographic_parity_violation(y_pred, s, classes=[0]) == pytest.approx(2 / 3)


def test_multiclass_eo_second_term_and_skipped_groups():
    # y'=1: group 0 has no y=1 example (skipped for the first term)
    s = np.array([0, 0, 1, 1, 1])
    y_true = np.array([0, 0, 1, 1, 0])
    y_pred = np.array([1, 0, 1, 0, 0])
    # y'=1,y=1: only group 1 -> 0; y'=1,y≠1: g0 1/2, g1 0/1 -> 1/2
    # y'=0,y=0: g0 1/2, g1 1/1 -> 1/2; y'=0,y≠0: only g1 -> 0
    assert equalized_odds_violation(y_pred, y_true, s) == pytest.approx(0.5)


def test_constant_and_perfect_predictors():
    rng = np.random.default_rng(0)
    y_true, s = rng.integers(0, 3, 100), rng.integers(0, 4, 100)
    assert demographic_parity_violation(np.full(100, 2), s) == 0
    assert equalized_odds_violation(y_true, y_true, s) == 0


def test_invariant_to_relabelling_groups():
    relabelled = np.where(S == 0, "women", "men")
    assert demographic_parity_violation(Y_PRED, relabelled) == demographic_parity_violation(
        Y_PRED, S
    )
    assert equalized_odds_violation(Y_PRED, Y_TRUE, 7 - 3 * S) == equalized_odds_violation(
        Y_PRED, Y_TRUE, S
    )


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 60).flatmap(
        lambda n: st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 3)),
                           min_size=n, max_size=n)
    )
)
def test_violations_are_probabilities(rows):
    y_true, y_pred, s = map(np.array, zip(*rows, strict=True))
    for value in (demographic_parity_violation(y_pred, s),
                  equalized_odds_violation(y_pred, y_true, s)):
        assert 0.0 <= value <= 1.0


def test_classification_report():
    report = classification_report(Y_TRUE, Y_PRED, S)
    assert report == pytest.approx({
        "test_accuracy": 0.7, "test_error": 0.3,
        "dp_violation": 4 / 6 - 2 / 4, "eo_violation": 0.5,
    })
