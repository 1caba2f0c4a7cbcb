"""DP-FERMI's gradient sums for logistic regression in one compiled pass per example (CPU).

The torch path of :class:`~dpminimax.algorithms.dpfermi.FermiProgram` computes a step of
Algorithm 1 (lines 4-6) as about 35 tensor operations over all R x B examples: logits, softmax,
the two parts of dpsi/dF (one-hot attributes, per-cell W and P_S), the chain rule through the
softmax, the clip factors, the weighted row sum and the W-gradient matrix products. Measured on
the development machine (2 cores; R = 90 runs, B = 1,024, Adult's d = 102): 10.8 ms per step, of
which the elementwise products, fills and one-hots over (R, B, ...) temporaries were most. This
kernel makes no temporary of that size and reads only the non-zeros of each sampled row
(:meth:`~dpminimax.kernels.gather.RowGatherer.nonzeros`; one-hot tables are mostly zeros):

for every run r (in parallel) and every included example i of its batch, in order,

* ``z = <x_i, theta_r> + b_r`` over the row's non-zeros (float64),
  F_i = softmax of the class logits (binary: of [0, z]);
* the parts of ``c_ij = dpsi_i/dF_ij`` (:mod:`dpminimax.algorithms.ermi`):
  ``-(W^T W)_jj`` and ``2 W_{s_i j} / sqrt(P_S(s_i))`` with the W and P_S of the example's cell
  (demographic parity: one cell; equalized odds: its label);
* through the softmax, ``F_im (c_im - <c_i, F_i>)`` for each part; sensitive-attribute mode clips
  the s-dependent part to ``clip`` (spec 001 §11 item 3, gradient norm times ||[x_i, 1]||);
* the theta residual ``F_i - onehot(y_i) + lam (both parts)`` (its last K entries), clipped to
  ``clip`` with the norm ``||residual|| ||[x_i, 1]||`` in example mode, accumulated as
  ``residual ⊗ [x_i, 1]``;
* the W weight ``a_i = lam``, clipped in example mode so that ``||a_i grad_W psi_i|| <= clip_w``
  (the closed-form norm of :func:`~dpminimax.algorithms.ermi.psi_grad_w_norms`), accumulated as
  ``2 a_i (u_i 1^T - W) diag(F_i)`` (Lemma D.1) through its two sums.

The sums are the same quantities as the torch path (checked against it in the tests, to float
rounding); noise, the updates and the projection stay in torch. Sums accumulate in float64 and
are returned in the data's dtype.

Bit-identity: a run's sums are computed by one thread from that run's rows and parameters only,
example after example in batch order, skipping padding, with no fast-math flag; no value
depends on R, on B, on the run's position or on the thread, so a run gets the same bits alone as
among others (tested bit for bit). The loop has three passes over the run's batch (logits,
per-example scalars, accumulation), so that the row reads of consecutive examples do not wait on
each other's arithmetic.
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
    clip_factor,
    included_rows,
    sparse_dots,
    store_outer_sums,
)

#: Privacy modes of the kernel: which of the three clippings apply.
CLIP_NONE, CLIP_EXAMPLE, CLIP_SENSITIVE = 0, 1, 2


@numba.njit(cache=True)
def _cell_tables(w, p_s, r):  # pragma: no cover - compiled
    """Per (cell, group) of run r: ``1 / sqrt(P_S(g))``, the parts ``-(W^T W)_jj`` and
    ``2 W_gj / sqrt(P_S(g))`` of dpsi/dF, and ``||u - W_:j||^2`` (all float64)."""
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
    classes = weight.shape[1]
    n_cells, groups, probs_len = w.shape[1], w.shape[2], w.shape[3]
    offset = probs_len - classes                       # binary: F = [1 - p, p], one logit
    for r in numba.prange(runs):
        inv_sqrt_p, independent, sensitive, distance = _cell_tables(w, p_s, r)
        rows, count = included_rows(index, mask, r)
        logits = np.zeros((count, probs_len))
        dots = np.empty(count)
        for m in range(classes):                       # independent rows: loads overlap
            sparse_dots(columns, values, rows, count, weight, r, m, dots)
            for b in range(count):
                logits[b, offset + m] = dots[b] + float(bias[r, m])
        scaled = np.empty((count, classes))            # clipped theta residuals
        acc_u = np.zeros((n_cells, groups, probs_len))   # sum_i a_i u_i F_i^T
        acc_f = np.zeros((n_cells, probs_len))           # sum_i a_i F_i
        probs = np.empty(probs_len)
        residual = np.empty(classes)
        lam_r, clip_r, clip_w_r = float(lam[r]), float(clip[r]), float(clip_w[r])
        for b in range(count):
            i = rows[b]
            largest = logits[b, 0]
            for j in range(1, probs_len):
                largest = max(largest, logits[b, j])
            total = 0.0
            for j in range(probs_len):
                probs[j] = math.exp(logits[b, j] - largest)
                total += probs[j]
            for j in range(probs_len):
                probs[j] /= total
            cell, group = cells[i], s[i]
            mean_independent = 0.0
            mean_sensitive = 0.0
            for j in range(probs_len):
                mean_independent += independent[cell, j] * probs[j]
                mean_sensitive += sensitive[cell, group, j] * probs[j]
            sensitive_scale = 1.0
            if mode == CLIP_SENSITIVE:
                norm = 0.0
                for m in range(classes):
                    part = probs[offset + m] * (sensitive[cell, group, offset + m]
                                                - mean_sensitive)
                    norm += part * part
                sensitive_scale = clip_factor(math.sqrt(norm) * row_norms[i], clip_r)
            norm = 0.0
            for m in range(classes):
                j = offset + m
                fair = (probs[j] * (independent[cell, j] - mean_independent)
                        + sensitive_scale * probs[j] * (sensitive[cell, group, j]
                                                        - mean_sensitive))
                residual[m] = probs[j] - (1.0 if y[i] == j else 0.0) + lam_r * fair
                norm += residual[m] * residual[m]
            factor = 1.0
            if mode == CLIP_EXAMPLE:
                factor = clip_factor(math.sqrt(norm) * row_norms[i], clip_r)
            for m in range(classes):
                scaled[b, m] = factor * residual[m]
            a = lam_r
            if mode == CLIP_EXAMPLE:           # ||grad_W psi_i|| = 2 sqrt(sum_j F_j^2 dist_j)
                norm = 0.0
                for j in range(probs_len):
                    norm += probs[j] * probs[j] * distance[cell, group, j]
                a *= clip_factor(abs(a) * 2.0 * math.sqrt(norm), clip_w_r)
            for j in range(probs_len):
                acc_u[cell, group, j] += a * probs[j] * inv_sqrt_p[cell, group]
                acc_f[cell, j] += a * probs[j]
        store_outer_sums(columns, values, rows, count, scaled, r, grad_weight, grad_bias)
        for c in range(n_cells):
            for g in range(groups):
                for j in range(probs_len):
                    grad_w[r, c, g, j] = 2.0 * (acc_u[c, g, j]
                                                - float(w[r, c, g, j]) * acc_f[c, j])


@dataclass(frozen=True)
class FermiSums:
    """The un-noised sums of one step: theta's ``weight`` (R, K, d) and ``bias`` (R, K), and
    ``sum_i a_i grad_W psi_i`` (R, C, k, l)."""

    weight: torch.Tensor
    bias: torch.Tensor
    w: torch.Tensor


def fermi_sums(rows: IndexedRows, row_norms: torch.Tensor, mask: torch.Tensor,
               y: torch.Tensor, s: torch.Tensor, cells: torch.Tensor,
               state: dict[str, torch.Tensor], w: torch.Tensor, p_s: torch.Tensor,
               lam: torch.Tensor, clip: torch.Tensor, clip_w: torch.Tensor,
               mode: int) -> FermiSums:
    """The (clipped) per-example gradient sums of Alg. 1 lines 5-6 for the batch ``rows``
    (R, B) / ``mask``, given for the whole training set ``||[x_i, 1]||`` (``row_norms``), the
    labels ``y``, attributes ``s`` and cells ``cells`` (n,; any integer dtype, best
    :func:`~dpminimax.kernels.gather.compact_codes`); ``w`` (R, C, k, l), ``p_s``
    (R, C, k), per-run ``lam``, ``clip``, ``clip_w`` (R,); ``mode`` one of
    :data:`CLIP_NONE`, :data:`CLIP_EXAMPLE`, :data:`CLIP_SENSITIVE`. Check
    :func:`~dpminimax.kernels.sparse_rows.sparse_rows_supported` (rows, theta, W, P_S) first.
    The float64 sums are stored rounded to the data's dtype."""
    weight, bias = state["weight"], state["bias"]
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
