"""The vectorised subsampled-Gaussian RDP curve against dp_accounting's term-by-term one, and
the accountant built on it against dp_accounting's RdpAccountant."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import _compute_rdp_poisson_subsampled_gaussian
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.privacy import accounting
from dpminimax.privacy.rdp_gaussian import (
    VectorizedRdpAccountant,
    poisson_subsampled_gaussian_rdp,
)

#: Fractional orders (Sec. 3.3 series), small and large integer orders (Sec. 3.2 sums).
ORDERS = (1.1, 1.5, 2.0, 2.5, 3.0, 4.7, 8.0, 10.5, 32.0, 63.0, 100.0, 256.0, 1024.0, 3000.0)


def _close(ours: np.ndarray, reference: np.ndarray) -> None:
    assert np.array_equal(np.isfinite(ours), np.isfinite(reference))
    finite = np.isfinite(reference)
    # atol: an RDP near 1e-10 is 1 + tiny summed from O(1) terms, in both implementations
    np.testing.assert_allclose(ours[finite], reference[finite], rtol=1e-9, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(q=st.floats(1e-5, 0.99), sigma=st.floats(0.3, 60.0))
def test_curve_matches_dp_accounting(q, sigma):
    _close(poisson_subsampled_gaussian_rdp(q, sigma, ORDERS),
           _compute_rdp_poisson_subsampled_gaussian(q, sigma, ORDERS))


@pytest.mark.parametrize(("q", "sigma"), [(0.0, 1.0), (1.0, 2.0), (0.3, 0.0), (0.01, 1.0)])
def test_edge_cases_match_dp_accounting(q, sigma):
    orders = (*ORDERS, math.inf)
    _close(poisson_subsampled_gaussian_rdp(q, sigma, orders),
           _compute_rdp_poisson_subsampled_gaussian(q, sigma, orders))


def test_integer_order_two_in_closed_form():
    # A_2 = 1 + q^2 (exp(1 / sigma^2) - 1) (Mironov, Talwar & Zhang 2019, Sec. 3.2)
    q, sigma = 0.05, 0.9
    expected = math.log1p(q**2 * math.expm1(1 / sigma**2))
    assert poisson_subsampled_gaussian_rdp(q, sigma, [2])[0] == pytest.approx(expected, 1e-12)


def test_unconverged_fractional_order_is_excluded_like_dp_accounting():
    # q = 0.5, sigma = 3: the series of order 1.1 has not converged after 1000 terms
    ours = poisson_subsampled_gaussian_rdp(0.5, 3.0, [1.1, 2.0])
    assert math.isinf(ours[0]) and math.isfinite(ours[1])
    assert math.isinf(_compute_rdp_poisson_subsampled_gaussian(0.5, 3.0, [1.1])[0])


@pytest.mark.parametrize("bad", [(-0.1, 1.0), (1.5, 1.0), (0.1, -1.0)])
def test_invalid_arguments(bad):
    with pytest.raises(ValueError):
        poisson_subsampled_gaussian_rdp(*bad, ORDERS)


EVENTS = [
    dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 1000),
    dp_event.ComposedDpEvent([  # a same-batch pair of Gaussians, and a full-batch release
        dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(
            0.05, dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(2.0),
                                            dp_event.GaussianDpEvent(3.0)])), 200),
        dp_event.GaussianDpEvent(40.0),
    ]),
    dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.002, dp_event.GaussianDpEvent(0.7)), 20000),
]


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("relation", ["add_or_remove_one", "replace_special"])
def test_accountant_matches_rdp_accountant(event, relation):
    neighboring = accounting.NEIGHBORING_RELATIONS[relation]
    ours = VectorizedRdpAccountant(accounting.RDP_ORDERS, neighboring).compose(event)
    theirs = RdpAccountant(accounting.RDP_ORDERS, neighboring).compose(event)
    for delta in (1e-5, 1e-8):
        assert ours.get_epsilon(delta) == pytest.approx(theirs.get_epsilon(delta), rel=1e-9)


def test_accountant_refuses_what_rdp_accountant_refuses():
    event = dp_event.PoissonSampledDpEvent(0.1, dp_event.LaplaceDpEvent(1.0))
    assert not VectorizedRdpAccountant(accounting.RDP_ORDERS).supports(event)
    replace_one = accounting.NEIGHBORING_RELATIONS["replace_one"]
    sampled = dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(1.0))
    assert not VectorizedRdpAccountant(accounting.RDP_ORDERS, replace_one).supports(sampled)
