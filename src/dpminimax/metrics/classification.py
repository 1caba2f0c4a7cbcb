"""Classification quality and ranking metrics: accuracy, the gain over the majority-class
predictor with its lower confidence bound, ROC curve, AUC, TPR at a fixed FPR.

Scores rank examples: an example is predicted positive at threshold ``t`` when ``score >= t``.
Tied scores cross every threshold together, so the ROC curve never splits a tie (it jumps
diagonally across it) and the trapezoid area under it equals the Mann-Whitney statistic with ties
counted as one half.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta, rankdata


def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Fraction of predictions equal to the true label."""
    y_true, y_pred = _same_length(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def misclassification_error(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """1 - accuracy (the x-axis of every DP-FERMI trade-off plot)."""
    return 1.0 - accuracy(y_true, y_pred)


def majority_gain_lower_bound(y_true: ArrayLike, y_pred: ArrayLike, majority: int,
                              alpha: float = 0.05) -> float:
    """One-sided ``1 - alpha`` lower confidence bound on the accuracy of ``y_pred`` minus that
    of the constant predictor of ``majority``, from the same test rows (issue 38 item 4).

    Paired, hence the exact McNemar test (a sign test on the discordant rows): of the
    ``d = b + c`` rows where exactly one predictor is right (``b``: only ``y_pred``), the
    Clopper-Pearson lower bound ``pi_low`` on ``b / d`` gives ``d / n * (2 pi_low - 1)``
    (0 when ``d = 0``). It is > 0 exactly when the one-sided exact McNemar test rejects "no
    better than the majority" at level ``alpha``; one beta quantile, O(n).
    """
    y_true, y_pred = _same_length(y_true, y_pred)
    right, majority_right = y_pred == y_true, y_true == majority
    b = int(np.sum(right & ~majority_right))
    d = b + int(np.sum(~right & majority_right))
    pi_low = float(beta.ppf(alpha, b, d - b + 1)) if b > 0 else 0.0
    return d / y_true.size * (2 * pi_low - 1) if d > 0 else 0.0


def roc_curve(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve of ``scores`` for the binary ``labels`` (1 / True = positive).

    Returns ``(fpr, tpr, thresholds)``: one point per distinct score, in decreasing threshold
    order, preceded by ``(0, 0)`` at threshold ``+inf``; the last point is ``(1, 1)``. Point ``i``
    is the rate of examples with ``score >= thresholds[i]``.
    """
    scores, positive = _scores_and_labels(scores, labels)
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    # last index of every block of tied scores (scores sorted decreasingly)
    block_ends = np.flatnonzero(np.append(sorted_scores[1:] != sorted_scores[:-1], True))
    true_pos = np.cumsum(positive[order])[block_ends]
    false_pos = block_ends + 1 - true_pos
    n_pos, n_neg = _class_counts(positive)
    fpr = np.concatenate([[0.0], false_pos / n_neg])
    tpr = np.concatenate([[0.0], true_pos / n_pos])
    thresholds = np.concatenate([[np.inf], sorted_scores[block_ends]])
    return fpr, tpr, thresholds


def roc_auc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Area under the ROC curve: the Mann-Whitney U statistic over (positive, negative) pairs.

    ``AUC = P[score_pos > score_neg] + 0.5 P[score_pos = score_neg]``, computed from mid-ranks in
    O(n log n). Equals the trapezoid area under :func:`roc_curve`.
    """
    scores, positive = _scores_and_labels(scores, labels)
    n_pos, n_neg = _class_counts(positive)
    ranks = rankdata(scores)  # mid-ranks: a tie counts 1/2 for each side
    u_statistic = ranks[positive].sum() - n_pos * (n_pos + 1) / 2
    return float(u_statistic / (n_pos * n_neg))


def tpr_at_fpr(scores: ArrayLike, labels: ArrayLike, target_fpr: float) -> float:
    """Largest TPR over thresholds whose FPR is at most ``target_fpr``.

    No interpolation between ROC points: with ``n`` negatives, an FPR target below ``1/n`` only
    admits thresholds with no false positive at all.
    """
    if not 0.0 <= target_fpr <= 1.0:
        raise ValueError(f"target_fpr must be in [0, 1], got {target_fpr}")
    fpr, tpr, _ = roc_curve(scores, labels)
    return float(tpr[fpr <= target_fpr].max())


def _same_length(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"arrays of different lengths: {a.size} and {b.size}")
    if a.size == 0:
        raise ValueError("empty arrays")
    return a, b


def _scores_and_labels(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    scores, labels = _same_length(scores, labels)
    scores = scores.astype(float)
    if np.isnan(scores).any():
        raise ValueError("scores contain NaN")
    if not np.isin(labels, [0, 1]).all():
        raise ValueError(f"labels must be binary (0/1 or bool), got values {np.unique(labels)}")
    return scores, labels.astype(bool)


def _class_counts(positive: np.ndarray) -> tuple[int, int]:
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"ROC needs both classes; got {n_pos} positives and {n_neg} negatives")
    return n_pos, n_neg
