"""RMIA (Zarifzadeh et al. 2024) from the shadow models' losses: the pairwise likelihood-ratio
score pinned on a hand-worked case, and its power on a memorising model (above the loss
threshold at low FPR, near LiRA), at chance on a model that sees nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_shadows import DELTA, PARAMS, SHADOWS, memorisable

from dpminimax.attacks.rmia import rmia_scores
from dpminimax.attacks.shadows import evaluate, shadow_losses


def test_the_score_is_the_share_of_the_pool_whose_ratio_the_row_s_beats():
    """Three models, three rows. Model 0's ratios Pr(x | theta_0) / mean of the others':
    row 0 p = 0.8 against (0.4 + 0.4) / 2 -> 2; row 1 0.5 / 0.5 -> 1; row 2 0.2 / 0.4 -> 0.5.
    With gamma 1 row 0 beats all three (itself included), row 1 two, row 2 one; with gamma 2
    row 0 beats the rows of ratio <= 1."""
    p = np.array([[0.8, 0.5, 0.2], [0.4, 0.5, 0.4], [0.4, 0.5, 0.4]])
    assert rmia_scores(-np.log(p))[0] == pytest.approx([1.0, 2 / 3, 1 / 3])
    assert rmia_scores(-np.log(p), gamma=2.0)[0] == pytest.approx([2 / 3, 1 / 3, 0.0])
    with pytest.raises(ValueError, match="M >= 2"):
        rmia_scores(np.zeros((1, 3)))


def test_rmia_sees_a_memorising_model_and_not_a_blind_one():
    losses, members, _ = shadow_losses("dp_sgd_nonprivate", memorisable(), PARAMS, math.inf, DELTA,
                                       SHADOWS)
    rows = {row["attack"]: row for row in evaluate(losses, members, math.inf, DELTA)[0]}
    rmia, loss = rows["rmia"], rows["loss_threshold"]
    assert rmia["tpr_at_1pct"] > 0.02 > loss["tpr_at_1pct"]
    assert rmia["auc"] > loss["auc"] + 0.03 and rmia["auc"] > 0.6
    blind = np.random.default_rng(0).exponential(size=losses.shape)  # no membership signal
    rows = {row["attack"]: row for row in evaluate(blind, members, 1.0, DELTA)[0]}
    assert abs(rows["rmia"]["auc"] - 0.5) < 0.03 and rows["rmia"]["epsilon_lower"] == 0.0
