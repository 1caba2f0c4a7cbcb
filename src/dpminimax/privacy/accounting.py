"""The epsilon of a DpEvent, and the accounting record every run stores.

Route taken for ``epsilon(event, delta, accountant)``:

1. dp_accounting's ``RdpAccountant`` (orders :data:`RDP_ORDERS`) or ``PLDAccountant`` when it
   supports the event. For the PLD accountant, Gaussian releases composed inside one Poisson
   sampling event are first replaced by the single equivalent Gaussian (exact; Mironov, Talwar &
   Zhang 2019, Sec. 3 -- the reduction RdpAccountant applies internally), because the PLD
   accountant only accepts a single mechanism inside ``PoissonSampledDpEvent``.
2. Otherwise, under add-or-remove-one, the sound general RDP bound of
   :mod:`dpminimax.privacy.rdp_general`: curves of releases on the same batch add up, the sum is
   Poisson-subsampled with Zhu & Wang 2019, Thm. 6, self-composition multiplies by the count
   (this serves both accountant names; the record's ``method`` says so).
3. Otherwise :class:`UnsupportedEventError` -- nothing is ever approximated silently.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.dp_event import DpEvent
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

from dpminimax.privacy import rdp_general
from dpminimax.privacy.events import event_to_dict, validate_event

ACCOUNTANTS = ("rdp", "pld")
NEIGHBORING_RELATIONS = {
    "add_or_remove_one": privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE,
    "replace_one": privacy_accountant.NeighboringRelation.REPLACE_ONE,
    "replace_special": privacy_accountant.NeighboringRelation.REPLACE_SPECIAL,
}
METHOD_DP_ACCOUNTING = "dp_accounting"
METHOD_RDP_GENERAL = "rdp_general_poisson_subsampled"

#: dp_accounting's default orders plus integer orders filling its gaps 63-128-256-...-1024.
#: Without them a small epsilon (optimal order ~100) comes out up to 2x too large; any set of
#: orders is sound since the conversion minimises over them.
RDP_ORDERS: tuple[float, ...] = tuple(sorted(
    set(DEFAULT_RDP_ORDERS) | set(range(64, 128, 8)) | set(range(160, 256, 32))
    | {320, 384, 448, 640, 768, 896}
))


#: How many (event, delta, accountant, relation) answers :func:`_account` keeps. A job accounts
#: for each of its runs, and runs that differ only in seed or fairness weight share one event.
ACCOUNT_MEMO_SIZE = 4096
_account_memo: OrderedDict[tuple[str, float, str, str], tuple[float, str]] = OrderedDict()


class UnsupportedEventError(ValueError):
    """Neither dp_accounting nor our general bound can account for this event."""


def _validate_arguments(delta: float, accountant: str, neighboring: str) -> None:
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    if neighboring not in NEIGHBORING_RELATIONS:
        raise ValueError(
            f"neighboring must be one of {tuple(NEIGHBORING_RELATIONS)}, got {neighboring!r}"
        )


def _effective_gaussian(event: DpEvent) -> float | None:
    """Noise multiplier of the single Gaussian equivalent to a same-data Gaussian composition.

    Composed Gaussians with multipliers s_i on the same data equal one Gaussian with
    ``(sum s_i^-2)^(-1/2)``; k-fold self-composition gives ``s / sqrt(k)``. None if ``event``
    is not a non-empty composition of Gaussians only.
    """
    if isinstance(event, dp_event.GaussianDpEvent):
        return event.noise_multiplier
    if isinstance(event, dp_event.ComposedDpEvent) and event.events:
        sigmas = [_effective_gaussian(e) for e in event.events]
        if None in sigmas:
            return None
        return math.fsum(s**-2 for s in sigmas) ** -0.5
    if isinstance(event, dp_event.SelfComposedDpEvent) and event.count >= 1:
        sigma = _effective_gaussian(event.event)
        return None if sigma is None else sigma / math.sqrt(event.count)
    return None


def _merge_same_batch_gaussians(event: DpEvent) -> DpEvent:
    """Replace ``PoissonSampled(q, <Gaussians>)`` by ``PoissonSampled(q, Gaussian(s_eff))``."""
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        sigma = _effective_gaussian(event.event)
        if sigma is None:
            return event
        return dp_event.PoissonSampledDpEvent(
            event.sampling_probability, dp_event.GaussianDpEvent(sigma)
        )
    if isinstance(event, dp_event.ComposedDpEvent):
        return dp_event.ComposedDpEvent([_merge_same_batch_gaussians(e) for e in event.events])
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return dp_event.SelfComposedDpEvent(_merge_same_batch_gaussians(event.event), event.count)
    return event


def _dp_accounting_epsilon(event: DpEvent, delta: float, accountant: str,
                           neighboring: str) -> tuple[float | None, str]:
    """(epsilon, "") from dp_accounting, or (None, its reason) if it does not support the event."""
    relation = NEIGHBORING_RELATIONS[neighboring]
    if accountant == "rdp":
        acc: privacy_accountant.PrivacyAccountant = RdpAccountant(RDP_ORDERS, relation)
    else:
        acc = PLDAccountant(relation)
        event = _merge_same_batch_gaussians(event)
    try:
        acc.compose(event)
    except privacy_accountant.UnsupportedEventError as err:
        return None, str(err)
    return float(acc.get_epsilon(delta)), ""


def general_rdp_curve(event: DpEvent, orders=rdp_general.DEFAULT_ORDERS) -> np.ndarray:
    """Sound RDP curve (add-or-remove-one) of a tree of Gaussian / Laplace / Poisson-sampled /
    composed events, at integer ``orders`` (see :mod:`dpminimax.privacy.rdp_general`)."""
    orders = np.asarray(orders, dtype=np.float64)
    if isinstance(event, dp_event.NoOpDpEvent):
        return np.zeros_like(orders)
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return np.full_like(orders, np.inf)
    if isinstance(event, dp_event.GaussianDpEvent):
        return rdp_general.gaussian_rdp(event.noise_multiplier, orders)
    if isinstance(event, dp_event.LaplaceDpEvent):
        return rdp_general.laplace_rdp(event.noise_multiplier, orders)
    if isinstance(event, dp_event.ComposedDpEvent):
        return sum((general_rdp_curve(e, orders) for e in event.events), np.zeros_like(orders))
    if isinstance(event, dp_event.SelfComposedDpEvent):
        if event.count == 0:
            return np.zeros_like(orders)
        return event.count * general_rdp_curve(event.event, orders)
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return rdp_general.poisson_subsampled_rdp(
            event.sampling_probability, general_rdp_curve(event.event, orders), orders
        )
    raise UnsupportedEventError(
        f"the general RDP bound cannot interpret {type(event).__name__}"
    )


def _account(event: DpEvent, delta: float, accountant: str,
             neighboring: str) -> tuple[float, str]:
    """(epsilon, method) following the route in the module docstring, remembered per event.

    The key is the event's ``repr`` (attrs: every field, floats to all their digits) with the
    other arguments, so only an identical question is answered from memory. Errors are not
    remembered.
    """
    _validate_arguments(delta, accountant, neighboring)
    validate_event(event)
    key = (repr(event), float(delta), accountant, neighboring)
    if key in _account_memo:
        _account_memo.move_to_end(key)
        return _account_memo[key]
    answer = _account_uncached(event, delta, accountant, neighboring)
    _account_memo[key] = answer
    if len(_account_memo) > ACCOUNT_MEMO_SIZE:
        _account_memo.popitem(last=False)
    return answer


def _account_uncached(event: DpEvent, delta: float, accountant: str,
                      neighboring: str) -> tuple[float, str]:
    """(epsilon, method) computed: dp_accounting first, then the general RDP bound."""
    eps, reason = _dp_accounting_epsilon(event, delta, accountant, neighboring)
    if eps is not None:
        return eps, METHOD_DP_ACCOUNTING
    if neighboring != "add_or_remove_one":
        raise UnsupportedEventError(
            f"{type(event).__name__} is not supported by dp_accounting's {accountant} "
            f"accountant under {neighboring} ({reason}); the general Poisson bound only "
            f"covers add_or_remove_one"
        )
    try:
        curve = general_rdp_curve(event)
    except UnsupportedEventError as err:
        raise UnsupportedEventError(
            f"{err}; dp_accounting's {accountant} accountant refused it too: {reason}"
        ) from None
    eps, _ = rdp_general.rdp_to_epsilon(rdp_general.DEFAULT_ORDERS, curve, delta)
    return eps, METHOD_RDP_GENERAL


def epsilon(event: DpEvent, delta: float, accountant: str = "rdp",
            neighboring: str = "add_or_remove_one") -> float:
    """Epsilon such that ``event`` is (epsilon, delta)-DP; ``inf`` for a non-private release.

    ``accountant`` is ``"rdp"`` or ``"pld"``; ``neighboring`` is ``"add_or_remove_one"``,
    ``"replace_one"`` or ``"replace_special"``. Raises :class:`UnsupportedEventError` if the
    event cannot be accounted for and ValueError for invalid parameters.
    """
    return _account(event, delta, accountant, neighboring)[0]


def accounting_record(event: DpEvent, delta: float, accountant: str = "rdp",
                      neighboring: str = "add_or_remove_one") -> dict[str, Any]:
    """What a run stores in accounting.json: epsilon, delta, accountant, neighbouring relation,
    the method actually used (``"dp_accounting"`` or ``"rdp_general_poisson_subsampled"``) and
    the event itself (:func:`~dpminimax.privacy.events.event_to_dict`)."""
    eps, method = _account(event, delta, accountant, neighboring)
    return {
        "epsilon": eps,
        "delta": delta,
        "accountant": accountant,
        "neighboring_relation": neighboring,
        "method": method,
        "event": event_to_dict(event),
    }
