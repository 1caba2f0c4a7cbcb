"""Empirical lower bounds on epsilon from one training run (Steinke, Nasr & Jagielski, NeurIPS
2023, "Privacy auditing with one (1) training run").

m canaries are each included in the training set with probability 1/2, independently; after
training, an auditor scores every canary and guesses "in" for the ``r / 2`` highest scores and
"out" for the ``r / 2`` lowest (abstaining on the rest). If training is (epsilon, delta)-DP, the
number W of correct guesses satisfies (their main theorem, in its delta > 0 form)

    P[W >= v] <= P[Bin(r, p) >= v] + 2 m delta max_{1 <= i <= v} P[v > Bin(r, p) >= v - i] / i,

p = e^eps / (1 + e^eps). The largest epsilon at which the observed v has p-value below
``1 - confidence`` is the audit's lower bound: with that confidence the mechanism is not
(eps, delta)-DP for any smaller eps. Several guess counts are tried with a Bonferroni
correction, so picking the best of them keeps the stated confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

#: Guess counts tried, as fractions of the canaries (Bonferroni-corrected).
GUESS_FRACTIONS = (0.1, 0.2, 0.5, 1.0)
EPSILON_CAP = 50.0


def p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """P-value of at least ``v`` correct out of ``r`` guesses on ``m`` canaries under
    (eps, delta)-DP (module docstring)."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got v={v}, r={r}, m={m}")
    if eps < 0 or not 0 <= delta <= 1:
        raise ValueError(f"need eps >= 0 and delta in [0, 1], got {eps}, {delta}")
    p = 1.0 / (1.0 + math.exp(-eps))
    beta = float(stats.binom.sf(v - 1, r, p))
    if delta == 0 or v == 0:
        return min(1.0, beta)
    below = np.cumsum(stats.binom.pmf(v - np.arange(1, v + 1), r, p))  # P[v > Bin >= v - i]
    alpha = float(np.max(below / np.arange(1, v + 1)))
    return min(1.0, beta + 2.0 * m * delta * alpha)


def epsilon_for(m: int, r: int, v: int, delta: float, level: float) -> float:
    """The largest eps whose p-value for ``v`` correct of ``r`` is at most ``level`` (0 if
    even eps = 0 explains it)."""
    if p_value(m, r, v, 0.0, delta) > level:
        return 0.0
    if p_value(m, r, v, EPSILON_CAP, delta) <= level:
        return EPSILON_CAP
    return float(optimize.brentq(lambda eps: p_value(m, r, v, eps, delta) - level, 0.0,
                                 EPSILON_CAP, xtol=1e-6))


@dataclass(frozen=True)
class AuditResult:
    """What one audited run shows: eps_lower at ``confidence``, and the guesses behind it."""

    epsilon_lower: float
    confidence: float
    canaries: int
    guesses: int
    correct: int


def epsilon_lower_bound(scores: Sequence[float] | np.ndarray, included: Sequence[bool],
                        delta: float, confidence: float = 0.95,
                        fractions: Sequence[float] = GUESS_FRACTIONS) -> AuditResult:
    """eps_lower from the canaries' ``scores`` (m,) (higher = more likely included), or from
    k candidate scorings (k, m), and whether each was ``included``: the best of the k scorings
    x the guess counts ``fractions x m``, each tested at ``(1 - confidence) / (k x
    len(fractions))`` (Bonferroni)."""
    included = np.asarray(included, dtype=bool)
    scorings = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    if scorings.ndim != 2 or included.ndim != 1 or scorings.shape[1] != len(included):
        raise ValueError(f"scores {np.shape(scores)} and included {included.shape} must be "
                         "(m,) or (k, m) and (m,)")
    if not np.isfinite(scorings).all():
        raise ValueError("canary scores must be finite")
    m = len(included)
    level = (1.0 - confidence) / (len(scorings) * len(fractions))
    best = AuditResult(0.0, confidence, m, 0, 0)
    for scoring in scorings:
        order = np.argsort(-scoring, kind="stable")
        for fraction in fractions:
            half = max(1, int(fraction * m) // 2)
            guessed_in, guessed_out = order[:half], order[m - half:]
            v = int(included[guessed_in].sum() + (~included[guessed_out]).sum())
            eps = epsilon_for(m, 2 * half, v, delta, level)
            if eps > best.epsilon_lower:
                best = AuditResult(eps, confidence, m, 2 * half, v)
    return best
