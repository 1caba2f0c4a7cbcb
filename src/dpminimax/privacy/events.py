"""Builders, validation and JSON (de)serialisation of dp_accounting DpEvents.

Algorithms only *build* events (immutable attrs data); :mod:`dpminimax.privacy.accounting`
interprets them. Noise parameters are noise multipliers: noise scale divided by sensitivity.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import attr
from dp_accounting import dp_event
from dp_accounting.dp_event import DpEvent


def gaussian(noise_multiplier: float) -> DpEvent:
    """Gaussian noise of std ``noise_multiplier`` times the l2-sensitivity."""
    return validate_event(dp_event.GaussianDpEvent(float(noise_multiplier)))


def laplace(scale: float) -> DpEvent:
    """Laplace noise of scale ``scale`` times the l1-sensitivity (pure ``1/scale``-DP)."""
    return validate_event(dp_event.LaplaceDpEvent(float(scale)))


def exponential_mechanism(noise_multiplier: float) -> DpEvent:
    """Report-noisy-min with Gumbel noise of scale ``noise_multiplier`` times the scores'
    sensitivity: the exponential mechanism with epsilon = 2 / noise_multiplier (McSherry &
    Talwar 2007), which is epsilon-bounded-range and so epsilon^2 / 8 = 1 / (2 m^2)-zCDP
    (Cesar & Rogers 2021, Lemma 3.2): the zCDP of a Gaussian with the same multiplier."""
    return validate_event(dp_event.ZCDpEvent(1.0 / (2.0 * float(noise_multiplier) ** 2)))


def non_private_event() -> DpEvent:
    """A release with no privacy guarantee (epsilon = inf)."""
    return dp_event.NonPrivateDpEvent()


def dpsgd_event(q: float, noise_multiplier: float, steps: int) -> DpEvent:
    """DP-SGD (Abadi et al. 2016, Alg. 1): ``steps`` Poisson(q)-sampled Gaussian releases."""
    return same_batch_event(q, [gaussian(noise_multiplier)], steps)


def same_batch_event(q: float, mechanisms: Sequence[DpEvent], steps: int) -> DpEvent:
    """``steps`` rounds of several releases computed from ONE Poisson(q) batch per round.

    The releases are composed INSIDE the sampling event,
    ``SelfComposed(PoissonSampled(q, Composed(mechanisms)), steps)``: whether an example is in
    the batch is the same random event for all of them.
    """
    _check(len(mechanisms) > 0, "same_batch_event needs at least one mechanism")
    inner = mechanisms[0] if len(mechanisms) == 1 else dp_event.ComposedDpEvent(list(mechanisms))
    return validate_event(
        dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(float(q), inner), steps)
    )


def separately_sampled_event(q: float, mechanisms: Sequence[DpEvent], steps: int) -> DpEvent:
    """Each mechanism on its OWN independent Poisson(q) batch, composed ``steps`` times.

    UNSOUND for releases computed from the same batch: it assumes independent sampling per
    release, which amplifies privacy more than a shared batch does, so it understates epsilon.
    It exists only so tests can show the gap; use :func:`same_batch_event` for same-batch
    releases.
    """
    return validate_event(dp_event.ComposedDpEvent([
        dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(float(q), m), steps)
        for m in mechanisms
    ]))


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def validate_event(event: DpEvent) -> DpEvent:
    """Check the parameters of ``event`` and of every sub-event; return ``event`` unchanged.

    Raises ValueError for a non-positive or NaN noise multiplier / Laplace scale, a sampling
    probability outside [0, 1] or a negative / non-integer composition count.
    """
    _check(isinstance(event, DpEvent), f"expected a DpEvent, got {type(event).__name__}")
    if isinstance(event, dp_event.GaussianDpEvent | dp_event.LaplaceDpEvent):
        _check(event.noise_multiplier > 0,
               f"{type(event).__name__} noise multiplier must be > 0, got "
               f"{event.noise_multiplier}")
    elif isinstance(event, dp_event.ZCDpEvent):
        _check(event.rho > 0 and event.xi >= 0,
               f"ZCDpEvent needs rho > 0 and xi >= 0, got rho {event.rho}, xi {event.xi}")
    elif isinstance(event, dp_event.PoissonSampledDpEvent):
        q = event.sampling_probability
        _check(0.0 <= q <= 1.0, f"sampling probability must be in [0, 1], got {q}")
    elif isinstance(event, dp_event.SelfComposedDpEvent):
        count = event.count
        _check(isinstance(count, numbers.Integral) and count >= 0,
               f"composition count must be an integer >= 0, got {count!r}")
    elif isinstance(event, dp_event.ComposedDpEvent):
        _check(isinstance(event.events, Sequence), "ComposedDpEvent.events must be a list")
    for sub in _sub_events(event):
        validate_event(sub)
    return event


def _sub_events(event: DpEvent) -> list[DpEvent]:
    subs: list[DpEvent] = []
    for field in attr.fields(type(event)):
        value = getattr(event, field.name)
        if isinstance(value, DpEvent):
            subs.append(value)
        elif isinstance(value, list | tuple):
            subs.extend(v for v in value if isinstance(v, DpEvent))
    return subs


def event_to_dict(event: DpEvent) -> dict[str, Any]:
    """JSON-serialisable dict ``{"type": <class name>, <field>: <value>, ...}``, recursively."""
    return {"type": type(event).__name__} | {
        field.name: _encode(getattr(event, field.name)) for field in attr.fields(type(event))
    }


def _encode(value: Any) -> Any:
    if isinstance(value, DpEvent):
        return event_to_dict(value)
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return value.item()
    return value


def event_from_dict(d: dict[str, Any]) -> DpEvent:
    """Inverse of :func:`event_to_dict`; only dp_accounting.dp_event classes are accepted."""
    cls = getattr(dp_event, str(d.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, DpEvent)):
        raise ValueError(f"unknown DpEvent type {d.get('type')!r}")
    return cls(**{k: _decode(v) for k, v in d.items() if k != "type"})


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and "type" in value:
        return event_from_dict(value)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value
