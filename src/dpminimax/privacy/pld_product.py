"""Tight accounting of several releases computed from ONE Poisson batch: the PLD of the
Poisson-subsampled *product* dominating pair.

A step releasing Gaussian sums (noise multipliers ``s_i``) and Laplace sums (scales ``b_j``, l1
sensitivity 1) from one batch is dominated, per neighbouring pair, by the product pair

    P = N(1, s^2) x prod_j Lap(1, b_j),    Q = N(0, s^2) x prod_j Lap(0, b_j),

with ``s = (sum_i s_i^-2)^(-1/2)`` (Gaussians on the same data merge exactly; the tensor product
of trade-off functions is monotone in each factor, Dong, Roth & Su 2022, "Gaussian differential
privacy", Sec. 3, so the product of dominating pairs dominates). Poisson(q) subsampling is
dominated by ``(qP + (1-q)Q, Q)`` for removal and ``(Q, qP + (1-q)Q)`` for addition (Zhu, Dong &
Wang 2022, "Optimal accounting of differential privacy via characteristic function", the
Poisson-subsampling theorem for dominating pairs).

Construction (all steps pessimistic, so the epsilon is never below the truth):

1. The Laplace pairs are replaced by dp_accounting's pessimistic connect-the-dots discretisation
   (Doroshenko et al. 2022, Alg. 1), composed with dp_accounting: a discrete pair
   ``(P', Q')`` that dominates their product (its hockey-stick curve is above the true one at
   every epsilon), with atoms ``l_k`` and P'-masses ``w_k``. Its grid is ``mu / LAPLACE_PER_SD``
   (the Gaussian smooths finer detail away), which keeps one step's PLD cheap.
2. The hockey-stick divergence of ``P'' = N(1, s^2) x P'`` against ``Q'' = N(0, s^2) x Q'`` is
   exactly ``D(t) = sum_k w_k delta_N(t - l_k)`` (``delta_N`` the Gaussian curve; the terms are
   non-negative, so there is no cancellation), and that of the reverse pair is
   ``R(t) = sum_k w_k e^(-l_k) delta_N(t + l_k)``.
3. The subsampled curves follow in closed form from them: removal
   ``delta(eps) = q D(log((e^eps - 1 + q) / q))``, addition
   ``delta(eps) = r R(log(q e^eps / r))`` with ``r = 1 - (1-q) e^eps`` (see
   :func:`_subsampled_deltas`); they are evaluated on a grid of spacing ``h`` and turned into a
   PLD with dp_accounting's pessimistic connect-the-dots (the mass above the grid goes to
   +infinity). Connect-the-dots applied to exact (or larger) curve values is pessimistic at
   every epsilon, on and off the grid, and so stays under composition.
4. dp_accounting composes the two PLDs (FFT, pessimistic tail truncation) and converts to
   (epsilon, delta), taking the worse of the two directions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from dp_accounting import dp_event
from dp_accounting.dp_event import DpEvent
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy.special import log_ndtr, ndtr

#: Gaussian tails beyond this many standard deviations of the privacy loss are left to the
#: +infinity mass (removal) or rounded onto the grid's end (both pessimistic); Phi(-10) ~ 8e-24.
TAIL_SDS = 10.0
#: The removal grid ends where its hockey-stick curve is below this (the rest: +infinity mass).
TAIL_DELTA = 1e-20
#: Laplace-part loss grid per standard deviation of the Gaussian privacy loss.
LAPLACE_PER_SD = 100
#: At least this many atoms over the Laplace part's loss range [-sum 1/b, sum 1/b].
MIN_LAPLACE_ATOMS = 20
#: Grid of the rough first pass, and the bounds / relative size of the final grid
#: (:func:`interval_for`); a coarser grid only makes epsilon larger (pessimistic).
COARSE_INTERVAL = 1e-3
MAX_INTERVAL = 1e-4
MIN_INTERVAL = 1e-4 / 2**7
RELATIVE_INTERVAL = 1 / 2000
#: Largest number of epsilon grid points of one step's PLD; a finer interval is coarsened.
MAX_GRID_POINTS = 50_000


def _gaussian_delta(mu: float, s: np.ndarray) -> np.ndarray:
    """Hockey-stick divergence ``H_{e^s}(N(mu, 1) || N(0, 1))`` at ``s`` (elementwise)."""
    s = np.asarray(s, dtype=np.float64)
    if mu == 0.0:
        return np.maximum(0.0, -np.expm1(s))
    with np.errstate(over="ignore"):
        first = ndtr(-s / mu + mu / 2)
        second = np.exp(s + log_ndtr(-s / mu - mu / 2))
    return np.clip(first - second, 0.0, 1.0)


def _laplace_atoms(scales: tuple[float, ...],
                   interval: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(loss atoms, P'-masses, +infinity mass) of the pessimistic discretisation, on the loss
    grid ``interval``, of the product of the Laplace pairs ``(Lap(1, b), Lap(0, b))``; a single
    atom 0 when there is none."""
    if not scales:
        return np.zeros(1), np.ones(1), 0.0
    pld = None
    for b in scales:
        one = pld_lib.from_laplace_mechanism(b, value_discretization_interval=interval)
        pld = one if pld is None else pld.compose(one, tail_mass_truncation=0.0)
    pmf = pld._pmf_remove.to_dense_pmf()  # noqa: SLF001 -- dp_accounting has no public getter
    atoms = (pmf._lower_loss + np.arange(pmf.size)) * pmf._discretization  # noqa: SLF001
    probs = np.asarray(pmf._probs, dtype=np.float64)  # noqa: SLF001
    keep = probs > 0
    return atoms[keep], probs[keep], float(pmf._infinity_mass)  # noqa: SLF001


class ProductPair:
    """The dominating pair ``(P'', Q'')`` of one step's same-batch releases (module docstring,
    steps 1-2): Gaussian privacy-loss scale ``mu = 1/s`` and the discretised Laplace atoms.

    The Laplace part is discretised with ``mu / LAPLACE_PER_SD`` (the Gaussian smooths finer
    detail away), or, without a Gaussian, with ``laplace_interval``; both at least as fine as
    ``2 sum(1/b) / MIN_LAPLACE_ATOMS``.
    """

    def __init__(self, gaussian_multipliers: Sequence[float], laplace_scales: Sequence[float],
                 laplace_interval: float):
        if any(not s > 0 for s in gaussian_multipliers) or any(
                not b > 0 for b in laplace_scales):
            raise ValueError("noise multipliers and Laplace scales must be > 0")
        self.mu = math.sqrt(math.fsum(s**-2 for s in gaussian_multipliers))
        width = 2.0 * math.fsum(1.0 / b for b in laplace_scales)
        interval = self.mu / LAPLACE_PER_SD if self.mu > 0 else laplace_interval
        interval = min(interval, width / MIN_LAPLACE_ATOMS) if width > 0 else interval
        self.atoms, self.weights, self.infinity_mass = _laplace_atoms(
            tuple(laplace_scales), interval)
        #: Q'-masses of the atoms (the same dominating pair seen from the other side)
        self.weights_q = self.weights * np.exp(-self.atoms)
        #: Q'-only mass (loss -infinity), counted at least as large as the P'-only mass
        self.reverse_infinity_mass = max(self.infinity_mass, 1.0 - math.fsum(self.weights_q))
        if self.mu == 0:  # tails sum_{l_k > t} of both masses, for the exact step-function sums
            self._tail_p = np.append(np.cumsum(self.weights[::-1])[::-1], 0.0)
            self._tail_q = np.append(np.cumsum(self.weights_q[::-1])[::-1], 0.0)

    def loss_range(self) -> tuple[float, float]:
        """An interval holding the un-subsampled privacy loss up to Gaussian tails of TAIL_SDS."""
        spread = self.mu**2 / 2 + TAIL_SDS * self.mu
        return float(self.atoms.min() - spread), float(self.atoms.max() + spread)

    def delta(self, t: np.ndarray) -> np.ndarray:
        """``H_{e^t}(P'' || Q'')`` at each ``t``."""
        t = np.asarray(t, dtype=np.float64)
        if self.mu == 0:  # P'(L > t) - e^t Q'(L > t)
            above = np.searchsorted(self.atoms, t, side="right")
            out = self._tail_p[above] - np.exp(t) * self._tail_q[above]
            return np.clip(out + self.infinity_mass, 0.0, 1.0)
        out = np.full(t.shape, self.infinity_mass)
        for chunk in _chunks(t.size):
            out[chunk] += _gaussian_delta(self.mu, t[chunk, None] - self.atoms) @ self.weights
        return np.minimum(out, 1.0)

    def delta_reverse(self, t: np.ndarray) -> np.ndarray:
        """``H_{e^t}(Q'' || P'')`` at each ``t``; Q'-only mass counts fully."""
        t = np.asarray(t, dtype=np.float64)
        if self.mu == 0:  # Q'(L < -t) - e^t P'(L < -t)
            below = np.searchsorted(self.atoms, -t, side="left")
            out = ((self._tail_q[0] - self._tail_q[below])
                   - np.exp(t) * (self._tail_p[0] - self._tail_p[below]))
            return np.clip(out + self.reverse_infinity_mass, 0.0, 1.0)
        out = np.full(t.shape, self.reverse_infinity_mass)
        for chunk in _chunks(t.size):
            out[chunk] += _gaussian_delta(self.mu, t[chunk, None] + self.atoms) @ self.weights_q
        return np.minimum(out, 1.0)


def _chunks(n: int, size: int = 4096):
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def _subsampled_deltas(pair: ProductPair, q: float, eps: np.ndarray,
                       direction: str) -> np.ndarray:
    """Hockey-stick curve of the Poisson(q)-subsampled pair at ``eps`` (increasing).

    Removal, pair ``(qP + (1-q)Q, Q)``: ``1 - e^eps`` for ``eps <= log(1-q)``, else
    ``q H_{e^t}(P||Q)`` with ``e^t = (e^eps - 1 + q) / q``. Addition, pair
    ``(Q, qP + (1-q)Q)``: ``0`` for ``eps >= -log(1-q)``, else ``(1 - (1-q) e^eps) H_{e^u}(Q||P)``
    with ``e^u = q e^eps / (1 - (1-q) e^eps)`` (expand the hockey-stick divergence of the
    mixture).
    """
    eps = np.asarray(eps, dtype=np.float64)
    out = np.zeros_like(eps)
    if direction == "remove":
        low = eps <= (math.log1p(-q) if q < 1 else -math.inf)
        out[low] = -np.expm1(eps[low])
        e = eps[~low]
        t = np.log(np.expm1(e) + q) - math.log(q)
        out[~low] = q * pair.delta(t)
    else:
        active = eps < (-math.log1p(-q) if q < 1 else math.inf)
        e = eps[active]
        rest = -np.expm1(e) + q * np.exp(e)   # 1 - (1-q) e^eps > 0
        u = math.log(q) + e - np.log(rest)
        out[active] = rest * pair.delta_reverse(u)
    out = np.clip(out, 0.0, 1.0)
    return np.maximum.accumulate(out[::-1])[::-1]  # monotone, rounding only upwards


def _grid(lo: float, hi: float, interval: float) -> tuple[int, int]:
    lower, upper = math.floor(lo / interval), math.ceil(hi / interval)
    return lower, max(upper, lower + 1)


def _remove_upper_end(pair: ProductPair, q: float, lo: float, hi: float) -> float:
    """Where the removal curve has fallen to TAIL_DELTA (the rest is +infinity mass)."""
    eps = np.linspace(lo, hi, 257)
    deltas = _subsampled_deltas(pair, q, eps, "remove")
    below = np.nonzero(deltas <= TAIL_DELTA)[0]
    return float(eps[below[0]]) if below.size else hi


def _f(q: float, loss: float) -> float:
    """The subsampled loss ``log(q e^L + 1 - q)`` of an un-subsampled loss ``L``."""
    if q == 1.0:
        return loss
    return float(np.logaddexp(math.log(q) + loss, math.log1p(-q)))


@functools.lru_cache(maxsize=256)
def _pair(gaussians: tuple[float, ...], laplaces: tuple[float, ...],
          laplace_interval: float) -> ProductPair:
    return ProductPair(gaussians, laplaces, laplace_interval)


@functools.lru_cache(maxsize=256)
def subsampled_pld(q: float, gaussians: tuple[float, ...], laplaces: tuple[float, ...],
                   interval: float) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD (both directions) of one Poisson(q) step releasing Gaussian sums with
    noise multipliers ``gaussians`` and Laplace sums with scales ``laplaces`` from one batch,
    on the loss grid ``interval`` (coarsened so one direction has at most MAX_GRID_POINTS)."""
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling probability must be in (0, 1], got {q}")
    if not gaussians and not laplaces:
        return pld_lib.identity(interval)
    pair = _pair(tuple(gaussians), tuple(laplaces), interval / 4)
    lo, hi = pair.loss_range()
    remove_hi = _remove_upper_end(pair, q, _f(q, lo), _f(q, hi))
    ranges = {"remove": (_f(q, lo), remove_hi), "add": (-_f(q, hi), -_f(q, lo))}
    width = max(b - a for a, b in ranges.values())
    interval = max(interval, width / MAX_GRID_POINTS)
    pmfs = {}
    for direction, (a, b) in ranges.items():
        lower, upper = _grid(a, b, interval)
        eps = np.arange(lower, upper + 1) * interval
        deltas = _subsampled_deltas(pair, q, eps, direction)
        pmfs[direction] = pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(
            interval, lower, upper, deltas)
    return pld_lib.PrivacyLossDistribution(pmfs["remove"], pmfs["add"])


def interval_for(epsilon_estimate: float) -> float:
    """Loss-grid interval for an epsilon of about ``epsilon_estimate``: MAX_INTERVAL halved until
    it is at most ``epsilon_estimate * RELATIVE_INTERVAL`` (or MIN_INTERVAL). Powers of two, so
    the events of one calibration share a few per-step PLDs."""
    interval = MAX_INTERVAL
    while interval > epsilon_estimate * RELATIVE_INTERVAL and interval / 2 >= MIN_INTERVAL:
        interval /= 2
    return interval


def epsilon(q: float, gaussians: Sequence[float], laplaces: Sequence[float], steps: int,
            delta: float, interval: float) -> float:
    """Epsilon of ``steps`` Poisson(q) rounds of the same-batch releases (add-or-remove-one)."""
    pld = subsampled_pld(float(q), tuple(map(float, gaussians)), tuple(map(float, laplaces)),
                         float(interval))
    if steps == 0:
        return 0.0
    return float(pld.self_compose(int(steps)).get_epsilon_for_delta(delta))


class NotAProductEvent(ValueError):
    """The event has a mechanism without a dominating pair implemented here."""


def _same_batch_mechanisms(event: DpEvent) -> tuple[list[float], list[float]]:
    """(Gaussian noise multipliers, Laplace scales) of releases on one batch."""
    if isinstance(event, dp_event.GaussianDpEvent):
        return [event.noise_multiplier], []
    if isinstance(event, dp_event.LaplaceDpEvent):
        return [], [event.noise_multiplier]
    if isinstance(event, dp_event.NoOpDpEvent):
        return [], []
    if isinstance(event, dp_event.ComposedDpEvent):
        parts = [_same_batch_mechanisms(e) for e in event.events]
        return [s for g, _ in parts for s in g], [b for _, lap in parts for b in lap]
    if isinstance(event, dp_event.SelfComposedDpEvent):
        gaussians, laplaces = _same_batch_mechanisms(event.event)
        return gaussians * event.count, laplaces * event.count
    raise NotAProductEvent(f"no dominating pair for {type(event).__name__}")


def event_pld(event: DpEvent, interval: float) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD (add-or-remove-one) of a tree of Gaussian / Laplace releases, Poisson
    sampling (the releases inside one sampling event share the batch) and composition."""
    if isinstance(event, dp_event.PoissonSampledDpEvent | dp_event.GaussianDpEvent
                  | dp_event.LaplaceDpEvent):
        q, inner = ((event.sampling_probability, event.event)
                    if isinstance(event, dp_event.PoissonSampledDpEvent) else (1.0, event))
        gaussians, laplaces = _same_batch_mechanisms(inner)
        if q == 0 or not (gaussians or laplaces):
            return pld_lib.identity(interval)
        return subsampled_pld(float(q), tuple(sorted(map(float, gaussians))),
                              tuple(sorted(map(float, laplaces))), float(interval))
    if isinstance(event, dp_event.NoOpDpEvent):
        return pld_lib.identity(interval)
    if isinstance(event, dp_event.ComposedDpEvent):
        pld = pld_lib.identity(interval)
        for sub in event.events:
            pld = pld.compose(event_pld(sub, interval))
        return pld
    if isinstance(event, dp_event.SelfComposedDpEvent):
        if event.count == 0:
            return pld_lib.identity(interval)
        return event_pld(event.event, interval).self_compose(int(event.count))
    raise NotAProductEvent(f"no dominating pair for {type(event).__name__}")


def event_epsilon(event: DpEvent, delta: float, interval: float | None = None) -> float:
    """Epsilon of ``event`` (see :func:`event_pld`) at ``delta``; without ``interval``, a rough
    pass on COARSE_INTERVAL sets the final grid with :func:`interval_for`."""
    if interval is None:
        rough = float(event_pld(event, COARSE_INTERVAL).get_epsilon_for_delta(delta))
        interval = interval_for(rough)
    return float(event_pld(event, interval).get_epsilon_for_delta(delta))
