"""LiRA against methods (issue #23): shadow models trained as runs of one batched program.

On a small problem a logistic regression memorises (200 rows, 60 features, noisy labels): LiRA
beats the loss threshold against the non-private model at low FPR, no attack on DP-SGD at
epsilon 1 goes above the (epsilon, delta)-DP ceiling, and each of the audit's planted bugs puts
an attack's epsilon lower bound above 1.5."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from toydata import toy_dataset

from dpminimax.attacks.bugs import GROSS_BUGS
from dpminimax.attacks.shadows import (
    ATTACKS,
    ROC_FPRS,
    evaluate,
    lira_epsilons,
    lira_tables,
    pool_of,
    shadow_losses,
)
from dpminimax.metrics.dp_ceiling import dp_auc_ceiling, replace_one

DELTA, SHADOWS = 1e-5, 16
PARAMS = {"epochs": 100, "batch_size": 50, "lr": 2.0}


def memorisable(n=200, d=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (x[:, 0] + 1.5 * rng.normal(size=n) > 0).astype(int)
    return toy_dataset(x, y, rng.integers(0, 2, n))


@functools.cache
def attacked(name: str, epsilon: float, bug: str | None = None) -> dict[str, dict]:
    params = PARAMS if name == "dp_sgd_nonprivate" else {**PARAMS, "clip": 1.0}
    losses, members, accounting = shadow_losses(name, memorisable(), params, epsilon, DELTA,
                                                SHADOWS, bug=bug)
    assert losses.shape == members.shape == (SHADOWS, 200)
    rows, _ = evaluate(losses, members, accounting[0]["epsilon"], DELTA)
    return {row["attack"]: row for row in rows}


def test_lira_beats_the_loss_threshold_at_low_fpr_on_a_memorising_model():
    rows = attacked("dp_sgd_nonprivate", math.inf)
    lira, loss = rows["lira_online"], rows["loss_threshold"]
    assert lira["tpr_at_1pct"] > 0.02 > loss["tpr_at_1pct"]
    assert lira["tpr_at_1pct_low"] > loss["tpr_at_1pct"]  # bounds clustered over 16 targets
    assert lira["auc"] > loss["auc"] + 0.03


def test_no_attack_on_dp_sgd_goes_above_the_dp_ceiling():
    for row in attacked("dp_sgd", 1.0).values():
        assert row["tpr_at_1pct_low"] <= row["ceiling_tpr_at_1pct"]
        assert row["tpr_at_0.1pct_low"] <= row["ceiling_tpr_at_0.1pct"]
        assert row["auc"] <= row["ceiling_auc"]
        assert row["epsilon_lower"] <= 1.0


@pytest.mark.parametrize("bug", GROSS_BUGS)
def test_each_planted_bug_puts_an_attack_above_the_ceiling(bug):
    rows = attacked("dp_sgd", 1.0, bug)
    assert max(row["epsilon_lower"] for row in rows.values()) > 1.5


def test_a_paper_block_attacks_private_methods_at_epsilon_and_twins_at_inf():
    settings = {"epsilons": ["1"], "shadows": 4, "delta": DELTA, "max_rows": 120,
                "methods": {"dp_sgd": {"epochs": 2}, "dp_sgd_nonprivate": {"epochs": 2}}}
    assert lira_epsilons(settings) == ["1", "inf"]
    metrics, roc = lira_tables(settings, memorisable(), 1.0)
    assert {(row["method"], row["control"], row["attack"]) for row in metrics} == {
        (method, control, attack) for attack in ATTACKS
        for method, control in (("dp_sgd", "none"), ("dp_sgd [noise off]", "noise_off"))}
    real, control = ([row for row in metrics if row["control"] == c]
                     for c in ("none", "noise_off"))
    # the control claims the real method's plan: the same ceilings; it leaks more
    assert [row["epsilon_ceiling"] for row in control] == [row["epsilon_ceiling"] for row in real]
    assert max(row["auc"] for row in control) > max(row["auc"] for row in real)
    metrics = real
    assert all(row["pool"] == 120 and row["shadows"] == 4 for row in metrics)
    for row in metrics:  # independent membership: IN and OUT differ by an added row
        assert row["relation"] == "add_or_remove_one"
        assert (row["epsilon_ceiling"], row["delta_ceiling"]) == (row["epsilon_spent"], DELTA)
        assert row["ceiling_auc"] == pytest.approx(dp_auc_ceiling(row["epsilon_spent"], DELTA))
    assert len(roc) == 2 * len(ATTACKS) * len(ROC_FPRS)
    fixed, _ = lira_tables({**settings, "membership": "fixed_size"}, memorisable(), 1.0)
    for row in fixed:  # the ceilings of a replaced row: fixed-size member sets
        assert row["relation"] == "replace_one"
        assert row["epsilon_ceiling"] == 2 * row["epsilon_spent"]
        assert row["ceiling_auc"] == pytest.approx(dp_auc_ceiling(*replace_one(
            row["epsilon_spent"], DELTA)))
    metrics, _ = lira_tables(settings, memorisable(), math.inf)
    assert {(row["method"], row["control"]) for row in metrics} == {("dp_sgd_nonprivate", "none")}
    assert all(row["ceiling_auc"] == 1.0 for row in metrics)


def test_a_block_naming_a_method_without_shadows_is_refused():
    with pytest.raises(ValueError, match="cannot train shadow models"):
        lira_epsilons({"epsilons": ["1"], "methods": {"jagielski2019": None}})
    with pytest.raises(ValueError, match="unknown method"):
        lira_epsilons({"epsilons": ["1"], "methods": {"no_such_method": None}})


def test_the_pool_s_canaries_are_outliers_each_in_a_column_of_its_own():
    data = memorisable()
    pool = pool_of(data, 120, canaries=5, norm=10.0)
    assert pool.x_train.shape == (125, 65) and pool.x_test.shape == (len(data.y_test), 65)
    assert np.array_equal(pool.x_train[120:, 60:], 10.0 * np.eye(5))
    assert not pool.x_train[:120, 60:].any() and not pool.x_train[120:, :60].any()
    assert np.array_equal(pool.x_train[:120, :60], data.x_train[:120])


def test_the_noise_off_control_is_seen_on_the_canaries_and_the_private_method_is_not():
    """The positive control: with planted canaries in the pool the attack proves more than
    the claimed epsilon against the noise-off control (on the canaries, where a linear model's
    own column records each one), never against DP-SGD itself; the data rows are reported
    apart."""
    settings = {"epsilons": ["1"], "shadows": 8, "delta": DELTA, "max_rows": 120,
                "canaries": 24, "methods": {"dp_sgd": {"epochs": 5, "batch_size": 50}}}
    metrics, roc = lira_tables(settings, memorisable(), 1.0)
    rows = {(row["control"], row["targets"], row["attack"]): row for row in metrics}
    assert set(rows) == {(control, targets, attack) for control in ("none", "noise_off")
                         for targets in ("rows", "canaries") for attack in ATTACKS}
    for attack in ATTACKS:
        real = rows[("none", "canaries", attack)]
        assert real["epsilon_lower"] <= real["epsilon_ceiling"] and real["pool"] == 120
        assert real["n_members"] + real["n_nonmembers"] == 8 * 24
    assert max(rows[("noise_off", "canaries", attack)]["epsilon_lower"]
               for attack in ATTACKS) > 2 * rows[("noise_off", "canaries", "lira_online")][
        "epsilon_ceiling"]
    assert len(roc) == 2 * len(ATTACKS) * len(ROC_FPRS)  # of the data rows only
