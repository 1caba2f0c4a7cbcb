"""Shadow models' membership: run r of a batched program trains on its own half of the rows.

The Likelihood Ratio Attack (Carlini et al., S&P 2022, Sec. IV-A and V-A) trains shadow models
each on a random half of a data pool and then asks, example by example, how a model's
confidence differs between the models that trained on it and those that did not. Here a shadow
model is one more run of the same batched program: its ``RunSpec.shadow`` index draws its member
set (exactly ``pool // 2`` rows, from the stream ``(shadow, "members")``, independent of the
run's training seed), and the program's sampler maps its batch positions ``0..m-1`` through the
run's row table (:func:`member_rows`), so every gather downstream reads the run's own members.
A run's privacy plan is made on its ``m`` members: it is the mechanism a model trained on those
``m`` rows alone would be.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from dpminimax.seeding import derive_seed


def member_count(pool: int) -> int:
    """How many of ``pool`` rows a shadow model trains on: half (Carlini et al. Sec. V-A)."""
    if pool < 2:
        raise ValueError(f"shadow models need a pool of at least 2 training rows, got {pool}")
    return pool // 2


def shadow_members(shadow: int, pool: int) -> np.ndarray:
    """Sorted row indices (``pool // 2``) that shadow model ``shadow`` trains on."""
    rng = np.random.default_rng(derive_seed(int(shadow), "members"))
    return np.sort(rng.permutation(pool)[:member_count(pool)])


def membership_matrix(shadows: Sequence[int], pool: int) -> np.ndarray:
    """``(len(shadows), pool)`` booleans: whether each shadow model trained on each row."""
    matrix = np.zeros((len(shadows), pool), dtype=bool)
    for r, shadow in enumerate(shadows):
        matrix[r, shadow_members(shadow, pool)] = True
    return matrix


def shadow_indices(shadows: Sequence[int | None]) -> list[int] | None:
    """The runs' shadow indices, or None when no run is a shadow. A batched program trains
    shadows only or no shadow at all: its runs share the sample size their plans are made on."""
    if all(shadow is None for shadow in shadows):
        return None
    if any(shadow is None for shadow in shadows):
        raise ValueError("a batched program trains shadow runs only or none: every run needs "
                         "a shadow index, or none may have one")
    return [int(shadow) for shadow in shadows]


def member_rows(shadows: Sequence[int | None], pool: int,
                device: torch.device | str) -> torch.Tensor | None:
    """Each run's member rows ``(R, pool // 2)`` (long), or None when no run is a shadow."""
    indices = shadow_indices(shadows)
    if indices is None:
        return None
    table = np.stack([shadow_members(shadow, pool) for shadow in indices])
    return torch.as_tensor(table, dtype=torch.long, device=device)


def to_rows(index: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """Batch positions ``index`` (R, B) of each run's sample mapped to data rows through the
    runs' member tables ``rows`` (R, m) (unchanged when ``rows`` is None); padding stays 0."""
    if rows is None:
        return index
    return torch.where(mask, rows.gather(1, index), 0)
