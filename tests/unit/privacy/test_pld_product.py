"""The PLD of the Poisson-subsampled product pair Lap(1, b) x N(1, s^2) (same-batch releases):
limits against dp_accounting, the exact un-composed curve, Monte Carlo, refinement, lower
bounds, and the RDP / PLD grid fixes of issue #24."""

import logging
import math

import numpy as np
import pytest
from dp_accounting import dp_event as de
from dp_accounting.pld import PLDAccountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import RdpAccountant
from scipy import integrate
from scipy.stats import norm

from dpminimax.algorithms.fair.racodp import paper_accounting_event, racodp_event
from dpminimax.privacy import accounting, accounting_record, dpsgd_event, epsilon, pld_product
from dpminimax.privacy.rdp_general import rdp_to_epsilon

logging.getLogger("absl").setLevel(logging.ERROR)

DELTA = 1e-5
H = 1e-4


def _dpa_pld(q, event, steps, interval=H):
    acc = PLDAccountant(value_discretization_interval=interval)
    acc.compose(de.SelfComposedDpEvent(de.PoissonSampledDpEvent(q, event), steps))
    return acc.get_epsilon(DELTA)


@pytest.mark.parametrize("q,sigma,steps", [(0.01, 1.1, 1000), (0.02, 3.0, 2000),
                                           (0.001, 3.0, 100), (0.2, 5.0, 50), (1.0, 8.0, 20)])
def test_gaussian_limit_equals_dp_accounting(q, sigma, steps):
    ours = pld_product.epsilon(q, [sigma], [], steps, DELTA, H)
    assert ours == pytest.approx(_dpa_pld(q, de.GaussianDpEvent(sigma), steps), abs=1e-4)


@pytest.mark.parametrize("q,scale,steps", [(0.01, 1.0, 1000), (0.02, 4.0, 2000),
                                           (0.05, 10.0, 500), (1.0, 20.0, 10)])
def test_laplace_limit_equals_dp_accounting(q, scale, steps):
    ours = pld_product.epsilon(q, [], [scale], steps, DELTA, H)
    assert ours == pytest.approx(_dpa_pld(q, de.LaplaceDpEvent(scale), steps), abs=1e-4)


def test_several_gaussians_merge_and_several_laplaces_compose():
    """N(1, s1^2) x N(1, s2^2) is one Gaussian of multiplier (s1^-2 + s2^-2)^-1/2; two Laplace
    releases on one batch cost more than one and less than both separately unsampled."""
    merged = (2.0**-2 + 3.0**-2) ** -0.5
    assert pld_product.epsilon(0.02, [2.0, 3.0], [], 300, DELTA, H) == pytest.approx(
        _dpa_pld(0.02, de.GaussianDpEvent(merged), 300), abs=1e-4)
    one = pld_product.epsilon(0.02, [4.0], [5.0], 300, DELTA, H)
    two = pld_product.epsilon(0.02, [4.0], [5.0, 5.0], 300, DELTA, H)
    halved = pld_product.epsilon(0.02, [4.0], [2.5], 300, DELTA, H)
    assert one < two < halved + 1e-4  # Lap(b) x Lap(b) is dominated by Lap(b/2)


# --- the exact un-composed curve of the true (continuous) subsampled product pair ------------

def _delta_gauss(mu, s):
    return norm.cdf(-s / mu + mu / 2) - math.exp(s) * norm.cdf(-s / mu - mu / 2)


def _delta_product(sigma, b, t, reverse=False):
    """H_{e^t}(P||Q) (or H_{e^t}(Q||P)) of P = Lap(1,b) x N(1,sigma^2), Q = Lap(0,b) x N(0,.),
    integrating the Gaussian curve against the Laplace privacy loss (law under P, or Q)."""
    mu, e = 1 / sigma, 1 / b
    sign = 1.0 if reverse else -1.0           # delta_N(t - l) forward, delta_N(t + l) reverse
    shift = 0.0 if reverse else 1.0           # Lap(1, b) density on (0, 1) vs Lap(0, b)
    top, bottom = (0.5 * math.exp(-e), 0.5) if reverse else (0.5, 0.5 * math.exp(-e))
    f = lambda x: (math.exp(-abs(shift - x) / b) / (2 * b)
                   * _delta_gauss(mu, t + sign * (2 * x - 1) / b))
    inner = integrate.quad(f, 0, 1, epsabs=1e-15, epsrel=1e-12, limit=200)[0]
    return top * _delta_gauss(mu, t + sign * e) + bottom * _delta_gauss(mu, t - sign * e) + inner


def _exact_subsampled(q, sigma, b, eps, direction):
    if direction == "remove":  # (qP + (1-q)Q, Q)
        if eps <= math.log1p(-q):
            return -math.expm1(eps)
        return q * _delta_product(sigma, b, math.log((math.expm1(eps) + q) / q))
    if eps >= -math.log1p(-q):  # (Q, qP + (1-q)Q)
        return 0.0
    rest = 1 - (1 - q) * math.exp(eps)
    return rest * _delta_product(sigma, b, math.log(q * math.exp(eps) / rest), reverse=True)


@pytest.mark.parametrize("q,sigma,b", [(0.02, 3.0, 4.0), (1024 / 33916, 6.0, 10.0),
                                       (0.3, 1.0, 1.5)])
def test_one_step_curve_is_above_and_near_the_exact_curve(q, sigma, b):
    """Pessimism and tightness of one step's PLD, both directions, on and off the grid."""
    pld = pld_product.subsampled_pld(q, (sigma,), (b,), H)
    pmfs = {"remove": pld._pmf_remove, "add": pld._pmf_add}
    for direction, pmf in pmfs.items():
        for eps in np.linspace(-0.05, 0.6, 14) + H / 3:
            exact = _exact_subsampled(q, sigma, b, eps, direction)
            ours = float(pmf.get_delta_for_epsilon(eps))
            assert ours >= exact - 1e-13, (direction, eps)
            assert ours <= exact + 2e-4 * max(exact, 1e-3), (direction, eps)


def test_one_step_curve_against_monte_carlo():
    """delta(eps) = E_upper[(1 - e^(eps - loss))_+] sampled from the mechanism itself."""
    q, sigma, b, n = 0.3, 1.0, 1.5, 400_000
    rng = np.random.default_rng(0)
    present = rng.random(n) < q
    lap, gauss = rng.laplace(0, b, n), rng.normal(0, sigma, n)
    loss_of = lambda x, y: (np.abs(x) - np.abs(x - 1)) / b + (2 * y - 1) / (2 * sigma**2)
    mixture = lambda loss: np.logaddexp(math.log(q) + loss, math.log1p(-q))
    removal = mixture(loss_of(lap + present, gauss + present))  # x ~ qP + (1-q)Q
    addition = -mixture(loss_of(lap, gauss))                    # x ~ Q
    pld = pld_product.subsampled_pld(q, (sigma,), (b,), H)
    for loss, pmf in ((removal, pld._pmf_remove), (addition, pld._pmf_add)):
        for eps in (0.0, 0.1, 0.3, 0.6):
            terms = np.maximum(0.0, -np.expm1(eps - loss))
            mc, se = terms.mean(), terms.std() / math.sqrt(n)
            assert float(pmf.get_delta_for_epsilon(eps)) == pytest.approx(mc, abs=5 * se + 1e-6)


def test_directions_differ_and_both_count():
    """Add and remove curves are different here; epsilon is the worse of the two."""
    pld = pld_product.subsampled_pld(0.3, (1.0,), (1.5,), H)
    eps = np.array([0.2, 0.4])
    assert np.all(np.abs(pld._pmf_add.get_delta_for_epsilon(eps)
                         - pld._pmf_remove.get_delta_for_epsilon(eps)) > 1e-3)
    composed = pld.self_compose(5)
    assert composed.get_epsilon_for_delta(DELTA) == max(
        composed._pmf_remove.get_epsilon_for_delta(DELTA),
        composed._pmf_add.get_epsilon_for_delta(DELTA))


ADULT = (1024 / 33916, 6.0, 10.0)  # Fig. 4 Adult: q, sigma, Laplace scale
FIG9 = (256 / 33916, 20.0, 30.0)


@pytest.mark.parametrize("q,sigma,b,steps", [(*ADULT, 2000), (0.02, 3.0, 4.0, 2000),
                                             (*FIG9, 2000)])
def test_refinement_moves_epsilon_little_and_only_down(q, sigma, b, steps):
    coarse = pld_product.epsilon(q, [sigma], [b], steps, DELTA, H)
    fine = pld_product.epsilon(q, [sigma], [b], steps, DELTA, H / 4)
    assert fine <= coarse + 1e-9
    assert coarse - fine < 1e-3


def _optimistic(sigma=None, scale=None, q=1.0, steps=1, interval=5e-4):
    """A valid LOWER bound: dp_accounting's optimistic (rounding-down) PLD."""
    kwargs = dict(pessimistic_estimate=False, value_discretization_interval=interval,
                  sampling_prob=q, use_connect_dots=False)
    pld = (pld_lib.from_gaussian_mechanism(sigma, **kwargs) if sigma is not None
           else pld_lib.from_laplace_mechanism(scale, **kwargs))
    return pld.self_compose(steps).get_epsilon_for_delta(DELTA)


@pytest.mark.parametrize("q,sigma,b,steps", [(*ADULT, 2000), (0.02, 3.0, 4.0, 2000),
                                             (*FIG9, 500), (0.1, 2.0, 1.0, 100)])
def test_never_below_the_single_mechanism_lower_bounds(q, sigma, b, steps):
    product = pld_product.epsilon(q, [sigma], [b], steps, DELTA, H)
    lower = max(_optimistic(sigma=sigma, q=q, steps=steps),
                _optimistic(scale=b, q=q, steps=steps))
    assert product >= lower
    # and the general RDP bound is an upper bound of the tight value
    general = accounting._general_rdp_epsilon(racodp_event(q, sigma, b, "laplace", steps), DELTA)
    assert product <= general


def test_random_gaussian_configurations_against_dp_accounting_pld_and_rdp():
    """100 seeded Gaussian-only configurations: equal to dp_accounting's PLD on the same grid,
    never above its RDP bound (up to the grid's pessimism)."""
    rng = np.random.default_rng(18)
    for _ in range(100):
        q = float(10 ** rng.uniform(-3, -0.5))
        sigma = float(rng.uniform(0.8, 10.0))
        steps = int(rng.integers(1, 100))
        ours = pld_product.epsilon(q, [sigma], [], steps, DELTA, 1e-3)
        theirs = _dpa_pld(q, de.GaussianDpEvent(sigma), steps, interval=1e-3)
        rdp = RdpAccountant().compose(dpsgd_event(q, sigma, steps)).get_epsilon(DELTA)
        assert ours == pytest.approx(theirs, abs=1e-4), (q, sigma, steps)
        assert ours <= rdp + 1e-3 * steps ** 0.5, (q, sigma, steps)


# --- the accountant ---------------------------------------------------------------------------

def test_racodp_event_is_accounted_by_the_product_pld_with_rdp_beside_it():
    record = accounting_record(racodp_event(0.02, 3.0, 4.0, "laplace", 2000), DELTA)
    assert record["method"] == "pld_product_poisson_subsampled"
    assert record["epsilon"] == record["epsilon_pld_product"]
    assert record["epsilon_pld_product"] < record["epsilon_rdp_general"]
    tight = pld_product.epsilon(0.02, [3.0], [4.0], 2000, DELTA, H / 8)
    assert tight <= record["epsilon"] <= 1.02 * tight


def test_the_smaller_sound_value_is_reported():
    """A tiny budget where the general RDP bound beats a PLD grid: whichever is smaller wins."""
    event = racodp_event(0.5, 2.0, 2.0, "laplace", 1)
    record = accounting_record(event, DELTA)
    assert record["epsilon"] == min(record["epsilon_pld_product"], record["epsilon_rdp_general"])


def test_paper_accounting_understates_or_matches_the_tight_same_batch_value():
    q, sigma, b, steps = 0.02, 3.0, 4.0, 2000
    tight = epsilon(racodp_event(q, sigma, b, "laplace", steps), DELTA)
    paper = epsilon(paper_accounting_event(q, sigma, b, "laplace", steps), DELTA, "pld")
    assert paper < tight


def test_calibration_at_the_adult_setting_is_fast():
    import time

    from dpminimax.algorithms.base import RunSpec
    from dpminimax.algorithms.fair.racodp import RacoDp

    accounting._account_memo.clear()
    pld_product.subsampled_pld.cache_clear()
    start = time.perf_counter()
    run = RunSpec(seed=0, epsilon=0.5, delta=DELTA)
    steps = RacoDp().steps(ADULT[0], (ADULT[1], ADULT[2], "laplace"), run,
                           {"max_steps": 2000, "accountant": "rdp"})
    assert time.perf_counter() - start < 20  # a few seconds alone; generous for a shared CI
    event = lambda t: racodp_event(*ADULT, "laplace", t)
    assert epsilon(event(steps), DELTA) <= 0.5 < epsilon(event(steps + 1), DELTA)


# --- issue #24: orders and grid scaled to small epsilons --------------------------------------

def test_small_epsilon_rdp_matches_a_dense_order_reference():
    q, sigma, steps = 0.001, 3.0, 100
    ours = epsilon(dpsgd_event(q, sigma, steps), DELTA, "rdp")
    dense = tuple(np.arange(1.5, 20, 0.25)) + tuple(range(20, 400))
    reference = RdpAccountant(dense).compose(dpsgd_event(q, sigma, steps)).get_epsilon(DELTA)
    # the lower end allows float rounding: our curve sums its terms in another order
    # (privacy.rdp_gaussian), a few ulps from dp_accounting's
    assert reference * (1 - 1e-12) <= ours <= 1.005 * reference


def test_orders_are_extended_until_the_optimum_is_inside():
    """A privacy loss so small that the optimal order is far above 1024."""
    event = dpsgd_event(1.0, 1000.0, 1)
    ours = epsilon(event, DELTA, "rdp")
    capped = RdpAccountant(accounting.RDP_ORDERS).compose(event)
    eps_capped, best = capped.get_epsilon_and_optimal_order(DELTA)
    assert best == max(accounting.RDP_ORDERS)
    assert ours < 0.6 * eps_capped
    reference = RdpAccountant(tuple(np.geomspace(1.1, 1e6, 600))).compose(event)
    assert reference.get_epsilon(DELTA) <= ours <= 1.01 * reference.get_epsilon(DELTA)
    general_event = racodp_event(1.0, 1000.0, 1000.0, "laplace", 1)
    general = accounting._general_rdp_epsilon(general_event, DELTA)
    orders = np.arange(2, 8193, dtype=float)
    reference, order = rdp_to_epsilon(orders, accounting.general_rdp_curve(general_event, orders),
                                      DELTA)
    assert order < 8192 and general <= 1.01 * reference


def test_pld_grid_scales_with_epsilon_so_pld_is_not_above_rdp():
    """With a fixed 1e-4 grid, tiny epsilons come out above the RDP value."""
    event = dpsgd_event(1.0, 2e4, 1)
    fixed = PLDAccountant(value_discretization_interval=1e-4).compose(event).get_epsilon(DELTA)
    pld, rdp = epsilon(event, DELTA, "pld"), epsilon(event, DELTA, "rdp")
    assert fixed > rdp and pld < rdp
