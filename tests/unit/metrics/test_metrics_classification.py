"""ROC curve, AUC (Mann-Whitney with ties) and TPR at a fixed FPR."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.metrics import accuracy, misclassification_error, roc_auc, roc_curve, tpr_at_fpr


def brute_force_auc(scores, labels):
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (pos.size * neg.size)


scored_labels = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 5), min_size=n, max_size=n),  # few values: many ties
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
    )
).filter(lambda sl: 0 < sum(sl[1]) < len(sl[1]))


def test_accuracy_and_error():
    assert accuracy([0, 1, 1, 0], [0, 1, 0, 0]) == 0.75
    assert misclassification_error([0, 1, 1, 0], [0, 1, 0, 0]) == 0.25


def test_roc_curve_hand_example_with_a_tie():
    fpr, tpr, thresholds = roc_curve([3, 2, 2, 1], [1, 1, 0, 0])
    np.testing.assert_allclose(fpr, [0, 0, 0.5, 1])
    np.testing.assert_allclose(tpr, [0, 0.5, 1, 1])
    np.testing.assert_array_equal(thresholds, [np.inf, 3, 2, 1])
    assert roc_auc([3, 2, 2, 1], [1, 1, 0, 0]) == 0.875


def test_infinite_scores_are_tied_not_split():
    scores = [np.inf, np.inf, 2, -np.inf, -np.inf]
    labels = np.array([1, 0, 0, 1, 1])
    fpr, tpr, _ = roc_curve(scores, labels)
    assert len(fpr) == 4  # +inf block, 2, -inf block, plus the origin
    assert roc_auc(scores, labels) == pytest.approx(0.25)


@settings(max_examples=200, deadline=None)
@given(scored_labels)
def test_auc_is_mann_whitney_and_trapezoid_area(data):
    scores, labels = np.array(data[0], float), np.array(data[1])
    auc = roc_auc(scores, labels)
    assert auc == pytest.approx(brute_force_auc(scores, labels))
    fpr, tpr, _ = roc_curve(scores, labels)
    assert auc == pytest.approx(np.trapezoid(tpr, fpr))
    assert fpr[0] == tpr[0] == 0 and fpr[-1] == tpr[-1] == 1
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)


def test_tpr_at_fpr_hand_example():
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    labels = [1, 0, 1, 1, 0, 0]
    # thresholds 0.9: (fpr 0, tpr 1/3); 0.8: (1/3, 1/3); 0.6: (1/3, 1); 0.5: (2/3, 1)
    assert tpr_at_fpr(scores, labels, 0.0) == pytest.approx(1 / 3)
    assert tpr_at_fpr(scores, labels, 0.34) == pytest.approx(1.0)
    assert tpr_at_fpr(scores, labels, 0.3) == pytest.approx(1 / 3)


def test_errors():
    with pytest.raises(ValueError, match="both classes"):
        roc_auc([1, 2], [1, 1])
    with pytest.raises(ValueError, match="binary"):
        roc_curve([1, 2], [0, 2])
    with pytest.raises(ValueError, match="different lengths"):
        accuracy([1, 2], [1])
    with pytest.raises(ValueError, match="target_fpr"):
        tpr_at_fpr([1, 2], [0, 1], 1.5)
