"""Evaluation metrics: classification quality (and the gain over the majority class), ranking
(ROC / AUC) and fairness violations."""

from dpminimax.metrics.classification import (
    accuracy,
    majority_gain_lower_bound,
    misclassification_error,
    roc_auc,
    roc_curve,
    tpr_at_fpr,
)
from dpminimax.metrics.fairness import (
    classification_report,
    demographic_parity_violation,
    equalized_odds_violation,
)

__all__ = [
    "accuracy",
    "classification_report",
    "demographic_parity_violation",
    "equalized_odds_violation",
    "majority_gain_lower_bound",
    "misclassification_error",
    "roc_auc",
    "roc_curve",
    "tpr_at_fpr",
]
