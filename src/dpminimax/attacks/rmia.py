"""RMIA, the Robust Membership Inference Attack (Zarifzadeh, Liu, Cheng & Shokri 2024, "Low-Cost
High-Power Membership Inference Attacks", ICML), from the same shadow models as LiRA.

The target model's likelihood ratio of ``x`` against the reference models,
``LR(x) = Pr(x | theta) / Pr(x)`` with ``Pr(x | theta) = exp(-loss)`` (the probability of the
true label) and ``Pr(x)`` its mean over the reference models (their Eq. 4 and Sec. 3: reference
models trained on random halves, IN and OUT alike, so no reference needs to be told apart), is
compared with the same ratio of population rows ``z``: the score is the fraction of ``z`` with
``LR(x) / LR(z) >= gamma`` (their Eq. 3-5, the pairwise likelihood ratio test). In the
leave-one-out evaluation each model in turn is the target and the others its references; the
population is the pool itself (the attacker knows the candidate rows, not who is in), so the
score of a target model is the rank of ``LR(x)`` among the pool's ratios, scaled by gamma.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: The pairwise threshold (Zarifzadeh et al. Sec. 3; 1 tests ``LR(x) >= LR(z)``).
GAMMA = 1.0


def rmia_scores(losses: ArrayLike, gamma: float = GAMMA) -> np.ndarray:
    """RMIA scores ``(M, N)`` of every model of ``losses`` (M, N), each attacked with the
    other ``M - 1`` as its references (higher: more likely a member): the fraction of the
    pool's rows ``z`` with ``LR(x) / LR(z) >= gamma``."""
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[0] < 2:
        raise ValueError(f"RMIA needs (M >= 2, N) losses, got {losses.shape}")
    if not gamma > 0:
        raise ValueError(f"gamma must be > 0, got {gamma}")
    models = losses.shape[0]
    probabilities = np.exp(-losses)
    others = (probabilities.sum(axis=0) - probabilities) / (models - 1)  # Pr(x), leave-one-out
    others = np.maximum(others, np.finfo(np.float64).tiny)  # every reference gave x p = 0
    ratios = probabilities / others
    population = np.sort(ratios, axis=1)
    return np.stack([np.searchsorted(population[m], ratios[m] / gamma, side="right")
                     for m in range(models)]) / losses.shape[1]
