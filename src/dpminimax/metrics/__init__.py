"""Evaluation metrics: classification quality (and the gain over the majority class), ranking
(ROC / AUC) and fairness violations; in their own modules, the KL-DRO objective
(:mod:`.kl_dro`, paper 004's Eqs. (3) and (5)), paper 004's Table 2 membership AUCs
(:mod:`.confounded_mia`) and the ceilings (epsilon, delta)-DP puts on any attack
(:mod:`.dp_ceiling`)."""

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
