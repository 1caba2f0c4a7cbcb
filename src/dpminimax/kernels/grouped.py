"""Per-group sums of per-example vectors over a padded batch (a histogram of R runs).

``grouped_sums(values (R, B, V), groups (R, B), mask (R, B), G)[r, g] = sum_{i unmasked,
groups_i = g} values_i``. The torch form (a one-hot (R, B, G) times the values, summed by the
padding-invariant :func:`~dpminimax.kernels.clip.example_sum`) forms an (R, B, G, V) product;
the compiled loop (CPU) adds each example's vector to its group's row, run by run in batch
order, in float64, and forms no product (timings: BENCHMARKS.md). Both forms skip
padding and depend on nothing but the run's own examples, so a run gets the same bits alone as
among others; they round differently from each other.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
import torch.nn.functional as F

from dpminimax.kernels.clip import example_sum
from dpminimax.kernels.rowwise import compiled_supported, use_torch_threads


@numba.njit(parallel=True, cache=True)
def _grouped_sums(values, groups, mask, first, out):  # pragma: no cover - compiled
    """Adds 1 to ``out[r, g, 0]`` (if ``first`` is 1) and each example's values to
    ``out[r, g, first:]``."""
    runs, batch, width = values.shape
    for r in numba.prange(runs):
        for b in range(batch):
            if mask[r, b]:
                g = groups[r, b]
                if first:
                    out[r, g, 0] += 1.0
                for v in range(width):
                    out[r, g, first + v] += float(values[r, b, v])


def grouped_sums(values: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor,
                 num_groups: int, counts: bool = False) -> torch.Tensor:
    """Sums (R, G, V) of ``values`` (R, B, V) per group ``groups`` (R, B, in [0, G)) over the
    unmasked examples, in the values' dtype; with ``counts``, (R, G, 1 + V) whose column 0 is
    the group's number of examples (Tran et al. 2021a's histogram of counts and prediction
    sums: the same numbers as summing a column of ones, without forming it)."""
    if compiled_supported(values) and groups.device.type == "cpu":
        out = np.zeros((values.shape[0], num_groups, int(counts) + values.shape[2]))
        use_torch_threads()
        _grouped_sums(values.detach().numpy(), groups.numpy(), mask.numpy(), int(counts), out)
        return torch.from_numpy(out).to(values.dtype)
    if counts:
        values = torch.cat([torch.ones_like(values[..., :1]), values], dim=-1)
    member = F.one_hot(groups, num_groups).to(values.dtype) * mask.to(values.dtype).unsqueeze(-1)
    return example_sum(member.unsqueeze(-1) * values.unsqueeze(-2))
