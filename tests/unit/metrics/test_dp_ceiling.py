"""The ceiling (epsilon, delta)-DP puts on any membership attack (Kairouz et al. 2015)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.integrate import quad

from dpminimax.attacks import dp_advantage_ceiling, dp_auc_ceiling, dp_tpr_ceiling

epsilons = st.floats(0, 30)
deltas = st.floats(0, 1)
FPRS = np.linspace(0, 1, 101)


def test_no_privacy_loss_means_chance():
    np.testing.assert_allclose(dp_tpr_ceiling(FPRS, 0.0, 0.0), FPRS)
    assert dp_auc_ceiling(0.0, 0.0) == 0.5
    assert dp_advantage_ceiling(0.0, 0.0) == 0.0


def test_no_privacy_means_anything_goes():
    np.testing.assert_array_equal(dp_tpr_ceiling(FPRS, np.inf, 0.0), 1.0)
    assert dp_auc_ceiling(np.inf, 0.0) == 1.0
    assert dp_advantage_ceiling(np.inf, 0.0) == 1.0
    assert dp_tpr_ceiling(0.0, 1e4, 0.0) == 0.0  # e^eps overflows; 0 * inf is not NaN


def test_pinned_values():
    assert dp_tpr_ceiling(0.01, 1.0, 0.0) == pytest.approx(np.e * 0.01)
    assert dp_tpr_ceiling(0.5, 1.0, 0.0) == pytest.approx(1 - np.exp(-1) * 0.5)
    assert dp_auc_ceiling(1.0, 0.0) == pytest.approx(1 - 1 / (1 + np.e))
    assert dp_advantage_ceiling(1.0, 0.0) == pytest.approx((np.e - 1) / (np.e + 1))


@given(epsilons, deltas)
def test_auc_closed_form_is_the_area_under_the_tpr_ceiling(epsilon, delta):
    kink = (1 - delta) / (1 + np.exp(epsilon))
    area, _ = quad(lambda f: dp_tpr_ceiling(f, epsilon, delta), 0, 1,
                   points=[kink, 1 - delta], epsabs=1e-12)
    assert dp_auc_ceiling(epsilon, delta) == pytest.approx(area, abs=1e-8)
    assert dp_auc_ceiling(epsilon, delta) >= 0.5


@given(epsilons, deltas)
def test_advantage_is_the_max_gap_of_the_tpr_ceiling(epsilon, delta):
    grid = np.linspace(0, 1, 20001)
    gap = np.max(dp_tpr_ceiling(grid, epsilon, delta) - grid)
    assert dp_advantage_ceiling(epsilon, delta) == pytest.approx(gap, abs=1e-3)


@given(epsilons, epsilons, deltas)
def test_monotone_in_epsilon(eps_a, eps_b, delta):
    low, high = sorted((eps_a, eps_b))
    assert np.all(dp_tpr_ceiling(FPRS, low, delta) <= dp_tpr_ceiling(FPRS, high, delta) + 1e-12)
    assert dp_auc_ceiling(low, delta) <= dp_auc_ceiling(high, delta) + 1e-12
    assert dp_advantage_ceiling(low, delta) <= dp_advantage_ceiling(high, delta) + 1e-12


@given(epsilons, deltas)
def test_tpr_ceiling_is_a_valid_roc_bound(epsilon, delta):
    ceiling = dp_tpr_ceiling(FPRS, epsilon, delta)
    assert np.all(ceiling >= FPRS - 1e-12) and np.all(ceiling <= 1)
    assert np.all(np.diff(ceiling) >= -1e-12)


def test_vectorised_and_validated():
    values = dp_auc_ceiling(np.array([0.0, 1.0, np.inf]), 1e-5)
    assert values.shape == (3,) and values[-1] == 1.0
    assert isinstance(dp_tpr_ceiling(0.01, 1.0, 1e-5), float)
    with pytest.raises(ValueError, match="epsilon"):
        dp_auc_ceiling(-1.0, 0.0)
    with pytest.raises(ValueError, match="fpr"):
        dp_tpr_ceiling(1.5, 1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        dp_advantage_ceiling(1.0, 2.0)
