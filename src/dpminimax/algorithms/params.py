"""What a method's parameter values must be, declared once beside its defaults (issue #24) and
checked whenever parameters are resolved: when the workflow builds its DAG, before any job.

A method maps parameter names to a :class:`Check`; a swept value (a list) is checked element by
element. The error names the method, the parameter, what it must be and what it got.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class ParameterError(ValueError):
    """An experiment set a parameter the method does not have, or a value it cannot take."""


@dataclass(frozen=True)
class Check:
    """A parameter's allowed values: ``accepts(value)``, described as ``allowed``."""

    allowed: str
    accepts: Callable[[Any], bool]


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


POSITIVE = Check("a number > 0", lambda v: _real(v) and math.isfinite(v) and v > 0)
NON_NEGATIVE = Check("a number >= 0", lambda v: _real(v) and math.isfinite(v) and v >= 0)
COUNT = Check("an integer >= 1", lambda v: isinstance(v, numbers.Integral)
              and not isinstance(v, bool) and v >= 1)
#: A private method's clip norm: finite, since its noise is scaled to it (a plan refuses a noised
#: release of unbounded contributions); a non-private twin's may be inf (:data:`CLIP_OR_INF`).
CLIP = Check("a finite number > 0 (a private method clips)", lambda v: POSITIVE.accepts(v))
CLIP_OR_INF = Check("a number > 0 (inf: no clipping)", lambda v: _real(v) and v > 0)
FLAG = Check("true or false", lambda v: isinstance(v, bool))


def one_of(*choices: Any) -> Check:
    """One of ``choices``."""
    return Check(f"one of {list(choices)}", lambda v: v in choices)


ACCOUNTANT = one_of("rdp", "pld")


def _models() -> Check:
    from dpminimax.models.network import ARCHITECTURES

    return one_of("logistic_regression", *ARCHITECTURES)


MODEL = _models()


def check_values(method: str, params: Mapping[str, Any], checks: Mapping[str, Check]) -> None:
    """Raise :class:`ParameterError` for the first value of ``params`` that its check refuses."""
    for name, check in checks.items():
        if name not in params:
            continue
        value = params[name]
        for item in value if isinstance(value, list) else [value]:
            if not check.accepts(item):
                raise ParameterError(f"method {method!r}: parameter {name!r} must be "
                                     f"{check.allowed}, got {item!r}")
