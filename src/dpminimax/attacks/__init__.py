"""Membership-inference attacks and the ceiling that (epsilon, delta)-DP puts on any attack."""

from dpminimax.attacks.bilevel_leak import leak_table
from dpminimax.attacks.dp_ceiling import dp_advantage_ceiling, dp_auc_ceiling, dp_tpr_ceiling
from dpminimax.attacks.membership import attack_roc, loss_threshold_attack

__all__ = [
    "attack_roc",
    "dp_advantage_ceiling",
    "dp_auc_ceiling",
    "dp_tpr_ceiling",
    "leak_table",
    "loss_threshold_attack",
]
