"""DP-FERMI's gradient sums for binary logistic regression in one compiled pass per example
(CPU).

Computes the theta- and W-gradient sums of a step of DP-FERMI (Lowy, Gupta, Razaviyayn, ICLR
2023, Algorithm 1 lines 4-6; the W-gradient by Lemma D.1) without the large temporaries of
:class:`~dpminimax.algorithms.fair.dpfermi.FermiProgram`'s torch path: per example, the logit
over the row's non-zeros, the parts of dpsi/dF through the softmax, clipping to ``clip`` and
``clip_w``, and accumulation in float64. The sums equal the torch path's (to float rounding) and
a run's are bit-identical alone or among others; noise, updates and projection stay in torch,
so the releases and their sensitivities are the torch path's.

Derivation and choices: papers/dpfermi/NOTES.md, section "The compiled gradient sums".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import torch

from dpminimax.kernels.gather import IndexedRows
from dpminimax.kernels.rowwise import use_torch_threads
from dpminimax.kernels.sparse_rows import (
    clipped_coefficient,
    included_rows,
    sparse_dots,
    store_outer_sums,
)

#: Privacy modes of the kernel: which of the three clippings apply.
CLIP_NONE, CLIP_EXAMPLE, CLIP_SENSITIVE = 0, 1, 2


@numba.njit(cache=True)
def _cell_tables(w, p_s, r):  # pragma: no cover - compiled
    """Per (cell, group) of run r: ``1 / sqrt(P_S(g))``, the parts ``-(W^T W)_jj`` and
    ``2 W_gj / sqrt(P_S(g))`` of dpsi/dF, and ``||u - W_:j||^2`` (float64 tables; products and
    square roots of the inputs are taken in their dtype first, as numba types them)."""
    n_cells, groups, probs_len = w.shape[1], w.shape[2], w.shape[3]
    inv_sqrt_p = np.empty((n_cells, groups))
    independent = np.zeros((n_cells, probs_len))
    sensitive = np.empty((n_cells, groups, probs_len))
    distance = np.empty((n_cells, groups, probs_len))
    for c in range(n_cells):
        for g in range(groups):
            inv_sqrt_p[c, g] = 1.0 / math.sqrt(float(p_s[r, c, g]))
            for j in range(probs_len):
                independent[c, j] -= float(w[r, c, g, j]) * float(w[r, c, g, j])
        for g in range(groups):
            for j in range(probs_len):
                sensitive[c, g, j] = 2.0 * float(w[r, c, g, j]) * inv_sqrt_p[c, g]
                distance[c, g, j] = max(0.0, inv_sqrt_p[c, g] * inv_sqrt_p[c, g]
                                        - sensitive[c, g, j] - independent[c, j])
    return inv_sqrt_p, independent, sensitive, distance


@numba.njit(parallel=True, cache=True)
def _fermi_sums(columns, values, row_norms, index, mask, y, s, cells, weight, bias, w, p_s,
                lam, clip, clip_w, mode, grad_weight, grad_bias,
                grad_w):  # pragma: no cover - compiled
    runs = index.shape[0]
    # l = 2, but read from W: with a literal 2 here, every compiled kernel run afterwards on
    # the worker threads got much slower at its libm calls (BENCHMARKS.md; gone when compiled
    # for AVX2 only, so probably AVX-512 register state left dirty by the vectorised
    # constant-length loops)
    n_cells, groups, probs_len = w.shape[1], w.shape[2], w.shape[3]
    for r in numba.prange(runs):
        inv_sqrt_p, independent, sensitive, distance = _cell_tables(w, p_s, r)
        rows, count = included_rows(index, mask, r)
        logits = np.empty(count)
        sparse_dots(columns, values, rows, count, weight, r, 0, logits)
        scaled = np.empty((count, 1))                  # clipped theta residuals
        acc_u = np.zeros((n_cells, groups, probs_len))   # sum_i a_i u_i F_i^T
        acc_f = np.zeros((n_cells, probs_len))           # sum_i a_i F_i
        lam_r, clip_r, clip_w_r = float(lam[r]), float(clip[r]), float(clip_w[r])
        bias_r = float(bias[r, 0])
        for b in range(count):
            i = rows[b]
            z = logits[b] + bias_r                     # F = softmax([0, z]) = [p0, p1]
            largest = max(0.0, z)
            e0, e1 = math.exp(0.0 - largest), math.exp(z - largest)
            total = e0 + e1
            p0, p1 = e0 / total, e1 / total
            cell, group = cells[i], s[i]
            mean_independent = independent[cell, 0] * p0 + independent[cell, 1] * p1
            mean_sensitive = sensitive[cell, group, 0] * p0 + sensitive[cell, group, 1] * p1
            part = p1 * (sensitive[cell, group, 1] - mean_sensitive)
            if mode == CLIP_SENSITIVE:                 # the s-dependent part, to clip
                part = clipped_coefficient(p1, sensitive[cell, group, 1] - mean_sensitive,
                                           row_norms[i], clip_r)
            fair = p1 * (independent[cell, 1] - mean_independent) + part
            residual = p1 - (1.0 if y[i] == 1 else 0.0) + lam_r * fair
            if mode == CLIP_EXAMPLE:                   # the whole theta gradient, to clip
                residual = clipped_coefficient(1.0, residual, row_norms[i], clip_r)
            scaled[b, 0] = residual
            a = lam_r
            if mode == CLIP_EXAMPLE:           # ||grad_W psi_i|| = 2 sqrt(sum_j F_j^2 dist_j)
                norm = p0 * p0 * distance[cell, group, 0] + p1 * p1 * distance[cell, group, 1]
                a = clipped_coefficient(1.0, a, 2.0 * math.sqrt(norm), clip_w_r)
            acc_u[cell, group, 0] += a * p0 * inv_sqrt_p[cell, group]
            acc_u[cell, group, 1] += a * p1 * inv_sqrt_p[cell, group]
            acc_f[cell, 0] += a * p0
            acc_f[cell, 1] += a * p1
        store_outer_sums(columns, values, rows, count, scaled, r, grad_weight, grad_bias)
        for c in range(n_cells):
            for g in range(groups):
                for j in range(probs_len):
                    grad_w[r, c, g, j] = 2.0 * (acc_u[c, g, j]
                                                - float(w[r, c, g, j]) * acc_f[c, j])


@dataclass(frozen=True)
class FermiSums:
    """The un-noised sums of one step: theta's ``weight`` (R, 1, d) and ``bias`` (R, 1), and
    ``sum_i a_i grad_W psi_i`` (R, C, k, 2)."""

    weight: torch.Tensor
    bias: torch.Tensor
    w: torch.Tensor


def fermi_sums(rows: IndexedRows, row_norms: torch.Tensor, mask: torch.Tensor,
               y: torch.Tensor, s: torch.Tensor, cells: torch.Tensor,
               state: dict[str, torch.Tensor], w: torch.Tensor, p_s: torch.Tensor,
               lam: torch.Tensor, clip: torch.Tensor, clip_w: torch.Tensor,
               mode: int) -> FermiSums:
    """The (clipped) per-example gradient sums of Alg. 1 lines 5-6 for the batch ``rows``
    (R, B) / ``mask`` of binary logistic regression (theta: ``weight`` (R, 1, d), ``bias``
    (R, 1)), given for the whole training set ``||[x_i, 1]||`` (``row_norms``), the labels
    ``y`` in {0, 1}, attributes ``s`` and cells ``cells`` (n,; any integer dtype, best
    :func:`~dpminimax.kernels.gather.compact_codes`); ``w`` (R, C, k, 2), ``p_s``
    (R, C, k), per-run ``lam``, ``clip``, ``clip_w`` (R,); ``mode`` one of
    :data:`CLIP_NONE`, :data:`CLIP_EXAMPLE`, :data:`CLIP_SENSITIVE`. Check
    :func:`~dpminimax.kernels.sparse_rows.sparse_rows_supported` (rows, theta, W, P_S) first.
    The float64 sums are stored rounded to the data's dtype."""
    weight, bias = state["weight"], state["bias"]
    if weight.shape[1] != 1 or w.shape[-1] != 2:
        raise ValueError(f"fermi_sums is for binary logistic regression (one logit, l = 2); "
                         f"got {weight.shape[1]} logits and l = {w.shape[-1]}")
    grad_weight, grad_bias, grad_w = (torch.empty_like(t) for t in (weight, bias, w))
    use_torch_threads()
    columns, values = rows.gatherer.nonzeros()
    _fermi_sums(columns.numpy(), values.numpy(), row_norms.numpy(),
                rows.index.numpy(), mask.numpy(), y.numpy(), s.numpy(), cells.numpy(),
                weight.detach().numpy(), bias.detach().numpy(), w.numpy(), p_s.numpy(),
                lam.to(torch.float64).numpy(), clip.to(torch.float64).numpy(),
                clip_w.to(torch.float64).numpy(), mode, grad_weight.numpy(), grad_bias.numpy(),
                grad_w.numpy())
    return FermiSums(grad_weight, grad_bias, grad_w)
