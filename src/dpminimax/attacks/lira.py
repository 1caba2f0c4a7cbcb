"""The Likelihood Ratio Attack (LiRA; Carlini et al. 2022, "Membership Inference Attacks From First
Principles", S&P) and how to report a membership attack: AUC, TPR at a low FPR with Clopper-Pearson
intervals, and the empirical epsilon lower bound of Jagielski et al. (2020).

LiRA works on the logit-scaled confidence ``phi = log(p / (1 - p))`` of the true label (Sec. IV-C),
which is close to Gaussian across models trained with or without an example. Shadow models, some
trained on the example (IN) and some not (OUT), give per-example Gaussian fits; the target model's
``phi`` is scored by a likelihood ratio (online, Alg. 1) or a one-sided test against the OUT fit
alone (offline, Sec. VI-C). Per-example calibration is what beats a global loss threshold: an
example that is easy for every model has a high confidence whether or not it was trained on.

Inputs are per-example cross-entropy losses ``-log p_true`` of ``M`` models on ``N`` pool examples,
shape ``(M, N)``, and a boolean membership matrix of the same shape (``members[m, i]`` is True iff
example ``i`` was in model ``m``'s training set).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta, norm, t

from dpminimax.metrics.classification import roc_auc, roc_curve

LOSS_FLOOR = 1e-12
"""Losses are clipped below at this value, so ``p = 1`` gives ``phi ~ 27.6`` rather than ``inf``."""

CHECKED_RATES = (1e-3, 1e-2, 1e-1)
"""The error rates whose thresholds :func:`attack_metrics` checks against the DP ceiling by
default, each as an FPR (the first inequality's side) and as an FNR (the complementary one's):
one Bonferroni family of ``2 x 2 x 3`` one-sided bounds (a TPR lower and an FPR upper bound
per threshold)."""

VARIANCE_FLOOR = 1e-8
"""Absolute floor on fitted variances (``phi`` is in logit units), so that an example whose shadow
confidences are all equal does not divide by zero."""


def logit_confidence(losses: ArrayLike) -> np.ndarray:
    """``phi = log(p / (1 - p))`` with ``p = exp(-loss)`` (Carlini et al. Sec. IV-C), same shape.

    Computed as ``-loss - log(-expm1(-loss))``, exact for small and large losses. Losses below
    :data:`LOSS_FLOOR` (zero, or round-off negatives) are clipped to it; an infinite loss gives
    ``-inf``, which :func:`lira_scores` rejects.
    """
    losses = np.asarray(losses, dtype=float)
    if np.isnan(losses).any():
        raise ValueError("losses contain NaN")
    losses = np.maximum(losses, LOSS_FLOOR)
    return -losses - np.log(-np.expm1(-losses))


def lira_scores(
    target_phi: ArrayLike,
    shadow_phi: ArrayLike,
    shadow_members: ArrayLike,
    *,
    online: bool = True,
    fixed_variance: bool = False,
) -> np.ndarray:
    """LiRA membership scores ``(N,)`` of the target model's confidences ``target_phi``; higher
    means more likely a member.

    ``shadow_phi`` and ``shadow_members`` are ``(S, N)``. Per example, Gaussians are fitted to the
    IN and OUT shadows' ``phi`` (sample mean, unbiased variance; the released code of Carlini et
    al. uses the median and ``np.std``, which agree for Gaussians and many shadows).

    - online (Alg. 1): ``log N(phi; mu_in, s_in^2) - log N(phi; mu_out, s_out^2)``.
    - offline (Sec. VI-C): ``-log Pr[Z > phi]``, ``Z ~ N(mu_out, s_out^2)``, the one-sided test
      "phi is larger than OUT confidences". It is a monotone transform of the paper's
      ``Pr[Z <= phi]``, hence the same ROC, but it does not saturate at 1 in the low-FPR tail.
    - ``fixed_variance`` (Sec. VI-B): one variance per side, the mean over examples of the
      per-example variances, instead of per-example ones (better with few shadows).

    Fallbacks: an example with no observation on a side gets that side's mean over all its
    observations; one with fewer than two gets the side's mean per-example variance. Raises
    ValueError when a needed side (IN only online; OUT always) has no example observed twice.
    """
    target_phi = np.asarray(target_phi, dtype=float)
    shadow_phi = np.asarray(shadow_phi, dtype=float)
    shadow_members = _membership(shadow_members)
    if shadow_phi.ndim != 2 or shadow_members.shape != shadow_phi.shape:
        raise ValueError(f"shadow_phi {shadow_phi.shape} and shadow_members "
                         f"{shadow_members.shape} must be the same (S, N) shape")
    if target_phi.shape != shadow_phi.shape[1:]:
        raise ValueError(f"target_phi {target_phi.shape} must be ({shadow_phi.shape[1]},)")
    if not (np.isfinite(target_phi).all() and np.isfinite(shadow_phi).all()):
        raise ValueError("confidences must be finite")
    mean_out, var_out = _gaussian_fit(shadow_phi, ~shadow_members, fixed_variance, "OUT")
    if not online:
        return -norm.logsf(target_phi, mean_out, np.sqrt(var_out))
    mean_in, var_in = _gaussian_fit(shadow_phi, shadow_members, fixed_variance, "IN")
    return (norm.logpdf(target_phi, mean_in, np.sqrt(var_in))
            - norm.logpdf(target_phi, mean_out, np.sqrt(var_out)))


def leave_one_out_scores(
    losses: ArrayLike,
    members: ArrayLike,
    *,
    online: bool = True,
    fixed_variance: bool = False,
    targets: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each model in ``targets`` (default: all ``M``) is attacked with the other ``M - 1`` as
    shadows, the evaluation of Carlini et al. Sec. V-A.

    Returns ``(scores, labels)``, both ``(T, N)``; ``labels = members[targets]``.
    """
    phi, members = logit_confidence(losses), _membership(members)
    if phi.ndim != 2 or members.shape != phi.shape:
        raise ValueError(f"losses {phi.shape} and members {members.shape} must be the same "
                         "(M, N) shape")
    targets = np.arange(phi.shape[0]) if targets is None else np.asarray(targets, dtype=int)
    scores = [
        lira_scores(phi[t], np.delete(phi, t, axis=0), np.delete(members, t, axis=0),
                    online=online, fixed_variance=fixed_variance)
        for t in targets
    ]
    return np.stack(scores), members[targets]


def clopper_pearson_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact (Clopper-Pearson) interval on a binomial proportion, vectorised.

    Each side has error ``(1 - confidence) / 2``; the interval is ``[0, .]`` at 0 successes and
    ``[., 1]`` at ``trials`` successes.
    """
    alpha = (1.0 - _confidence(confidence)) / 2.0
    return _lower_bound(successes, trials, alpha), _upper_bound(successes, trials, alpha)


def clustered_rate_bounds(hits: ArrayLike, trials: ArrayLike, alpha: float
                          ) -> tuple[np.ndarray, np.ndarray]:
    """One-sided bounds, each of error ``alpha``, on the rate ``sum(hits) / sum(trials)`` of
    ``(..., M, N)`` boolean arrays over M target models x N rows (leading axes: one rate each).

    LiRA's leave-one-out targets share the pool's rows and each other as shadows, so the M N
    trials are not independent. The bounds are the looser of Clopper-Pearson on the pooled
    counts (exact for independent trials, and what a rate near 0 or 1 needs) and
    ``p -/+ t_{M-1}(1 - alpha) sqrt(V) / sum(trials)``, V the two-way cluster-robust variance of
    ``sum(hits - p trials)`` (Cameron, Gelbach & Miller 2011, Eq. 2.13: the squared sums per
    target plus the squared sums per row minus the squared cells), with a Student t of M - 1
    degrees of freedom for the few targets. One target (M = 1) is independent trials:
    Clopper-Pearson alone."""
    hits, trials = np.asarray(hits, dtype=float), np.asarray(trials, dtype=float)
    if hits.ndim < 2 or hits.shape != trials.shape:
        raise ValueError(f"hits {hits.shape} and trials {trials.shape} must be one (..., M, N) "
                         "shape")
    successes, total = hits.sum(axis=(-2, -1)), trials.sum(axis=(-2, -1))
    low, high = _lower_bound(successes, total, alpha), _upper_bound(successes, total, alpha)
    if hits.shape[-2] < 2:
        return low, high
    rate = successes / np.maximum(total, 1)
    z = hits - rate[..., None, None] * trials
    variance = ((z.sum(axis=-1) ** 2).sum(axis=-1) + (z.sum(axis=-2) ** 2).sum(axis=-1)
                - (z ** 2).sum(axis=(-2, -1)))
    spread = t.ppf(1 - alpha, hits.shape[-2] - 1) * np.sqrt(np.maximum(variance, 0.0)) \
        / np.maximum(total, 1)
    return (np.clip(np.minimum(low, rate - spread), 0.0, 1.0),
            np.clip(np.maximum(high, rate + spread), 0.0, 1.0))


def attack_metrics(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    delta: float = 0.0,
    fprs: Sequence[float] = CHECKED_RATES,
    confidence: float = 0.95,
) -> dict[str, float | int]:
    """AUC, TPR at given FPRs and the DP check of an attack, pooled over all targets: ``scores``
    and ``labels`` are ``(M, N)`` (M target models x N rows, bounds clustered both ways:
    :func:`clustered_rate_bounds`) or 1-D (independent trials).

    For each ``f`` in ``fprs``, ``tpr_at_<tag>`` (tag ``"%g" % (100 f)`` then ``pct``, e.g.
    ``0.1pct``): the largest TPR over ROC thresholds whose FPR is at most ``f``
    (:func:`~dpminimax.metrics.classification.tpr_at_fpr`), its bounds ``tpr_at_<tag>_low`` /
    ``_high`` over the members, and ``tpr_at_<tag>_fpr_high``, the upper bound of that
    threshold's FPR over the non-members (a ceiling check compares TPR_low with the ceiling at
    this FPR, not at ``f``). ``epsilon_lower``: the largest epsilon these bounds prove
    (:func:`epsilon_lower_bound_from_roc`'s two inequalities, with ``delta``) at those
    thresholds and at those of FNR at most ``f`` (the smallest FPR with TPR >= 1 - f, where the
    complementary inequality bites). Every bound is one-sided at error ``(1 - confidence) /
    (4 len(fprs))`` (Bonferroni over the family), so all of them hold at once, and
    ``epsilon_lower`` and every
    ceiling check are valid together, with probability at least ``confidence``. The thresholds
    are treated as fixed: they are set on the same non-members. Also ``n_members``,
    ``n_nonmembers``.
    """
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    scores, labels = np.atleast_2d(scores).astype(float), np.atleast_2d(_membership(labels))
    alpha = (1.0 - _confidence(confidence)) / (4 * len(fprs))
    n_members = int(np.count_nonzero(labels))
    n_nonmembers = labels.size - n_members
    curve_fpr, curve_tpr, thresholds = roc_curve(scores.ravel(), labels.ravel())
    result: dict[str, float | int] = {"auc": roc_auc(scores.ravel(), labels.ravel())}
    points = []
    for fpr in fprs:
        admissible = np.flatnonzero(curve_fpr <= fpr)
        points.append(admissible[np.argmax(curve_tpr[admissible])])  # smallest FPR among ties
    points += [int(np.argmax(curve_tpr >= 1.0 - fnr)) for fnr in fprs]
    above = scores >= thresholds[points].reshape(-1, 1, 1)  # (K, M, N): predicted IN
    tpr_low, tpr_high = clustered_rate_bounds(above & labels, np.broadcast_to(labels, above.shape),
                                              alpha)
    _, fpr_high = clustered_rate_bounds(above & ~labels, np.broadcast_to(~labels, above.shape),
                                        alpha)
    for k, (fpr, point) in enumerate(zip(fprs, points[:len(fprs)], strict=True)):
        tag = f"tpr_at_{fpr * 100:g}pct"
        result |= {tag: float(curve_tpr[point]), f"{tag}_low": float(tpr_low[k]),
                   f"{tag}_high": float(tpr_high[k]), f"{tag}_fpr_high": float(fpr_high[k])}
    with np.errstate(divide="ignore"):
        ratios = np.concatenate([(tpr_low - delta) / fpr_high,
                                 (1.0 - fpr_high - delta) / (1.0 - tpr_low)])
    return result | {"epsilon_lower": float(np.log(max(1.0, ratios.max()))),
                     "n_members": n_members, "n_nonmembers": n_nonmembers}


def epsilon_lower_bound_from_roc(
    scores: ArrayLike, labels: ArrayLike, delta: float, *, confidence: float = 0.95
) -> float:
    """Empirical epsilon lower bound of a membership attack (Jagielski et al. 2020, "Auditing
    Differentially Private Machine Learning"; Nasr et al. 2021).

    (epsilon, delta)-DP implies ``TPR <= e^eps FPR + delta`` and ``1 - FPR <= e^eps (1 - TPR) +
    delta`` at every threshold. With one-sided Clopper-Pearson bounds at ``confidence`` (a lower
    bound on TPR, an upper bound on FPR), each threshold gives

        eps >= max(log((TPR_lo - delta) / FPR_hi), log((1 - FPR_hi - delta) / (1 - TPR_lo))),

    valid with probability at least ``2 confidence - 1`` for a threshold fixed in advance. The
    maximum over all ROC thresholds is returned (0.0 when no threshold gives a positive bound):
    the best threshold's bound, as Jagielski et al. report it. No correction is made for choosing
    that threshold on the same data, so it is a formal bound only for binary scores (one
    threshold) or a threshold chosen on held-out data; otherwise read it as an estimate.
    """
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    alpha = 1.0 - _confidence(confidence)
    fpr, tpr, _ = roc_curve(scores, labels)
    n_members = int(np.count_nonzero(labels))
    n_nonmembers = np.size(labels) - n_members
    tpr_low = _lower_bound(np.rint(tpr * n_members), n_members, alpha)
    fpr_high = _upper_bound(np.rint(fpr * n_nonmembers), n_nonmembers, alpha)
    ratios = np.concatenate([(tpr_low - delta) / fpr_high,
                             (1.0 - fpr_high - delta) / (1.0 - tpr_low)])
    return float(np.log(max(1.0, ratios.max())))


def class_matched_nonmembers(
    member_labels: ArrayLike, candidate_labels: ArrayLike, *, seed: int = 0
) -> np.ndarray:
    """Sorted indices into ``candidate_labels`` of non-members with the members' label mix.

    With ``m_c`` members and ``a_c`` candidates of class ``c``, ``t = min(1, min_c a_c / m_c)``
    (exact rational) and ``floor(t m_c)`` candidates of each member class are drawn without
    replacement (generator seeded with ``seed``): at most one non-member per member, each class
    within 1 of the exact proportion, never more than available. Classes without members are
    never drawn; a member class without candidates gives an empty sample.
    """
    member_labels, candidate_labels = np.ravel(member_labels), np.ravel(candidate_labels)
    classes, member_counts = np.unique(member_labels, return_counts=True)
    pools = [(np.flatnonzero(candidate_labels == c), int(m))
             for c, m in zip(classes, member_counts, strict=True)]
    scale = min([Fraction(1), *(Fraction(pool.size, m) for pool, m in pools)])
    rng = np.random.default_rng(seed)
    picks = [rng.choice(pool, math.floor(scale * m), replace=False) for pool, m in pools]
    return np.sort(np.concatenate([np.empty(0, dtype=np.intp), *picks]))


def _gaussian_fit(
    phi: np.ndarray, side: np.ndarray, fixed_variance: bool, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per-example mean and (floored) variance of ``phi`` over the rows where ``side`` is True."""
    count = side.sum(axis=0)
    if not (count >= 2).any():
        raise ValueError(f"no example has two {name} shadow observations to fit a variance")
    total = np.where(side, phi, 0.0).sum(axis=0)
    mean = np.where(count > 0, total / np.maximum(count, 1), total.sum() / count.sum())
    squares = np.where(side, (phi - mean) ** 2, 0.0).sum(axis=0)
    variance = squares / np.maximum(count - 1, 1)
    pooled = variance[count >= 2].mean()
    variance = np.where((count >= 2) & (not fixed_variance), variance, pooled)
    return mean, np.maximum(variance, VARIANCE_FLOOR)


def _lower_bound(successes: ArrayLike, trials: ArrayLike, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound with error ``alpha`` (0 at 0 successes)."""
    k, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    return np.where(k > 0, beta.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)


def _upper_bound(successes: ArrayLike, trials: ArrayLike, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound with error ``alpha`` (1 at ``trials`` successes)."""
    k, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    return np.where(k < n, beta.isf(alpha, k + 1, np.maximum(n - k, 1)), 1.0)


def _membership(members: ArrayLike) -> np.ndarray:
    members = np.asarray(members)
    if not np.isin(members, [0, 1]).all():
        raise ValueError("membership must be boolean (or 0/1)")
    return members.astype(bool)


def _confidence(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return confidence
