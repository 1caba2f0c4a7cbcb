"""The epsilon of a DpEvent, and the accounting record every run stores.

Route taken for ``epsilon(event, delta, accountant)``:

1. dp_accounting's ``RdpAccountant`` (orders :data:`RDP_ORDERS`; its subsampled-Gaussian curve
   vectorised, :mod:`dpminimax.privacy.rdp_gaussian`) or ``PLDAccountant`` when it supports
   the event. For the PLD accountant, Gaussian releases composed inside one Poisson
   sampling event are first replaced by the single equivalent Gaussian (exact; Mironov, Talwar &
   Zhang 2019, Sec. 3 -- the reduction RdpAccountant applies internally), because the PLD
   accountant only accepts a single mechanism inside ``PoissonSampledDpEvent``.
   The PLD grid is scaled to the epsilon (a rough pass sets it, :func:`pld_product.interval_for`)
   and the RDP orders are extended until the optimal order is inside them.
2. Otherwise, under add-or-remove-one, for events whose every mechanism has a dominating pair
   (Gaussian, Laplace: RaCO-DP's same-batch histogram + gradient), the tight PLD of the
   Poisson-subsampled product pair (:mod:`dpminimax.privacy.pld_product`), AND the general RDP
   bound of :mod:`dpminimax.privacy.rdp_general` (curves of releases on the same batch add up,
   the sum is Poisson-subsampled with Zhu & Wang 2019, Thm. 6, self-composition multiplies by
   the count). Both are sound; the smaller is reported, the record keeps both and its
   ``method`` says which one it is. Events with other mechanisms get the general bound only.
   This serves both accountant names.
3. Otherwise :class:`UnsupportedEventError` -- nothing is ever approximated silently.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.dp_event import DpEvent
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

from dpminimax.privacy import pld_product, rdp_general
from dpminimax.privacy.events import event_to_dict, validate_event
from dpminimax.privacy.rdp_gaussian import VectorizedRdpAccountant

ACCOUNTANTS = ("rdp", "pld")
NEIGHBORING_RELATIONS = {
    "add_or_remove_one": privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE,
    "replace_one": privacy_accountant.NeighboringRelation.REPLACE_ONE,
    "replace_special": privacy_accountant.NeighboringRelation.REPLACE_SPECIAL,
}
METHOD_DP_ACCOUNTING = "dp_accounting"
METHOD_RDP_GENERAL = "rdp_general_poisson_subsampled"
METHOD_PLD_PRODUCT = "pld_product_poisson_subsampled"

#: dp_accounting's default orders plus integer orders filling its gaps 63-128-256-...-1024
#: (steps of at most ~8%). Without them a small epsilon (optimal order ~100) comes out up to 2x
#: too large; any set of orders is sound since the conversion minimises over them. Where the
#: optimum is the largest order, :func:`_extended_orders` adds larger ones.
RDP_ORDERS: tuple[float, ...] = tuple(sorted(
    set(DEFAULT_RDP_ORDERS) | set(range(64, 128, 4)) | set(range(128, 256, 8))
    | set(range(256, 1024, 32))
))
#: The largest order the extension goes to (epsilon ~ log(1/delta)/order is then negligible).
MAX_RDP_ORDER = 2**17


def _extended_orders(orders, best: float) -> tuple[float, ...] | None:
    """``orders`` plus integer orders up to 4x the largest (steps of ~6%) if the optimum
    ``best`` is the largest order, else None (the optimum is inside the grid)."""
    top = max(orders)
    if best < top or top >= MAX_RDP_ORDER:
        return None
    more = np.unique(np.round(np.geomspace(top, min(4 * top, MAX_RDP_ORDER), 25)))
    return tuple(sorted(set(orders) | set(more.tolist())))


#: How many (event, delta, accountant, relation) answers :func:`_account` keeps. A job accounts
#: for each of its runs, and runs that differ only in seed or fairness weight share one event.
ACCOUNT_MEMO_SIZE = 4096
#: (epsilon, method, the sound epsilons computed by method, dp_accounting's warnings).
_Answer = tuple[float, str, dict[str, float], tuple[str, ...]]
_account_memo: OrderedDict[tuple[str, float, str, str], _Answer] = OrderedDict()


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
        orders: tuple[float, ...] | None = RDP_ORDERS
        while orders is not None:
            acc = VectorizedRdpAccountant(orders, relation)
            try:
                acc.compose(event)
            except privacy_accountant.UnsupportedEventError as err:
                return None, str(err)
            eps, best = acc.get_epsilon_and_optimal_order(delta)
            orders = _extended_orders(orders, best)
        return float(eps), ""
    if compositions(event) > MAX_PLD_COMPOSITIONS:
        raise ValueError(
            f"the PLD accountant would compose {compositions(event):.3g} mechanisms (at most "
            f"{MAX_PLD_COMPOSITIONS:.0e}: its discretised distribution would not fit in "
            "memory); use the rdp accountant")
    event = _merge_same_batch_gaussians(event)
    rough = PLDAccountant(relation, pld_product.COARSE_INTERVAL)
    try:
        rough.compose(event)
    except privacy_accountant.UnsupportedEventError as err:
        return None, str(err)
    interval = pld_product.interval_for(float(rough.get_epsilon(delta)))
    return float(PLDAccountant(relation, interval).compose(event).get_epsilon(delta)), ""


#: Beyond this many composed mechanisms the PLD's support outgrows memory (issue #24: 1e12
#: steps asked for terabytes); RDP's cost does not depend on the count.
MAX_PLD_COMPOSITIONS = 10**6


def compositions(event: DpEvent) -> int:
    """How many elementary mechanisms ``event`` composes (self-compositions multiplied out)."""
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return int(event.count) * compositions(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return sum(compositions(e) for e in event.events)
    if isinstance(event, (dp_event.PoissonSampledDpEvent, dp_event.SampledWithoutReplacementDpEvent,
                          dp_event.SampledWithReplacementDpEvent)):
        return compositions(event.event)
    return 1


def _general_rdp_epsilon(event: DpEvent, delta: float) -> float:
    """The general RDP bound's epsilon, orders extended until the optimum is inside them."""
    orders: tuple[float, ...] | None = tuple(rdp_general.DEFAULT_ORDERS)
    while orders is not None:
        eps, best = rdp_general.rdp_to_epsilon(orders, general_rdp_curve(event, orders), delta)
        orders = _extended_orders(orders, best)
    return eps


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
             neighboring: str) -> _Answer:
    """(epsilon, method, the sound epsilons computed by method) following the route in the
    module docstring, remembered per event.

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
    with _captured_warnings() as warnings:
        answer = _account_uncached(event, delta, accountant, neighboring)
    answer = (*answer, _summarize_warnings(warnings))
    _account_memo[key] = answer
    if len(_account_memo) > ACCOUNT_MEMO_SIZE:
        _account_memo.popitem(last=False)
    return answer


@contextlib.contextmanager
def _captured_warnings() -> Iterator[list[str]]:
    """Collect what dp_accounting logs through absl (e.g. "failed to converge ... Excluding
    this order", once per order) instead of letting it flood the job's log."""
    records: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("absl")
    handler, propagate, level = _Collect(level=logging.WARNING), logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        logger.setLevel(level)


def _summarize_warnings(messages: list[str]) -> tuple[str, ...]:
    """One line per kind of warning (numbers masked), with how often it occurred."""
    kinds = Counter(re.sub(r"\d+(\.\d+)?(e-?\d+)?", "#", m) for m in messages)
    return tuple(f"{kind} (x{count})" for kind, count in sorted(kinds.items()))


def _account_uncached(event: DpEvent, delta: float, accountant: str,
                      neighboring: str) -> tuple[float, str, dict[str, float]]:
    """(epsilon, method, candidates) computed: dp_accounting first, then the product PLD and
    the general RDP bound (the smaller of the two)."""
    eps, reason = _dp_accounting_epsilon(event, delta, accountant, neighboring)
    if eps is not None:
        return eps, METHOD_DP_ACCOUNTING, {}
    if neighboring != "add_or_remove_one":
        raise UnsupportedEventError(
            f"{type(event).__name__} is not supported by dp_accounting's {accountant} "
            f"accountant under {neighboring} ({reason}); the general Poisson bound only "
            f"covers add_or_remove_one"
        )
    candidates: dict[str, float] = {}
    try:
        candidates[METHOD_PLD_PRODUCT] = pld_product.event_epsilon(event, delta)
    except pld_product.NotAProductEvent:
        pass
    try:
        candidates[METHOD_RDP_GENERAL] = _general_rdp_epsilon(event, delta)
    except UnsupportedEventError as err:
        if not candidates:
            raise UnsupportedEventError(
                f"{err}; dp_accounting's {accountant} accountant refused it too: {reason}"
            ) from None
    method = min(candidates, key=candidates.__getitem__)
    return candidates[method], method, candidates


def epsilon(event: DpEvent, delta: float, accountant: str = "rdp",
            neighboring: str = "add_or_remove_one") -> float:
    """Epsilon such that ``event`` is (epsilon, delta)-DP; ``inf`` for a non-private release.
    Where several sound values are computed (route 2 of the module docstring), the smallest.

    ``accountant`` is ``"rdp"`` or ``"pld"``; ``neighboring`` is ``"add_or_remove_one"``,
    ``"replace_one"`` or ``"replace_special"``. Raises :class:`UnsupportedEventError` if the
    event cannot be accounted for and ValueError for invalid parameters.
    """
    return _account(event, delta, accountant, neighboring)[0]


def accounting_record(event: DpEvent, delta: float, accountant: str = "rdp",
                      neighboring: str = "add_or_remove_one") -> dict[str, Any]:
    """What a run stores in accounting.json: epsilon, delta, accountant, neighbouring relation,
    the method actually used (``"dp_accounting"``, ``"pld_product_poisson_subsampled"`` or
    ``"rdp_general_poisson_subsampled"``) and the event itself
    (:func:`~dpminimax.privacy.events.event_to_dict`). Where route 2 computed both the product
    PLD and the general RDP bound, ``epsilon_pld_product`` and ``epsilon_rdp_general`` keep both
    (``epsilon`` is the smaller)."""
    eps, method, candidates, warnings = _account(event, delta, accountant, neighboring)
    names = {METHOD_PLD_PRODUCT: "epsilon_pld_product", METHOD_RDP_GENERAL: "epsilon_rdp_general"}
    return {
        "epsilon": eps,
        "delta": delta,
        "accountant": accountant,
        "neighboring_relation": neighboring,
        "method": method,
        "event": event_to_dict(event),
        # the epsilon is an accountant's bound on this event: the guarantee holds as far as the
        # event describes the mechanism (a paper theorem's record says where it does not)
        "guarantee_covered": True,
    } | {names[m]: value for m, value in candidates.items()} | (
        {"accountant_warnings": list(warnings)} if warnings else {})
