"""A privacy budget epsilon, parsed once and labelled once (issue #41).

:meth:`Epsilon.parse` is the one reader of an epsilon as written by a person or a file: in
experiments.yaml (``"1"``, ``1``, ``1.0``, ``"inf"``), a run_config.json, a path's wildcard, a
``lira:`` or ``audit:`` block, or ``dpminimax.fit``'s argument. ``str(eps)`` is its canonical
label (``"1"``, ``"0.5"``, ``"1e-05"``, ``"inf"``; the value printed with ``%g``), the one
written in paths (``eps~1``) and in run_config.json; ``float(eps)`` is the value the accountant
calibrates to, exactly the number parsed.

What the label promises: ``%g`` keeps 6 significant digits, so ``Epsilon.parse(str(eps)) ==
eps`` holds exactly when :attr:`Epsilon.labelled` (the value has at most 6 significant digits,
e.g. every epsilon of the papers); the label of any epsilon is stable
(``str(Epsilon.parse(str(eps))) == str(eps)``). A job's epsilon must be labelled, since its
training reads the value back from the label (:func:`dpminimax.experiments.expand_jobs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any


class EpsilonError(ValueError):
    """An epsilon that is not a number > 0 (``inf`` included); the message is one line."""


@dataclass(frozen=True, order=True)
class Epsilon:
    """A privacy budget: a number > 0, ``inf`` for no privacy (a non-private method). Equal,
    hashed and ordered by value, so ``Epsilon.parse("1") == Epsilon.parse(1.0)``."""

    value: float

    def __post_init__(self) -> None:
        if (isinstance(self.value, bool) or not isinstance(self.value, Real)
                or not self.value > 0):  # NaN fails > 0
            raise EpsilonError(f"epsilon must be > 0, got {self.value!r}")
        object.__setattr__(self, "value", float(self.value))

    @classmethod
    def parse(cls, value: Any, where: str | None = None) -> Epsilon:
        """``value`` as an Epsilon: a number, its string (``"0.5"``, ``"1e-5"``; ``"inf"`` and
        ``"infinity"`` in any case, as Python's ``float`` reads them), or an Epsilon. Raises
        :class:`EpsilonError` prefixed with ``where`` (the key it was read from)."""
        if isinstance(value, Epsilon):
            return value
        try:
            if isinstance(value, str):
                try:
                    value = float(value)
                except ValueError:
                    raise EpsilonError(f"epsilon is not a number: {value!r}") from None
            return cls(value)
        except EpsilonError as err:
            raise EpsilonError(f"{where}: {err}" if where else str(err)) from None

    def __float__(self) -> float:
        return self.value

    def __str__(self) -> str:
        return "inf" if math.isinf(self.value) else f"{self.value:g}"

    @property
    def is_private(self) -> bool:
        """False for ``inf`` (no privacy guarantee)."""
        return not math.isinf(self.value)

    @property
    def labelled(self) -> bool:
        """Whether the label names this value exactly (``Epsilon.parse(str(self)) == self``)."""
        return float(str(self)) == self.value


#: The epsilon of a non-private method.
NON_PRIVATE = Epsilon(math.inf)

__all__ = ["NON_PRIVATE", "Epsilon", "EpsilonError"]
