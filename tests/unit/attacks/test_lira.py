"""The Likelihood Ratio Attack (Carlini et al. 2022) and how membership attacks are reported."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import binomtest, norm
from scipy.stats import t as student_t

from dpminimax.attacks.lira import (
    attack_metrics,
    class_matched_nonmembers,
    clopper_pearson_interval,
    clustered_rate_bounds,
    epsilon_lower_bound_from_roc,
    leave_one_out_scores,
    lira_scores,
    logit_confidence,
)
from dpminimax.metrics.classification import tpr_at_fpr

BAYES_AUC = norm.cdf(1 / np.sqrt(2))  # two unit Gaussians one standard deviation apart: 0.760


def gaussian_problem(gap: float, n_models: int = 64, n_examples: int = 500, seed: int = 0):
    """Losses whose logit confidence is ``mu_i + gap * member + N(0, 1)``, ``mu_i ~ N(0, 3^2)``.

    Each example has its own offset, shared by IN and OUT models: per example, telling members
    apart is a test between N(mu_i + gap, 1) and N(mu_i, 1), but a global threshold mostly sees
    the offsets.
    """
    rng = np.random.default_rng(seed)
    offsets = rng.normal(0.0, 3.0, n_examples)
    members = rng.random((n_models, n_examples)) < 0.5
    phi = offsets + gap * members + rng.normal(size=(n_models, n_examples))
    return np.logaddexp(0.0, -phi), members  # loss = -log sigmoid(phi)


@pytest.fixture(scope="module")
def separable():
    return gaussian_problem(gap=1.0)


@pytest.fixture(scope="module")
def null():
    return gaussian_problem(gap=0.0)


def gaussian_dp_epsilon(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of mu-Gaussian DP (Dong, Roth, Su 2022, Cor. 2.13)."""
    delta_of = lambda e: norm.cdf(-e / mu + mu / 2) - np.exp(e) * norm.cdf(-e / mu - mu / 2)
    return brentq(lambda e: delta_of(e) - delta, 0.0, 50.0)


def test_logit_confidence_is_the_log_odds():
    losses = np.linspace(0.05, 10.0, 200).reshape(4, 50)
    p = np.exp(-losses)
    np.testing.assert_allclose(logit_confidence(losses), np.log(p / (1 - p)), rtol=1e-12)
    assert logit_confidence(losses).shape == (4, 50)


def test_logit_confidence_is_finite_at_the_extremes():
    at_zero, at_fifty = logit_confidence([0.0, 50.0])
    assert at_zero == pytest.approx(-np.log(1e-12))  # p = 1 is clipped to loss 1e-12
    assert at_fifty == pytest.approx(-50.0)
    assert logit_confidence(-1e-9) == at_zero  # round-off negatives are clipped too
    with pytest.raises(ValueError, match="NaN"):
        logit_confidence([np.nan])


def test_lira_is_near_bayes_optimal(separable):
    for online in (True, False):
        scores, labels = leave_one_out_scores(*separable, online=online)
        assert attack_metrics(scores, labels)["auc"] == pytest.approx(BAYES_AUC, abs=0.02)


def test_per_example_calibration_beats_a_global_threshold(separable):
    losses, members = separable
    lira = attack_metrics(*leave_one_out_scores(losses, members))
    global_threshold = attack_metrics(-losses, members)
    assert lira["tpr_at_1pct"] > 2 * global_threshold["tpr_at_1pct"]
    assert lira["auc"] > global_threshold["auc"] + 0.1


def test_epsilon_bound_of_lira_is_below_the_true_privacy_loss(separable):
    # per example, membership is a test between N(mu_i + 1, 1) and N(mu_i, 1): 1-Gaussian DP
    bound = epsilon_lower_bound_from_roc(*leave_one_out_scores(*separable), delta=1e-5)
    assert 1.0 < bound < gaussian_dp_epsilon(1.0, 1e-5)


def test_identically_distributed_members_are_at_chance(null):
    for online in (True, False):
        scores, labels = leave_one_out_scores(*null, online=online)
        assert attack_metrics(scores, labels)["auc"] == pytest.approx(0.5, abs=0.03)
        assert epsilon_lower_bound_from_roc(scores, labels, delta=0.0) < 0.3


def test_fixed_variance_gives_other_finite_scores(separable):
    per_example, _ = leave_one_out_scores(*separable, targets=[0, 1])
    fixed, _ = leave_one_out_scores(*separable, targets=[0, 1], fixed_variance=True)
    assert np.isfinite(fixed).all()
    assert not np.allclose(fixed, per_example)


def test_online_score_is_the_gaussian_log_likelihood_ratio():
    shadow_phi = np.array([[0.0, 5.0], [2.0, 5.0], [4.0, 7.0], [6.0, 9.0]])
    shadow_members = np.array([[0, 1], [0, 1], [1, 0], [1, 0]], dtype=bool)
    scores = lira_scores([3.0, 6.0], shadow_phi, shadow_members)
    # example 0: IN {4, 6} -> N(5, 2), OUT {0, 2} -> N(1, 2); example 1: IN N(5, 0), OUT N(8, 2)
    expected_0 = norm.logpdf(3.0, 5.0, np.sqrt(2)) - norm.logpdf(3.0, 1.0, np.sqrt(2))
    assert scores[0] == pytest.approx(expected_0)
    expected_1 = norm.logpdf(6.0, 5.0, 1e-4) - norm.logpdf(6.0, 8.0, np.sqrt(2))  # floored
    assert scores[1] == pytest.approx(expected_1)
    offline = lira_scores([3.0, 6.0], shadow_phi, shadow_members, online=False)
    np.testing.assert_allclose(offline, -norm.logsf([3.0, 6.0], [1.0, 8.0], np.sqrt(2)))


def test_examples_without_observations_fall_back_to_the_side_fit():
    shadow_phi = np.array([[0.0, 1.0, 10.0], [2.0, 3.0, 12.0], [4.0, 5.0, 14.0]])
    shadow_members = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 0]], dtype=bool)
    scores = lira_scores([1.0, 2.0, 11.0], shadow_phi, shadow_members)
    # example 2 has no IN shadow: mean of all IN observations (1.5), mean IN variance (2);
    # it has three OUT shadows, the others one each: their OUT variance is example 2's (4)
    expected_2 = norm.logpdf(11.0, 1.5, np.sqrt(2)) - norm.logpdf(11.0, 12.0, 2.0)
    assert scores[2] == pytest.approx(expected_2)
    assert scores[0] == pytest.approx(norm.logpdf(1.0, 1.0, np.sqrt(2)) - norm.logpdf(1.0, 4.0, 2))


def test_constant_shadow_confidences_give_finite_scores():
    members = np.arange(8)[:, None] % 2 == np.array([[0, 1]])
    scores = lira_scores([1.0, 2.0], np.ones((8, 2)), members)
    assert np.isfinite(scores).all()


def test_leave_one_out_shapes_and_labels(separable):
    losses, members = separable
    scores, labels = leave_one_out_scores(losses, members, targets=[3, 0])
    assert scores.shape == labels.shape == (2, losses.shape[1])
    np.testing.assert_array_equal(labels, members[[3, 0]])
    shadows = np.delete(np.arange(len(losses)), 3)
    direct = lira_scores(logit_confidence(losses[3]), logit_confidence(losses[shadows]),
                         members[shadows])
    np.testing.assert_allclose(scores[0], direct)
    all_scores, all_labels = leave_one_out_scores(losses[:5], members[:5])
    assert all_scores.shape == all_labels.shape == (5, losses.shape[1])


def test_missing_sides_raise():
    losses = np.random.default_rng(0).exponential(size=(6, 10))
    with pytest.raises(ValueError, match="OUT"):
        leave_one_out_scores(losses, np.ones((6, 10), bool), online=False)
    with pytest.raises(ValueError, match="IN"):
        leave_one_out_scores(losses, np.zeros((6, 10), bool))
    offline, _ = leave_one_out_scores(losses, np.zeros((6, 10), bool), online=False)
    assert np.isfinite(offline).all()  # the offline attack needs no IN shadow
    with pytest.raises(ValueError, match="shape"):
        leave_one_out_scores(losses, np.zeros((6, 9), bool))
    with pytest.raises(ValueError, match="boolean"):
        leave_one_out_scores(losses, np.full((6, 10), 2))


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_clopper_pearson_matches_scipy(confidence):
    for successes, trials in [(0, 10), (3, 10), (10, 10), (17, 250), (1, 2000)]:
        low, high = clopper_pearson_interval(successes, trials, confidence=confidence)
        reference = binomtest(successes, trials).proportion_ci(confidence, method="exact")
        assert (low, high) == pytest.approx((reference.low, reference.high), rel=1e-9, abs=1e-12)


def test_clopper_pearson_contains_the_estimate_and_shrinks_with_n():
    trials = np.array([10, 100, 1000, 10000])
    low, high = clopper_pearson_interval(3 * trials // 10, trials)
    assert (low < 0.3).all() and (high > 0.3).all()
    assert (np.diff(high - low) < 0).all()


def test_attack_metrics_keys_and_intervals(separable):
    scores, labels = leave_one_out_scores(*separable, targets=range(8))
    result = attack_metrics(scores, labels, fprs=(1e-3, 1e-2, 0.05))
    tags = ["0.1pct", "1pct", "5pct"]
    assert set(result) == {"auc", "epsilon_lower", "n_members", "n_nonmembers"} | {
        f"tpr_at_{tag}{end}" for tag in tags for end in ("", "_low", "_high", "_fpr_high")}
    assert result["n_members"] == labels.sum()
    assert result["n_members"] + result["n_nonmembers"] == labels.size
    for tag in tags:
        assert result[f"tpr_at_{tag}_low"] < result[f"tpr_at_{tag}"] < result[f"tpr_at_{tag}_high"]
        assert result[f"tpr_at_{tag}"] == tpr_at_fpr(scores, labels, float(tag[:-3]) / 100)


def test_fpr_upper_end_is_that_of_the_chosen_threshold():
    """Non-members score 0..999; 20 members score above all of them, one just below the 10th
    highest non-member and the rest below all. At 1% FPR the best threshold lets exactly 10
    non-members through (TPR 21/1000); its FPR's upper end is the Clopper-Pearson bound of 10
    in 1,000, above the 1% target. At 0.1% the best threshold has no false positive. One
    model's trials are independent (Clopper-Pearson alone), each bound one-sided at 0.05 / 8
    (two FPR and two FNR thresholds, two bounds each): the upper end of a two-sided interval at
    98.75%."""
    members = np.concatenate([2000.0 + np.arange(20), [989.5], -1.0 - np.arange(979)])
    scores = np.concatenate([np.arange(1000.0), members])
    labels = np.concatenate([np.zeros(1000), np.ones(1000)])
    result = attack_metrics(scores, labels, fprs=(1e-3, 1e-2))
    level = 1 - 2 * 0.05 / 8
    assert result["tpr_at_1pct"] == pytest.approx(0.021)
    assert result["tpr_at_1pct_fpr_high"] == pytest.approx(
        clopper_pearson_interval(10, 1000, confidence=level)[1])
    assert result["tpr_at_1pct_fpr_high"] > 0.01
    assert result["tpr_at_0.1pct"] == pytest.approx(0.020)
    assert result["tpr_at_0.1pct_fpr_high"] == pytest.approx(
        clopper_pearson_interval(0, 1000, confidence=level)[1])
    assert result["tpr_at_0.1pct_low"] == pytest.approx(
        clopper_pearson_interval(20, 1000, confidence=level)[0])


def test_clustered_bounds_of_one_leaking_target_of_four():
    """4 targets x 1,000 member rows, target 0 right on every row, the others on none: rate
    1/4. z = hits - trials / 4: target sums 750, -250, -250, -250 (squares 750,000), row sums
    0, cell squares 1,000 (9/16) + 3,000 (1/16) = 750: V = 749,250. The spread t_3 sqrt(V) /
    4,000 exceeds the rate, so the lower bound is 0, where Clopper-Pearson on 1,000 of 4,000
    pooled trials says 0.23."""
    hits = np.zeros((4, 1000), bool)
    hits[0] = True
    trials = np.ones_like(hits)
    alpha = 0.05 / 8
    low, high = clustered_rate_bounds(hits, trials, alpha)
    spread = student_t.ppf(1 - alpha, 3) * np.sqrt(749_250) / 4000
    assert spread > 0.25 and low == 0.0 and high == pytest.approx(min(1.0, 0.25 + spread))
    assert clopper_pearson_interval(1000, 4000, confidence=1 - 2 * alpha)[0] > 0.23


def test_clustered_bounds_of_rows_right_for_every_target():
    """Every target right on the first 250 rows only: target sums 0, row sums 3 (250 rows) and
    -1 (750), cells 4 (250 x 9/16 + 750 x 1/16) = 750: V = 2,250 + 750 - 750 = 2,250, wider
    than Clopper-Pearson on 4,000 trials would be, so it gives the bounds."""
    hits = np.zeros((4, 1000), bool)
    hits[:, :250] = True
    alpha = 0.05 / 8
    low, high = clustered_rate_bounds(hits, np.ones_like(hits), alpha)
    spread = student_t.ppf(1 - alpha, 3) * np.sqrt(2250) / 4000
    assert (low, high) == pytest.approx((0.25 - spread, 0.25 + spread))
    cp_low, cp_high = clopper_pearson_interval(1000, 4000, confidence=1 - 2 * alpha)
    assert low < cp_low and high > cp_high
    with pytest.raises(ValueError, match="shape"):
        clustered_rate_bounds(hits[0], np.ones(1000), alpha)


def test_one_leaking_target_flagged_pooled_but_not_clustered():
    """Target 0 of 4 separates its members perfectly, the others are at chance. Pooling the
    4 x 2,000 scores as independent trials (the former Clopper-Pearson intervals) proves an
    epsilon above 2; clustered over targets, one target of four proves nothing at 95%."""
    rng = np.random.default_rng(3)
    labels = rng.random((4, 2000)) < 0.5
    scores = rng.normal(size=(4, 2000))
    scores[0] = np.where(labels[0], 10.0, -10.0)
    pooled = epsilon_lower_bound_from_roc(scores.ravel(), labels.ravel(), delta=1e-5)
    clustered = attack_metrics(scores, labels, delta=1e-5)
    assert pooled > 2.0
    assert clustered["epsilon_lower"] < 0.5
    assert clustered["tpr_at_1pct"] > 0.25  # the point estimate is the same leak


def test_epsilon_bound_of_a_perfect_attack():
    scores, labels = np.r_[np.ones(1000), np.zeros(1000)], np.r_[np.ones(1000), np.zeros(1000)]
    bound = epsilon_lower_bound_from_roc(scores, labels, delta=1e-5)
    # TPR >= 0.05^(1/1000) and FPR <= 1 - 0.05^(1/1000) at 95%: about log(333) = 5.8
    floor = 0.05 ** (1 / 1000)
    assert np.isfinite(bound) and bound > 3
    assert bound == pytest.approx(np.log((floor - 1e-5) / (1 - floor)))


def test_epsilon_bound_uses_the_complementary_inequality():
    # members always answer 1, non-members half the time: TPR = 1, FPR = 1/2. The first
    # inequality only gives log 2; 1 - FPR <= e^eps (1 - TPR) gives much more.
    scores, labels = np.r_[np.ones(1000), np.arange(1000) % 2], np.r_[np.ones(1000), np.zeros(1000)]
    bound = epsilon_lower_bound_from_roc(scores, labels, delta=0.0)
    fpr_high = binomtest(500, 1000).proportion_ci(0.9, method="exact").high  # one-sided 95%
    assert bound == pytest.approx(np.log((1 - fpr_high) / (1 - 0.05 ** (1 / 1000))))
    assert bound > 3


def test_epsilon_bound_never_exceeds_randomized_response():
    rng = np.random.default_rng(0)
    n, epsilon = 20000, 1.0
    keep = np.exp(epsilon) / (1 + np.exp(epsilon))  # a member answers 1 w.p. e / (1 + e)
    answers = np.r_[rng.random(n) < keep, rng.random(n) >= keep]
    bound = epsilon_lower_bound_from_roc(answers, np.r_[np.ones(n), np.zeros(n)], delta=0.0)
    assert 0.7 < bound <= epsilon


def test_epsilon_bound_is_zero_without_evidence_and_shrinks_with_confidence():
    labels = np.r_[np.ones(50), np.zeros(50)]
    assert epsilon_lower_bound_from_roc(-labels, labels, delta=0.0) == 0.0
    scores = labels + np.random.default_rng(1).normal(size=100)
    bounds = [epsilon_lower_bound_from_roc(scores, labels, 0.0, confidence=c)
              for c in (0.5, 0.9, 0.99)]
    assert bounds[0] > bounds[1] > bounds[2]
    with pytest.raises(ValueError, match="delta"):
        epsilon_lower_bound_from_roc(scores, labels, delta=1.0)
    with pytest.raises(ValueError, match="confidence"):
        epsilon_lower_bound_from_roc(scores, labels, delta=0.0, confidence=1.0)


def test_class_matched_nonmembers_example():
    members = [0, 0, 0, 0, 1, 1]  # two thirds class 0
    candidates = [1, 0, 0, 1, 1, 2, 0, 1]  # three of class 0: scale 3/4
    picked = class_matched_nonmembers(members, candidates, seed=3)
    assert np.bincount(np.asarray(candidates)[picked], minlength=3).tolist() == [3, 1, 0]
    np.testing.assert_array_equal(picked, class_matched_nonmembers(members, candidates, seed=3))
    assert class_matched_nonmembers(members, [1, 1, 1]).size == 0  # no class-0 candidate


@settings(deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=60),
       st.lists(st.integers(0, 5), max_size=120), st.integers(0, 2**32 - 1))
def test_class_matched_nonmembers_keeps_the_label_mix(members, candidates, seed):
    members, candidates = np.array(members), np.array(candidates, dtype=int)
    picked = class_matched_nonmembers(members, candidates, seed=seed)
    np.testing.assert_array_equal(picked, class_matched_nonmembers(members, candidates, seed=seed))
    assert (np.diff(picked) > 0).all()  # sorted, no candidate twice
    classes, member_counts = np.unique(members, return_counts=True)
    available = np.array([np.sum(candidates == c) for c in classes])
    drawn = np.array([np.sum(candidates[picked] == c) for c in classes])
    assert drawn.sum() == picked.size  # only member classes are drawn
    scale = min(1.0, (available / member_counts).min())
    assert (np.abs(drawn - scale * member_counts) < 1 + 1e-9).all()
    assert (drawn <= available).all() and drawn.sum() <= len(members)
    # as large as the rule allows: some class is used up, or one non-member per member
    assert (drawn == available).any() or drawn.sum() == len(members)
