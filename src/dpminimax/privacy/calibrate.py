"""Solve for one scalar (a noise multiplier or a step count) meeting an (epsilon, delta) target.

All searches run dp_accounting's ``calibrate_dp_mechanism`` (Brent's method with a guarantee
that the returned parameter is on the private side) over a minimal ``PrivacyAccountant`` that
evaluates :func:`dpminimax.privacy.accounting.epsilon`, so calibration and accounting can never
disagree, events only our own accountants handle (product PLD, general RDP bound) included. The
result is then re-checked with :func:`epsilon` and moved onto the private side if the bisection
tolerance left it outside. Every method's plan calibrates through
:func:`calibrate_release_parameter`, stating only how its release tree depends on the parameter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from dp_accounting import mechanism_calibration, privacy_accountant
from dp_accounting.dp_event import DpEvent

from dpminimax.privacy import accounting
from dpminimax.privacy.events import dpsgd_event
from dpminimax.privacy.release import Part, plan_event

_MAX_DOUBLINGS = 40


class _EpsilonAccountant(privacy_accountant.PrivacyAccountant):
    """Ledger-only accountant whose epsilon is ``epsilon_of(ledger, delta)``."""

    def __init__(self, neighboring: str, epsilon_of: Callable[[DpEvent, float], float]):
        super().__init__(accounting.NEIGHBORING_RELATIONS[neighboring])
        self._epsilon_of = epsilon_of

    def _maybe_compose(self, event: DpEvent, count: int, do_compose: bool) -> None:
        return None  # support is decided (and errors raised) by epsilon() in get_epsilon

    def get_epsilon(self, target_delta: float) -> float:
        return self._epsilon_of(self.ledger, target_delta)


def _noise_bracket(gap: Callable[[float], float]) -> tuple[float, float]:
    """(lo, hi) with gap(lo) > 0 >= gap(hi) for a gap decreasing in a positive noise scale."""
    lo, hi = 0.5, 1.0
    for _ in range(_MAX_DOUBLINGS):
        if gap(hi) > 0:
            lo, hi = hi, 2 * hi
        elif gap(lo) <= 0:
            lo, hi = lo / 2, lo
        else:
            return lo, hi
    raise ValueError(
        f"no noise scale in [{lo:g}, {hi:g}] brackets the target epsilon; the target is "
        f"unreachable or met without noise"
    )


def calibrate_event_parameter(
    make_event: Callable[[float], DpEvent],
    epsilon: float,
    delta: float,
    accountant: str = "rdp",
    *,
    bracket: tuple[float, float] | None = None,
    discrete: bool = False,
    tol: float | None = None,
    neighboring: str = "add_or_remove_one",
) -> float:
    """The best parameter ``x`` such that ``make_event(x)`` is (epsilon, delta)-DP.

    Epsilon must be monotone in ``x``. ``bracket=(a, b)`` must have the target between the
    epsilons at ``a`` and ``b``; the answer lies on the private side (the end where epsilon is
    <= target) within ``tol``. Without a bracket, ``x`` is taken to be a noise scale (epsilon
    decreasing in ``x > 0``) and one is found by doubling / halving from [0.5, 1]; the smallest
    private noise scale is returned. ``discrete=True`` searches integers and returns the exact
    boundary: private at ``x``, not private one step further towards the non-private end.
    """
    if not epsilon > 0:
        raise ValueError(f"target epsilon must be > 0, got {epsilon}")

    def epsilon_of(event: DpEvent, target_delta: float) -> float:  # remembered by accounting
        return accounting.epsilon(event, target_delta, accountant, neighboring)

    def gap(x: float) -> float:
        return epsilon_of(make_event(round(x) if discrete else x), delta) - epsilon

    lo, hi = sorted(bracket) if bracket is not None else _noise_bracket(gap)
    gap_lo, gap_hi = gap(lo), gap(hi)
    if (gap_lo > 0) == (gap_hi > 0):
        raise ValueError(
            f"bracket ({lo}, {hi}) does not bracket target epsilon {epsilon}: "
            f"epsilons are {gap_lo + epsilon} and {gap_hi + epsilon}"
        )
    private_end, toward_private = (hi, 1.0) if gap_hi <= 0 else (lo, -1.0)
    x = mechanism_calibration.calibrate_dp_mechanism(
        lambda: _EpsilonAccountant(neighboring, epsilon_of),
        make_event,
        epsilon,
        delta,
        mechanism_calibration.ExplicitBracketInterval(lo, hi),
        discrete=discrete,
        tol=tol,
    )
    step = 1.0 if discrete else (tol or 1e-6)
    while gap(x) > 0:  # guarantee: never return a parameter outside the budget
        x = min(x + step, private_end) if toward_private > 0 else max(x - step, private_end)
        if not discrete:
            step *= 2
    if discrete:
        while (lo <= x - toward_private <= hi) and gap(x - toward_private) <= 0:
            x -= toward_private
    return int(x) if discrete else float(x)


def calibrate_release_parameter(
    make_tree: Callable[[float], Part],
    epsilon: float,
    delta: float,
    accountant: str = "rdp",
    **search,
) -> float:
    """The one calibration every method's plan calls: the parameter ``x`` (a noise multiplier,
    a noise scale, a step count) with which the release tree ``make_tree(x)`` -- built by the
    method's own release-tree builder, so the method states only how its releases depend on
    ``x`` -- is (epsilon, delta)-DP under ``accountant``: :func:`calibrate_event_parameter`
    of its :func:`~dpminimax.privacy.release.plan_event` (``search``: its ``bracket``,
    ``discrete``, ``tol``; without a bracket ``x`` is a noise scale)."""
    return calibrate_event_parameter(lambda x: plan_event(make_tree(x)), epsilon, delta,
                                     accountant, **search)


@functools.lru_cache(maxsize=1024)
def calibrate_noise_multiplier(q: float, steps: int, epsilon: float, delta: float,
                               accountant: str = "rdp") -> float:
    """Smallest DP-SGD noise multiplier (to within 1e-6) with epsilon <= target."""
    return calibrate_event_parameter(
        lambda sigma: dpsgd_event(q, sigma, steps), epsilon, delta, accountant
    )


def calibrate_steps(q: float, noise_multiplier: float, epsilon: float, delta: float,
                    accountant: str = "rdp", max_steps: int = 10**7) -> int:
    """Largest T <= max_steps such that T DP-SGD steps are (epsilon, delta)-DP.

    Raises ValueError if even one step exceeds the target.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    one_step = _dpsgd_epsilon(q, noise_multiplier, 1, delta, accountant)
    if one_step > epsilon:
        raise ValueError(
            f"a single step already has epsilon {one_step:.4g} > target {epsilon} "
            f"(q={q}, noise_multiplier={noise_multiplier}, delta={delta})"
        )
    if _dpsgd_epsilon(q, noise_multiplier, max_steps, delta, accountant) <= epsilon:
        return max_steps
    return calibrate_event_parameter(
        lambda t: dpsgd_event(q, noise_multiplier, int(t)), epsilon, delta, accountant,
        bracket=(1, max_steps), discrete=True,
    )


def _dpsgd_epsilon(q: float, noise_multiplier: float, steps: int, delta: float,
                   accountant: str) -> float:
    return accounting.epsilon(dpsgd_event(q, noise_multiplier, steps), delta, accountant)
