"""Rényi-DP curves and a sound Poisson-subsampling bound for an arbitrary mechanism.

Pure mathematics (numpy / scipy only). A *curve* is an array ``rdp`` with ``rdp[i]`` the RDP
epsilon of a mechanism at Rényi order ``orders[i]`` (Mironov 2017, Def. 4), for the
add-or-remove-one neighbouring relation and sensitivity 1.

Composition rules used by the accountant (Mironov 2017, Prop. 1):

- releases computed from the SAME Poisson batch form one mechanism whose curve is the SUM of
  their curves; that sum is subsampled once with :func:`poisson_subsampled_rdp`;
- T-fold self-composition of the subsampled step multiplies its curve by T.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

#: Every integer order 2..256, then integer orders ~3% apart up to 4096, for very small privacy
#: losses (the accountant extends them further where the optimum is the largest). The general
#: subsampling bound needs integer orders; it fills the gaps between the larger orders soundly
#: (see :func:`poisson_subsampled_rdp`).
DEFAULT_ORDERS: np.ndarray = np.unique(np.concatenate(
    [np.arange(2, 257), np.round(np.geomspace(256, 4096, 95))]
)).astype(np.float64)


def _as_orders(orders) -> np.ndarray:
    orders = np.asarray(orders, dtype=np.float64)
    if orders.ndim != 1 or orders.size == 0:
        raise ValueError("orders must be a non-empty 1-d sequence")
    if not np.all(orders > 1):
        raise ValueError(f"Rényi orders must be > 1, got min {orders.min()}")
    return orders


def gaussian_rdp(noise_multiplier: float, orders) -> np.ndarray:
    """RDP of the Gaussian mechanism: ``alpha / (2 sigma^2)`` (Mironov 2017, Prop. 7)."""
    if not noise_multiplier > 0:
        raise ValueError(f"noise_multiplier must be > 0, got {noise_multiplier}")
    return _as_orders(orders) / (2.0 * noise_multiplier**2)


def laplace_rdp(scale: float, orders) -> np.ndarray:
    """RDP of the Laplace mechanism with scale ``b`` (l1-sensitivity 1), Mironov 2017, Prop. 6.

    ``eps(alpha) = log( alpha/(2 alpha-1) e^{(alpha-1)/b} + (alpha-1)/(2 alpha-1) e^{-alpha/b} )
    / (alpha-1)`` for ``alpha > 1``, evaluated as a log-sum-exp so that large orders and small
    scales do not overflow.
    """
    if not scale > 0:
        raise ValueError(f"Laplace scale must be > 0, got {scale}")
    a = _as_orders(orders)
    log_mass = np.logaddexp(
        np.log(a / (2 * a - 1)) + (a - 1) / scale,
        np.log((a - 1) / (2 * a - 1)) - a / scale,
    )
    return log_mass / (a - 1)


def _log_binom(n: float, k) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _times_log1m(n, q: float) -> np.ndarray:
    """``n log(1-q)`` with the convention ``0 log 0 = 0`` (needed at ``q = 1``)."""
    n = np.asarray(n, dtype=np.float64)
    if q < 1:
        return n * math.log1p(-q)
    return np.where(n == 0, 0.0, -np.inf)


def poisson_subsampled_rdp(q: float, rdp_of_order, orders) -> np.ndarray:
    """Sound RDP upper bound for ``M`` applied to a Poisson(q) subsample, any mechanism ``M``.

    Zhu & Wang 2019, "Poisson Subsampled Rényi Differential Privacy" (ICML), Theorem 6 (general
    upper bound, add-or-remove-one): for integer ``alpha >= 2``,

        (alpha-1) eps'(alpha) <= log( (1-q)^{alpha-1} (alpha q - q + 1)
                                      + C(alpha,2) q^2 (1-q)^{alpha-2} e^{eps(2)}
                                      + 3 sum_{l=3}^{alpha} C(alpha,l) (1-q)^{alpha-l} q^l
                                        e^{(l-1) eps(l)} ).

    This is the statement implemented, including the factor 3 (the paper's optimality gap is
    ``log(3)/(alpha-1)``). Consequently, at ``q = 1`` the bound is ``eps(2)`` at order 2 and
    exactly ``eps(alpha) + log(3)/(alpha-1)`` at orders ``alpha >= 3``.

    ``rdp_of_order`` is ``M``'s curve at ``orders`` (bounding the divergence in both directions
    between neighbouring inputs, as the Gaussian and Laplace curves do); ``orders`` must be
    integers >= 2 and include 2.
    The sum needs ``eps(l)`` at every integer ``l <= alpha``; where ``l`` is not among
    ``orders`` it is bounded by ``eps`` at the next larger given order, which is sound because
    the Rényi divergence is non-decreasing in its order (van Erven & Harremoës 2014, Thm. 3).
    Everything is computed in log space (log-sum-exp), so order 1024 does not overflow.
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"sampling probability q must be in [0, 1], got {q}")
    orders = _as_orders(orders)
    rdp = np.asarray(rdp_of_order, dtype=np.float64)
    if rdp.shape != orders.shape:
        raise ValueError(f"rdp has shape {rdp.shape} but orders has shape {orders.shape}")
    if np.any(orders != np.round(orders)) or 2 not in orders:
        raise ValueError("the general Poisson bound needs integer orders >= 2 including 2")
    if np.any(np.isnan(rdp)) or np.any(rdp < 0):
        raise ValueError("an RDP curve must be non-negative and not NaN")
    if q == 0.0:
        return np.zeros_like(orders)

    sort = np.argsort(orders)
    sorted_orders, sorted_rdp = orders[sort], rdp[sort]
    every_order = np.arange(2, int(sorted_orders[-1]) + 1, dtype=np.float64)
    filled = sorted_rdp[np.searchsorted(sorted_orders, every_order)]  # eps(l) for l = 2..max
    log_q = math.log(q)

    def bound(alpha: float) -> float:
        if np.isinf(filled[: int(alpha) - 1]).any():
            return math.inf
        ls = np.arange(3, alpha + 1)
        log_terms = np.concatenate([
            [_times_log1m(alpha - 1, q) + math.log1p((alpha - 1) * q)],
            [_log_binom(alpha, 2) + 2 * log_q + _times_log1m(alpha - 2, q) + filled[0]],
            math.log(3) + _log_binom(alpha, ls) + _times_log1m(alpha - ls, q)
            + ls * log_q + (ls - 1) * filled[ls.astype(int) - 2],
        ])
        return float(logsumexp(log_terms)) / (alpha - 1)

    return np.array([bound(a) for a in orders])


def rdp_to_epsilon(orders, rdp, delta: float) -> tuple[float, float]:
    """Smallest epsilon (and its order) such that the RDP curve implies (epsilon, delta)-DP.

    The conversion of dp_accounting's RdpAccountant: Canonne, Kamath & Steinke 2020, Prop. 12
    (also Balle et al. 2020, Thm. 21), ``eps = rdp + log1p(-1/a) - (log(delta) + log(a))/(a-1)``,
    minimised over orders and clipped at 0; an order whose divergence is so small that
    ``delta >= sqrt(1 - e^{-rdp})`` (the KL / total-variation bound) gives epsilon 0, and orders
    ``a <= 1.01``, where the formula is unstable, give infinity.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    orders = _as_orders(orders)
    rdp = np.asarray(rdp, dtype=np.float64)
    if rdp.shape != orders.shape:
        raise ValueError(f"rdp has shape {rdp.shape} but orders has shape {orders.shape}")
    if np.any(np.isnan(rdp)) or np.any(rdp < 0):
        raise ValueError("an RDP curve must be non-negative and not NaN")
    with np.errstate(invalid="ignore"):
        eps = rdp + np.log1p(-1 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1)
    eps = np.where(orders > 1.01, eps, np.inf)
    eps = np.where(delta**2 + np.expm1(-rdp) > 0, 0.0, eps)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(orders[best])
