"""Shadow models' membership: run r of a batched program trains on its own member set.

The Likelihood Ratio Attack (Carlini et al., S&P 2022, Sec. IV-A and V-A) trains shadow models
each on a random half of a data pool and then asks, example by example, how a model's
confidence differs between the models that trained on it and those that did not. Here a shadow
model is one more run of the same batched program: its ``RunSpec.shadow`` index draws its member
set from the stream ``(shadow, "members")`` (independent of the run's training seed), in one of
two ways (the pool's ``meta["shadow_membership"]``, :data:`INDEPENDENT` by default):

- :data:`INDEPENDENT`: each pool row joins independently with probability 1/2. Given the other
  rows, a model with row i and one without differ by adding row i: the add/remove relation the
  accountants certify, so the attack's ceilings are those of the epsilon spent. The sampler
  draws Poisson(q) over the whole pool and drops non-members (:func:`to_rows`): each member is
  in a batch with probability q, exactly the Poisson(q) sampling of the member set.
- :data:`FIXED_SIZE`: exactly ``pool // 2`` rows (a random permutation's first half). IN and
  OUT models then differ by a *replaced* row (the ceilings of
  :func:`~dpminimax.metrics.dp_ceiling.replace_one`). The sampler draws positions
  ``0..pool//2 - 1`` and maps them through the run's row table.

Either way the runs' plans are made on ``pool // 2`` rows (:func:`member_count`), a number that
does not depend on which rows were drawn, and the programs average their sums by the plan's
expected batch ``q * pool // 2`` (:func:`sample_sizes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dpminimax.seeding import derive_seed

INDEPENDENT = "independent"
FIXED_SIZE = "fixed_size"
MEMBERSHIPS = (INDEPENDENT, FIXED_SIZE)


def member_count(pool: int) -> int:
    """The n shadow runs on ``pool`` rows are planned on: half (Carlini et al. Sec. V-A); the
    exact member count of a fixed-size set, the expected one of an independent draw."""
    if pool < 2:
        raise ValueError(f"shadow models need a pool of at least 2 training rows, got {pool}")
    return pool // 2


def shadow_membership(meta: Mapping) -> str:
    """How the pool's shadows draw their members (``meta["shadow_membership"]``)."""
    membership = meta.get("shadow_membership", INDEPENDENT)
    if membership not in MEMBERSHIPS:
        raise ValueError(f"shadow_membership must be one of {MEMBERSHIPS}, got {membership!r}")
    return membership


def shadow_members(shadow: int, pool: int, membership: str = INDEPENDENT) -> np.ndarray:
    """Sorted row indices that shadow model ``shadow`` trains on (module docstring)."""
    rng = np.random.default_rng(derive_seed(int(shadow), "members"))
    if membership == INDEPENDENT:
        member_count(pool)  # refuses a pool too small
        return np.flatnonzero(rng.random(pool) < 0.5)
    return np.sort(rng.permutation(pool)[:member_count(pool)])


def membership_matrix(shadows: Sequence[int], pool: int,
                      membership: str = INDEPENDENT) -> np.ndarray:
    """``(len(shadows), pool)`` booleans: whether each shadow model trained on each row."""
    matrix = np.zeros((len(shadows), pool), dtype=bool)
    for r, shadow in enumerate(shadows):
        matrix[r, shadow_members(shadow, pool, membership)] = True
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


@dataclass(frozen=True)
class Members:
    """R shadow runs' member sets as their sampler reads them: ``table`` (R, m) long, the data
    row at each of the ``m = pool // 2`` positions (fixed size), or ``included`` (R, pool) bool
    (independent), whether each pool row is a member; ``planned``: the n of their plans."""

    table: torch.Tensor | None
    included: torch.Tensor | None
    planned: int

    @property
    def domain(self) -> int:
        """How many positions the sampler draws from."""
        return (self.table if self.table is not None else self.included).shape[1]

    def row_sets(self) -> list[np.ndarray]:
        """Each run's member rows (sorted)."""
        if self.table is not None:
            return list(self.table.cpu().numpy())
        return [np.flatnonzero(row) for row in self.included.cpu().numpy()]


def member_rows(shadows: Sequence[int | None], data, device: torch.device | str
                ) -> Members | None:
    """The runs' :class:`Members` drawn from the training rows of ``data`` (a prepared dataset,
    its :func:`shadow_membership`), or None when no run is a shadow."""
    indices = shadow_indices(shadows)
    if indices is None:
        return None
    pool, membership = len(data.y_train), shadow_membership(data.meta)
    if membership == INDEPENDENT:
        included = torch.as_tensor(membership_matrix(indices, pool, membership), device=device)
        return Members(None, included, member_count(pool))
    table = np.stack([shadow_members(shadow, pool, membership) for shadow in indices])
    return Members(torch.as_tensor(table, dtype=torch.long, device=device), None,
                   member_count(pool))


def sample_sizes(members: Members | None, n: int) -> tuple[int, int]:
    """``(positions the sampler draws from, the n the plans were made on)`` of a program on
    ``n`` training rows: ``(n, n)`` without shadows."""
    return (n, n) if members is None else (members.domain, members.planned)


def to_rows(index: torch.Tensor, mask: torch.Tensor,
            members: Members | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch positions ``index`` (R, B) of each run's sample (``mask``: real, not padding) as
    data rows and their mask: unchanged without shadows; through the runs' row tables (fixed
    size); or with the non-members dropped and each run's members moved to the front, padded
    to the longest (independent). Padding is index 0, mask False."""
    if members is None:
        return index, mask
    if members.table is not None:
        return torch.where(mask, members.table.gather(1, index), 0), mask
    keep = mask & members.included.gather(1, index)
    order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)
    keep = keep.gather(1, order)
    index = torch.where(keep, index.gather(1, order), 0)
    width = max(1, int(keep.sum(dim=1).max()))
    return index[:, :width], keep[:, :width]
