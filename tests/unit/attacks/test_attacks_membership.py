"""Loss-threshold membership inference (Yeom et al. 2018)."""

import numpy as np
import pytest

from dpminimax.attacks import attack_roc, loss_threshold_attack
from dpminimax.metrics import roc_auc

KEYS = {"attack_auc", "attack_tpr_at_1pct_fpr", "attack_tpr_at_01pct_fpr", "attack_advantage",
        "n_members", "n_nonmembers"}


def test_perfectly_separated_losses():
    result = loss_threshold_attack(np.linspace(0, 0.1, 300), np.linspace(1, 2, 500))
    assert set(result) == KEYS
    assert result["attack_auc"] == 1.0
    assert result["attack_tpr_at_1pct_fpr"] == result["attack_tpr_at_01pct_fpr"] == 1.0
    assert result["attack_advantage"] == 1.0
    assert result["n_members"] == result["n_nonmembers"] == 300


def test_members_with_higher_loss_give_auc_zero():
    assert loss_threshold_attack([5.0, 6.0], [1.0, 2.0])["attack_auc"] == 0.0


def test_identical_distributions_are_at_chance():
    rng = np.random.default_rng(12345)
    n = 5000
    result = loss_threshold_attack(rng.exponential(size=n), rng.exponential(size=2 * n))
    # sd of the AUC under H0 is sqrt((2n+1)/(12 n^2)) ~ 0.0058 for n = 5000: 4 sd
    assert result["attack_auc"] == pytest.approx(0.5, abs=0.025)
    assert result["attack_tpr_at_1pct_fpr"] < 0.03
    assert result["attack_advantage"] < 0.05


def test_balancing_is_deterministic_and_seeded():
    rng = np.random.default_rng(0)
    members, nonmembers = rng.normal(size=200), rng.normal(0.3, size=1000)
    first = loss_threshold_attack(members, nonmembers, seed=3)
    assert first == loss_threshold_attack(members, nonmembers, seed=3)
    assert first["n_nonmembers"] == 200
    assert first != loss_threshold_attack(members, nonmembers, seed=4)
    unbalanced = loss_threshold_attack(members, nonmembers, balance=False)
    assert unbalanced["n_nonmembers"] == 1000
    assert unbalanced["attack_auc"] == pytest.approx(
        roc_auc(-np.r_[members, nonmembers], np.r_[np.ones(200), np.zeros(1000)])
    )


def test_infinite_losses_are_allowed_nan_is_not():
    assert loss_threshold_attack([0.1, np.inf], [np.inf, np.inf])["attack_auc"] == 0.75
    with pytest.raises(ValueError, match="NaN"):
        loss_threshold_attack([np.nan, 1.0], [1.0, 2.0])


def test_attack_roc_thresholds_are_losses():
    fpr, tpr, thresholds = attack_roc([0.1, 0.2], [0.15, 0.3])
    np.testing.assert_allclose(fpr, [0, 0, 0.5, 0.5, 1])
    np.testing.assert_allclose(tpr, [0, 0.5, 0.5, 1, 1])
    np.testing.assert_allclose(thresholds, [-np.inf, 0.1, 0.15, 0.2, 0.3])
