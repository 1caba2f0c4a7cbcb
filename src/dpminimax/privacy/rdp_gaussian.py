"""RDP of the Poisson-subsampled Gaussian mechanism, vectorised over the terms of its series.

The same quantities as dp_accounting's ``_compute_rdp_poisson_subsampled_gaussian``
(Mironov, Talwar & Zhang 2019, "Renyi Differential Privacy of the Sampled Gaussian Mechanism":
Sec. 3.2 for integer orders, Sec. 3.3 for fractional ones, with dp_accounting's stopping rule
for the fractional series), computed with array operations instead of one Python step per
term: calibrating a noise multiplier evaluates the ~200 orders of
:data:`dpminimax.privacy.accounting.RDP_ORDERS` a dozen times, slow term by term
(BENCHMARKS.md).
:class:`VectorizedRdpAccountant` is dp_accounting's ``RdpAccountant`` with this one function
swapped in; every other event goes through dp_accounting's own code. Tests pin both against
dp_accounting.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import special

#: dp_accounting's cap on the terms of the fractional-order series (``_MAX_STEPS_LOG_A_FRAC``).
MAX_FRACTIONAL_TERMS = 1000

_SAMPLED_RELATIONS = (privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE,
                      privacy_accountant.NeighboringRelation.REPLACE_SPECIAL)


def _log_comb(n: float, k: np.ndarray) -> np.ndarray:
    """log |binomial(n, k)| (generalised to real n through the Gamma function)."""
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def _log_a_integer(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_alpha = log sum_i C(alpha, i) (1-q)^(alpha-i) q^i exp((i^2 - i) / (2 sigma^2)) for
    integer ``alphas`` (Sec. 3.2): one flat array of every order's terms, log-sum-exp'd per
    segment."""
    lengths = alphas.astype(np.int64) + 1
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    alpha = np.repeat(alphas, lengths)
    i = np.arange(lengths.sum(), dtype=np.float64) - np.repeat(starts, lengths)
    terms = (_log_comb(alpha, i) + i * math.log(q) + (alpha - i) * math.log1p(-q)
             + (i * i - i) / (2 * sigma**2))
    peak = np.maximum.reduceat(terms, starts)
    at_peak = terms == np.repeat(peak, lengths)
    # log1p of the terms other than the largest keeps the precision of an RDP near 0
    rest = (np.add.reduceat(np.where(at_peak, 0.0, np.exp(terms - np.repeat(peak, lengths))),
                            starts) + np.add.reduceat(at_peak, starts) - 1)
    return peak + np.log1p(rest)


def _log_a_fractional(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """log A_alpha for fractional ``alphas``: the two series of Sec. 3.3 (integrals below and
    above z0), each order's summed up to its first term where both are decreasing and 30 nats
    below the total (the stopping rule of dp_accounting's ``_compute_log_a_frac``); inf where
    that never happens within :data:`MAX_FRACTIONAL_TERMS` terms (dp_accounting then excludes
    the order the same way)."""
    alpha = alphas[:, None]
    i = np.arange(MAX_FRACTIONAL_TERMS, dtype=np.float64)[None, :]
    j = alpha - i
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    log_coef = _log_comb(alpha, i)
    log_q, log_1mq = math.log(q), math.log1p(-q)
    log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2) * sigma))
    log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2) * sigma))
    log_s0 = log_coef + i * log_q + j * log_1mq + (i * i - i) / (2 * sigma**2) + log_e0
    log_s1 = log_coef + j * log_q + i * log_1mq + (j * j - j) / (2 * sigma**2) + log_e1
    total = np.logaddexp(np.logaddexp.accumulate(log_s0, axis=1),
                         np.logaddexp.accumulate(log_s1, axis=1))
    done = np.zeros(total.shape, dtype=bool)
    done[:, 1:] = ((log_s0[:, 1:] < log_s0[:, :-1]) & (log_s1[:, 1:] < log_s1[:, :-1])
                   & (np.maximum(log_s0[:, 1:], log_s1[:, 1:]) < total[:, 1:] - 30))
    converged = done.any(axis=1)
    for alpha_k in alphas[~converged]:
        logging.getLogger("absl").warning(
            "fractional-order RDP series failed to converge after %d terms with q=%f, "
            "sigma=%f, alpha=%f. Excluding this order from the epsilon computation.",
            MAX_FRACTIONAL_TERMS, q, sigma, alpha_k)
    first = np.argmax(done, axis=1)
    return np.where(converged, total[np.arange(len(alphas)), first], np.inf)


def _log_erfc(x: np.ndarray) -> np.ndarray:
    """log erfc(x), accurate far into the tail."""
    return math.log(2) + special.log_ndtr(-x * 2**0.5)


def poisson_subsampled_gaussian_rdp(q: float, sigma: float,
                                    orders: Sequence[float]) -> np.ndarray:
    """RDP at ``orders`` of the Gaussian mechanism with noise multiplier ``sigma`` on a Poisson
    sample of rate ``q`` (add-or-remove-one): log(A_alpha) / (alpha - 1)."""
    if not 0 <= q <= 1:
        raise ValueError(f"Sampling rate must be in [0, 1]. Found {q}.")
    if sigma < 0:
        raise ValueError(f"Noise multiplier must be non-negative: {sigma}")
    orders = np.asarray(orders, dtype=np.float64)
    if q == 0:
        return np.zeros_like(orders)
    if sigma == 0:
        return np.full_like(orders, np.inf)
    if q == 1:
        return orders / (2 * sigma**2)
    rdp = np.full_like(orders, np.inf)
    integer = np.isfinite(orders) & (orders == np.floor(orders))
    fractional = np.isfinite(orders) & ~integer
    if integer.any():
        rdp[integer] = _log_a_integer(q, sigma, orders[integer]) / (orders[integer] - 1)
    if fractional.any():
        rdp[fractional] = (_log_a_fractional(q, sigma, orders[fractional])
                           / (orders[fractional] - 1))
    return rdp


class VectorizedRdpAccountant(rdp_privacy_accountant.RdpAccountant):
    """dp_accounting's ``RdpAccountant`` whose Gaussian and Poisson-sampled Gaussian curves come
    from :func:`poisson_subsampled_gaussian_rdp`; every other event (and every refusal) is
    dp_accounting's own."""

    def _maybe_compose(self, event: dp_event.DpEvent, count: int, do_compose: bool):
        if isinstance(event, dp_event.GaussianDpEvent):
            if do_compose:
                self._rdp += count * poisson_subsampled_gaussian_rdp(
                    1.0, event.noise_multiplier, self._orders)
            return None
        if (isinstance(event, dp_event.PoissonSampledDpEvent)
                and self._neighboring_relation in _SAMPLED_RELATIONS):
            sigma = rdp_privacy_accountant._effective_gaussian_noise_multiplier(event.event)
            if isinstance(sigma, float):
                if do_compose:
                    self._rdp += count * poisson_subsampled_gaussian_rdp(
                        event.sampling_probability, sigma, self._orders)
                return None
        return super()._maybe_compose(event, count, do_compose)
