"""What (epsilon, delta)-DP implies for ANY membership-inference attack.

Hypothesis-testing view of DP (Kairouz, Oh, Viswanath 2015, Thm 2.1; Wasserman & Zhou 2010):
a mechanism is (epsilon, delta)-DP iff every test between two neighbouring data sets has

    FPR + e^eps FNR >= 1 - delta   and   FNR + e^eps FPR >= 1 - delta,

so a membership attack's true-positive rate at false-positive rate ``f`` is at most

    TPR(f) <= min(1, e^eps f + delta, 1 - e^-eps (1 - delta - f)).

The ceiling is attained by randomized response, so it is tight. Integrating it and maximising
``TPR - FPR`` give closed forms for the AUC and the advantage ceilings (derived below).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def dp_tpr_ceiling(fpr: ArrayLike, epsilon: ArrayLike, delta: ArrayLike) -> np.ndarray | float:
    """Largest TPR any attack can have at FPR ``fpr`` against an (epsilon, delta)-DP mechanism.

    ``min(1, e^eps fpr + delta, 1 - e^-eps (1 - delta - fpr))`` (Kairouz et al. 2015, Thm 2.1);
    vectorised over broadcastable arguments; ``epsilon = inf`` (no privacy) gives 1.
    """
    fpr, epsilon, delta = _as_array("fpr", fpr), _epsilon(epsilon), _as_array("delta", delta)
    with np.errstate(over="ignore", invalid="ignore"):
        # e^eps * 0 is 0 even when e^eps overflows
        lower_branch = np.where(fpr > 0, np.exp(epsilon) * fpr, 0.0) + delta
        upper_branch = 1.0 - np.exp(-epsilon) * (1.0 - delta - fpr)
    ceiling = np.minimum(1.0, np.minimum(lower_branch, upper_branch))
    return _scalar_or_array(np.where(np.isinf(epsilon), 1.0, ceiling))


def dp_auc_ceiling(epsilon: ArrayLike, delta: ArrayLike) -> np.ndarray | float:
    """Largest attack AUC under (epsilon, delta)-DP: ``1 - (1 - delta)^2 / (1 + e^eps)``.

    The area under :func:`dp_tpr_ceiling`: the two branches cross at ``f* = (1 - delta) /
    (1 + e^eps)``, the upper branch reaches 1 at ``f = 1 - delta``; the quadratic terms of the two
    pieces cancel, leaving the closed form. It is 0.5 at (0, 0) and tends to 1 as epsilon grows.
    """
    epsilon, delta = _epsilon(epsilon), _as_array("delta", delta)
    return _scalar_or_array(1.0 - (1.0 - delta) ** 2 / (1.0 + np.exp(epsilon)))


def dp_advantage_ceiling(epsilon: ArrayLike, delta: ArrayLike) -> np.ndarray | float:
    """Largest membership advantage ``max_f TPR(f) - f`` under (epsilon, delta)-DP.

    ``TPR - f`` grows on ``[0, f*]`` (slope e^eps - 1) and shrinks after it, so the maximum is at
    the kink ``f* = (1 - delta) / (1 + e^eps)``: ``delta + (1 - delta) tanh(epsilon / 2)``. This is
    tighter than Yeom et al.'s (2018, Thm 1) ``e^eps - 1``.
    """
    epsilon, delta = _epsilon(epsilon), _as_array("delta", delta)
    return _scalar_or_array(delta + (1.0 - delta) * np.tanh(epsilon / 2.0))


def replace_one(epsilon: ArrayLike, delta: ArrayLike) -> tuple[np.ndarray | float,
                                                                np.ndarray | float]:
    """The (epsilon, delta) of the replace-one relation implied by add/remove (epsilon, delta)-DP:
    ``(2 epsilon, (1 + e^epsilon) delta)`` (replacing a row is removing it, then adding another:
    two add/remove steps, Dwork & Roth 2014, Thm. 2.2's group argument with k = 2, capped at 1;
    epsilon = inf keeps ``delta``: no privacy, every ceiling is 1 whatever delta).
    LiRA's shadow models train on member sets of a fixed size, so its IN and OUT models differ by
    a replaced row and its ceilings are these."""
    epsilon, delta = _epsilon(epsilon), _as_array("delta", delta)
    with np.errstate(over="ignore", invalid="ignore"):
        grown = np.where(np.isinf(epsilon), delta,
                         np.minimum(1.0, (1.0 + np.exp(epsilon)) * delta))
    return _scalar_or_array(2.0 * epsilon), _scalar_or_array(grown)


def relation_privacy(relation: str, epsilon: ArrayLike, delta: ArrayLike
                     ) -> tuple[np.ndarray | float, np.ndarray | float]:
    """The (epsilon, delta) between datasets neighbouring under ``relation`` (IN and OUT
    models of an attack), from the add/remove (epsilon, delta) an accountant certified:
    ``"add_or_remove_one"`` keeps them, ``"replace_one"`` is :func:`replace_one`."""
    if relation == "replace_one":
        return replace_one(epsilon, delta)
    if relation != "add_or_remove_one":
        raise ValueError(f"relation must be 'add_or_remove_one' or 'replace_one', got "
                         f"{relation!r}")
    return _scalar_or_array(_epsilon(epsilon)), _scalar_or_array(_as_array("delta", delta))


def _as_array(name: str, value: ArrayLike, high: float = 1.0) -> np.ndarray:
    """``value`` as a float array, checked to lie in ``[0, high]``."""
    array = np.asarray(value, dtype=float)
    if np.isnan(array).any() or (array < 0).any() or (array > high).any():
        raise ValueError(f"{name} must be in [0, {high}], got {value!r}")
    return array


def _epsilon(value: ArrayLike) -> np.ndarray:
    return _as_array("epsilon", value, high=np.inf)


def _scalar_or_array(value: np.ndarray) -> np.ndarray | float:
    return float(value) if value.ndim == 0 else value
