"""Group prediction-rate gaps as linear functions of per-example predictions, for the fairness
penalties and constraints of Tran et al. 2021a / 2021b (DP-FERMI's baselines).

A *cell* is a set of examples whose mean prediction is compared with that of its *parent*:

* demographic parity: cell = sensitive group a, parent = everyone,
  gap_a = E[p | A = a] - E[p];
* equalized odds: cell = (y, a) (index ``y * k + a``), parent = label y,
  gap_ya = E[p | A = a, Y = y] - E[p | Y = y].

Given cell sizes N_c (released, hence public), a gap is linear in the predictions:
``gap_c = sum_i w_ic p_i`` with ``w_ic = 1[c_i = c] / N_c - 1[par(c_i) = par(c)] / N_par(c)``
(:func:`gap_weights`) and ``N_par(c) = sum_{c': par(c') = par(c)} N_c'``. From per-cell sums of
predictions the same gaps are ``S_c / N_c - S_par(c) / N_par(c)`` (:func:`rate_gaps`). Sizes
below 1 (possible after adding noise) are floored at 1, which is post-processing.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

FAIRNESS = ("demographic_parity", "equalized_odds")


@dataclass(frozen=True)
class GroupCells:
    """The cells and parents of a fairness notion for ``num_groups`` sensitive groups."""

    fairness: str
    num_groups: int

    def __post_init__(self) -> None:
        if self.fairness not in FAIRNESS:
            raise ValueError(f"fairness must be one of {FAIRNESS}, got {self.fairness!r}")
        if self.num_groups < 2:
            raise ValueError(f"a fairness gap needs at least 2 sensitive groups, got "
                             f"{self.num_groups}")

    @property
    def num_cells(self) -> int:
        return self.num_groups * (2 if self.fairness == "equalized_odds" else 1)

    def cell_of(self, y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """The cell index of examples with labels ``y`` and groups ``s`` (same shape)."""
        if self.fairness == "equalized_odds":
            return y.long() * self.num_groups + s.long()
        return s.long()

    def parents(self, device: torch.device | None = None) -> torch.Tensor:
        """Parent of every cell (C,): 0 (demographic parity) or the cell's label."""
        cells = torch.arange(self.num_cells, device=device)
        if self.fairness == "equalized_odds":
            return cells // self.num_groups
        return torch.zeros_like(cells)


def _floored_sizes(counts: torch.Tensor, parents: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(N_c, N_par(c))`` (R, C) each: cell sizes floored at 1 and their parents' totals."""
    sizes = torch.clamp(counts, min=1.0)
    same_parent = (parents.view(-1, 1) == parents.view(1, -1)).to(sizes.dtype)   # (C, C)
    return sizes, (sizes.unsqueeze(1) * same_parent).sum(dim=-1)


def gap_weights(cells: torch.Tensor, counts: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """``w_ic`` (R, B, C) for examples in ``cells`` (R, B), cell sizes ``counts`` (R, C) and
    ``parents`` (C,): ``gap_c = sum_i w_ic p_i`` (see the module docstring). An example's
    weights depend only on its cell: they are gathered from :func:`cell_gap_weights`."""
    table = cell_gap_weights(counts, parents)                                     # (R, C', C)
    return torch.gather(table, 1, cells.unsqueeze(-1).expand(*cells.shape, table.shape[-1]))


def rate_gaps(sums: torch.Tensor, counts: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """``S_c / N_c - S_par(c) / N_par(c)`` (R, C) from per-cell prediction sums and sizes."""
    sizes, parent_sizes = _floored_sizes(counts, parents)
    same_parent = (parents.view(-1, 1) == parents.view(1, -1)).to(sums.dtype)
    parent_sums = (sums.unsqueeze(1) * same_parent).sum(dim=-1)
    return sums / sizes - parent_sums / parent_sizes


def cell_gap_weights(counts: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
    """``w(c')`` (R, C', C): the gap weights of a member of each cell c',
    ``1[c' = c] / N_c - 1[par(c') = par(c)] / N_par(c)``."""
    sizes, parent_sizes = _floored_sizes(counts, parents)
    num_cells = counts.shape[-1]
    member = torch.eye(num_cells, dtype=counts.dtype, device=counts.device)       # (C', C)
    same_parent = (parents.view(-1, 1) == parents.view(1, -1)).to(counts.dtype)   # (C', C)
    return member / sizes.unsqueeze(1) - same_parent / parent_sizes.unsqueeze(1)
