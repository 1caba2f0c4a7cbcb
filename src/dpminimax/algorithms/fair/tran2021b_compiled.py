"""PF-LD's two primal gradient sums (Tran et al. 2021b re-implementation, binary logistic
regression on the CPU) in one compiled pass per run.

The torch form of :meth:`~dpminimax.algorithms.fair.tran2021b.PfldProgram.primal_step` is about 25
tensor operations per step: labels and cells of the batch, logits, probabilities, the cell gap
weights gathered per example, the Jacobian ``u_ic = n w_ic p_i (1 - p_i)``, the loss residual,
and two clipped outer sums over the same rows. At PF-LD's R = 15 runs per job their per-call
overhead is a large part of the step. This kernel does the same arithmetic example by example:

for every run r (in parallel) and every included example i of its batch, in order,

* ``z_i = <x_i, theta_r> + b_r`` over the row's non-zeros (summed in float64, rounded to the
  data's dtype as :func:`~dpminimax.kernels.linear.linear_logits` stores it) and ``p_i`` =
  :func:`~dpminimax.kernels.rowwise.binary_prob` (the arithmetic of ``binary_probs``);
* the loss residual ``p_i - y_i`` and the Jacobian ``u_ic = ((n w_ic) p_i) (1 - p_i)``, with
  ``w_ic`` the row of the cell gap-weight table (R, C', C) for the example's cell, each
  operation in the data's dtype and order as the torch form computes it;
* each release clipped to its own bound (the releases' ``clip``) with the norm ``||r_i||
  ||[x_i, 1]||`` and summed as ``r_i ⊗ [x_i, 1]``
  (:func:`~dpminimax.kernels.sparse_rows.clipped_outer_row` and
  :func:`~dpminimax.kernels.sparse_rows.store_outer_sums`, float64), exactly the loop of
  :func:`~dpminimax.kernels.sparse_rows.sparse_clipped_outer_sum`.

So the sums are the torch form's bits (tested: several steps of every fairness notion, alone and
batched); noise, the descent and the multipliers stay in torch. A run's sums depend only on its
own rows and parameters, so a run gets the same bits alone as among others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import torch

from dpminimax.kernels.gather import IndexedRows
from dpminimax.kernels.rowwise import binary_prob, use_torch_threads
from dpminimax.kernels.sparse_rows import (
    clipped_outer_row,
    included_rows,
    sparse_dots,
    store_outer_sums,
)


@numba.njit(parallel=True, cache=True)
def _pfld_sums(columns, values, row_norms, index, mask, y, cells, weight, bias, table, n,
               loss_clip, jacobian_clip, loss_weight, loss_bias, jacobian_weight,
               jacobian_bias):  # pragma: no cover - compiled
    runs, num_cells = index.shape[0], table.shape[2]
    typed = np.empty(3, dtype=weight.dtype)      # n, 1 and 0 in the data's dtype
    typed[0], typed[1], typed[2] = n, 1.0, 0.0
    for r in numba.prange(runs):
        rows, count = included_rows(index, mask, r)
        dots = np.empty(count)
        sparse_dots(columns, values, rows, count, weight, r, 0, dots)
        logits = np.empty(count, dtype=weight.dtype)     # rounded as linear_logits stores them
        loss = np.empty(count, dtype=weight.dtype)
        jacobian = np.empty(num_cells, dtype=weight.dtype)
        label = np.empty(1, dtype=weight.dtype)         # y_i in the data's dtype
        loss_scaled = np.empty((count, 1))
        jacobian_scaled = np.empty((count, num_cells))
        bias_r, loss_clip_r = float(bias[r, 0]), float(loss_clip[r])
        jacobian_clip_r = float(jacobian_clip[r])
        for b in range(count):
            logits[b] = dots[b] + bias_r
        for b in range(count):
            i = rows[b]
            p = binary_prob(logits[b], typed[2])
            label[0] = y[i]
            loss[b] = p - label[0]
            clipped_outer_row(loss[b:b + 1], row_norms[i], loss_clip_r, loss_scaled[b])
            for c in range(num_cells):
                jacobian[c] = (typed[0] * table[r, cells[i], c]) * p
                jacobian[c] = jacobian[c] * (typed[1] - p)
            clipped_outer_row(jacobian, row_norms[i], jacobian_clip_r, jacobian_scaled[b])
        store_outer_sums(columns, values, rows, count, loss_scaled, r, loss_weight, loss_bias)
        store_outer_sums(columns, values, rows, count, jacobian_scaled, r, jacobian_weight,
                         jacobian_bias)


@dataclass(frozen=True)
class PfldSums:
    """The clipped, un-noised sums of one primal step: the loss gradient (``loss_weight`` (R, 1,
    d), ``loss_bias`` (R, 1)) and the constraint Jacobian (``jacobian_weight`` (R, C, d),
    ``jacobian_bias`` (R, C))."""

    loss_weight: torch.Tensor
    loss_bias: torch.Tensor
    jacobian_weight: torch.Tensor
    jacobian_bias: torch.Tensor


def pfld_sums(rows: IndexedRows, mask: torch.Tensor, y: torch.Tensor, cells: torch.Tensor,
              state: dict[str, torch.Tensor], table: torch.Tensor, n: int,
              loss_clip: torch.Tensor, jacobian_clip: torch.Tensor) -> PfldSums:
    """Both primal releases' clipped sums for the batch ``rows`` (R, B) / ``mask`` of binary
    logistic regression (theta: ``weight`` (R, 1, d), ``bias`` (R, 1)), labels ``y`` in {0, 1}
    and cells ``cells`` (n,) of the training set, the cell gap-weight table (R, C', C) of
    :func:`~dpminimax.algorithms.fair.group_stats.cell_gap_weights`, the training-set size ``n``
    and the per-run clip bounds (R,) of the loss-gradient and Jacobian releases (both C_p,
    ``BatchedRelease.clip``). Check
    :func:`~dpminimax.kernels.sparse_rows.sparse_rows_supported` (rows, theta, table) first."""
    weight, bias = state["weight"], state["bias"]
    runs, num_cells = weight.shape[0], table.shape[2]
    loss_weight, loss_bias = torch.empty_like(weight), torch.empty_like(bias)
    jacobian_weight = weight.new_empty(runs, num_cells, weight.shape[2])
    jacobian_bias = bias.new_empty(runs, num_cells)
    columns, values = rows.gatherer.nonzeros()
    use_torch_threads()
    _pfld_sums(columns.numpy(), values.numpy(), rows.gatherer.norms().numpy(),
               rows.index.numpy(), mask.numpy(), y.numpy(), cells.numpy(),
               weight.detach().numpy(), bias.detach().numpy(), table.numpy(), n,
               loss_clip.to(torch.float64).numpy(), jacobian_clip.to(torch.float64).numpy(),
               loss_weight.numpy(), loss_bias.numpy(),
               jacobian_weight.numpy(), jacobian_bias.numpy())
    return PfldSums(loss_weight, loss_bias, jacobian_weight, jacobian_bias)
