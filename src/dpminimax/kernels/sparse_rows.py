"""Linear-model kernels over the non-zeros of sampled rows (CPU, compiled with numba).

Tabular data sets are one-hot encoded and mostly zeros (Adult: at most 13 non-zeros of 102 per
row, Credit-Card 22 of 85). A linear model's step reads each sampled row twice: in the logits
``<x_i, w_k> + b_k`` and in the clipped gradient sum ``sum_i c_i r_ik x_i``
(:mod:`dpminimax.kernels.linear`). Over :meth:`~dpminimax.kernels.gather.RowGatherer.nonzeros`
(padded (columns, values) rows, built once per data set) both touch only the non-zeros, where
the dense logits and torch's clip-and-sum read every entry (timings: BENCHMARKS.md).

The loops are the building blocks of every compiled step: :func:`sparse_dots`,
:func:`store_outer_sums`, :func:`included_rows` and the clipping primitives
:func:`clipped_coefficient` / :func:`clipped_outer_row` (both through :func:`clip_factor`, the
one compiled clip formula) are called inside DP-FERMI's and PF-LD's compiled steps
(:mod:`dpminimax.algorithms.fair.dpfermi_compiled`,
:mod:`dpminimax.algorithms.fair.tran2021b_compiled`), and :func:`sparse_logits` /
:func:`sparse_clipped_outer_sum` serve ``linear_logits`` and ``clipped_outer_sum`` for rows left
in place (:class:`~dpminimax.kernels.gather.IndexedRows`).

Sums accumulate in float64 and results are returned in the data's dtype (so they differ from the
dense float32 path in the last bits). Bit-identity: a run's values are computed by one thread
from that run's rows and parameters only, example after example in batch order, with no
fast-math flag, so a run gets the same bits alone as among others; padding (mask False) is
skipped.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch

from dpminimax.kernels.clip import TINY
from dpminimax.kernels.gather import IndexedRows
from dpminimax.kernels.prefetch import ROWS_AHEAD, prefetch_row
from dpminimax.kernels.rowwise import compiled_supported, use_torch_threads


@numba.njit(cache=True, inline="always")
def clip_factor(norm, bound):  # pragma: no cover - compiled
    """``min(1, C / (norm + tiny))``: the one compiled twin of the torch primitive
    :func:`dpminimax.kernels.clip.clip_factors` (the same bits in float64,
    test_kernels_sparse_rows), which every compiled loop clips through."""
    return min(1.0, bound / (norm + TINY))


@numba.njit(cache=True, inline="always")
def clipped_coefficient(a, b, vector_norm, bound):  # pragma: no cover - compiled
    """The clipped coefficient ``f a b`` (multiplied in this order) of a per-example gradient
    ``a b v_i`` whose vector has the norm ``vector_norm`` = ||v_i||, with ``f`` =
    :func:`clip_factor` of ``|a b| ||v_i||``: so ``||f a b v_i|| <= C`` (Abadi et al. 2016,
    Alg. 1, "clip gradient"). Pass ``a = 1.0`` for a single value (bit for bit ``f b``)."""
    return clip_factor(abs(a * b) * vector_norm, bound) * a * b


@numba.njit(cache=True, inline="always")
def clipped_outer_row(residual, x_norm, bound, out):  # pragma: no cover - compiled
    """``out[m] = f residual[m]``: the residual of the clipped per-example gradient ``r_i ⊗
    [x_i, 1]``, with ``f`` = :func:`clip_factor` of ``||r_i|| ||[x_i, 1]||`` from the row's
    ``x_norm`` = ||x_i||. ||r_i||^2 is summed in float64 from the products of the entries in
    their dtype (numba's ``float()`` of a float32 is still a float32, and ``math.sqrt`` of a
    float32 rounds to float32: the operand types decide the bits), so every clipped outer sum
    computes the same bits through this one loop."""
    squared_norm = 0.0
    for m in range(residual.shape[0]):
        squared_norm += residual[m] * residual[m]
    factor = clip_factor(math.sqrt(squared_norm) * math.sqrt(x_norm * x_norm + 1.0), bound)
    for m in range(residual.shape[0]):
        out[m] = factor * residual[m]


@numba.njit(cache=True, inline="always")
def sparse_dot(columns, values, i, weight, r, m):  # pragma: no cover - compiled
    """``<x_i, weight[r, m]>`` over row i's non-zeros: the products of two entries in their
    dtype (numba's ``float()`` of a float32 is a float32), summed in float64."""
    z = 0.0
    for p in range(columns.shape[1]):
        z += float(values[i, p]) * float(weight[r, m, columns[i, p]])
    return z


@numba.njit(cache=True)
def sparse_dots(columns, values, rows, count, weight, r, m, out):  # pragma: no cover
    """``out[b] = <x_{rows[b]}, weight[r, m]>`` for the first ``count`` rows: each exactly
    :func:`sparse_dot`, four rows at a time so that their (independent) random row reads and
    addition chains overlap, prefetching the rows :data:`~dpminimax.kernels.prefetch.ROWS_AHEAD`
    ahead (timings: BENCHMARKS.md)."""
    width = columns.shape[1]
    b = 0
    while b + 4 <= count:
        for ahead in range(b + ROWS_AHEAD, min(b + ROWS_AHEAD + 4, count)):
            prefetch_row(columns, rows[ahead])
            prefetch_row(values, rows[ahead])
        i0, i1, i2, i3 = rows[b], rows[b + 1], rows[b + 2], rows[b + 3]
        z0 = z1 = z2 = z3 = 0.0
        for p in range(width):
            z0 += float(values[i0, p]) * float(weight[r, m, columns[i0, p]])
            z1 += float(values[i1, p]) * float(weight[r, m, columns[i1, p]])
            z2 += float(values[i2, p]) * float(weight[r, m, columns[i2, p]])
            z3 += float(values[i3, p]) * float(weight[r, m, columns[i3, p]])
        out[b], out[b + 1], out[b + 2], out[b + 3] = z0, z1, z2, z3
        b += 4
    while b < count:
        out[b] = sparse_dot(columns, values, rows[b], weight, r, m)
        b += 1


@numba.njit(cache=True, inline="always")
def accumulate_rows(columns, values, rows, count, coefficients, m, acc):  # pragma: no cover
    """``acc += sum_b coefficients[b, m] x_{rows[b]}`` over the first ``count`` rows, in order,
    prefetching the rows :data:`~dpminimax.kernels.prefetch.ROWS_AHEAD` ahead; returns
    ``sum_b coefficients[b, m]`` (the bias entry)."""
    total = 0.0
    for b in range(count):
        if b + ROWS_AHEAD < count:
            prefetch_row(columns, rows[b + ROWS_AHEAD])
            prefetch_row(values, rows[b + ROWS_AHEAD])
        i = rows[b]
        coefficient = coefficients[b, m]
        total += coefficient
        for p in range(columns.shape[1]):
            acc[columns[i, p]] += coefficient * float(values[i, p])
    return total


@numba.njit(cache=True, inline="always")
def store_outer_sums(columns, values, rows, count, scaled, r, grad_weight,
                     grad_bias):  # pragma: no cover - compiled
    """``grad_weight[r, m] = sum_b scaled[b, m] x_{rows[b]}`` and ``grad_bias[r, m] =
    sum_b scaled[b, m]`` for every class m (:func:`accumulate_rows`, in float64, stored in the
    outputs' dtype)."""
    for m in range(scaled.shape[1]):
        acc = np.zeros(grad_weight.shape[2])
        grad_bias[r, m] = accumulate_rows(columns, values, rows, count, scaled, m, acc)
        for f in range(grad_weight.shape[2]):
            grad_weight[r, m, f] = acc[f]


@numba.njit(cache=True, inline="always")
def included_rows(index, mask, r):  # pragma: no cover - compiled
    """``(rows, count)``: run r's included examples (mask True), in batch order."""
    rows = np.empty(index.shape[1], dtype=np.int64)
    count = 0
    for b in range(index.shape[1]):
        if mask[r, b]:
            rows[count] = index[r, b]
            count += 1
    return rows, count


@numba.njit(parallel=True, cache=True)
def _sparse_logits(columns, values, index, weight, bias, out):  # pragma: no cover - compiled
    runs, batch = index.shape
    dots = np.empty((runs, batch))
    for r in numba.prange(runs):
        for m in range(weight.shape[1]):
            sparse_dots(columns, values, index[r], batch, weight, r, m, dots[r])
            for b in range(batch):
                out[r, b, m] = dots[r, b] + float(bias[r, m])


@numba.njit(parallel=True, cache=True)
def _sparse_clipped_outer_sum(columns, values, row_norms, index, mask, residual, clip,
                              grad_weight, grad_bias):  # pragma: no cover - compiled
    runs = index.shape[0]
    classes = residual.shape[2]
    for r in numba.prange(runs):
        rows, count = included_rows(index, mask, r)
        scaled = np.empty((count, classes))
        position = 0
        for b in range(index.shape[1]):
            if mask[r, b]:
                clipped_outer_row(residual[r, b], row_norms[index[r, b]], clip[r],
                                  scaled[position])
                position += 1
        store_outer_sums(columns, values, rows, count, scaled, r, grad_weight, grad_bias)


def sparse_rows_supported(rows: torch.Tensor | IndexedRows, *tensors: torch.Tensor) -> bool:
    """Whether the compiled loops can take feature rows ``rows`` with ``tensors``: rows left in
    place (:class:`IndexedRows` of a 2-D source) and CPU tensors :func:`compiled_supported`
    accepts."""
    return (isinstance(rows, IndexedRows) and rows.source.dim() == 2
            and compiled_supported(rows.source, *tensors))


def sparse_logits(weight: torch.Tensor, bias: torch.Tensor, rows: IndexedRows) -> torch.Tensor:
    """Logits (R, B, K) of ``rows`` (R, B) under weight (R, K, d) and bias (R, K), padding
    included (check :func:`sparse_rows_supported` first)."""
    runs, batch = rows.index.shape
    out = torch.empty(runs, batch, weight.shape[1], dtype=weight.dtype)
    columns, values = rows.gatherer.nonzeros()
    use_torch_threads()
    _sparse_logits(columns.numpy(), values.numpy(), rows.index.numpy(),
                   weight.detach().numpy(), bias.detach().numpy(), out.numpy())
    return out


def sparse_clipped_outer_sum(residual: torch.Tensor, rows: IndexedRows, mask: torch.Tensor,
                             max_norm: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``sum_i min(1, C / (||r_i|| ||[x_i, 1]|| + tiny)) r_i ⊗ [x_i, 1]`` over the included
    examples, as ``(weight (R, K, d), bias (R, K))``, for logit gradients ``residual``
    (R, B, K) and per-run C ``max_norm`` (R,; inf: no clipping). Check
    :func:`sparse_rows_supported` first."""
    runs, _, classes = residual.shape
    grad_weight = residual.new_empty(runs, classes, rows.source.shape[1])  # float64 sums,
    grad_bias = residual.new_empty(runs, classes)                          # stored rounded
    columns, values = rows.gatherer.nonzeros()
    clip = (max_norm.to(torch.float64) if isinstance(max_norm, torch.Tensor)
            else torch.full((runs,), float(max_norm), dtype=torch.float64))
    use_torch_threads()
    _sparse_clipped_outer_sum(columns.numpy(), values.numpy(), rows.gatherer.norms().numpy(),
                              rows.index.numpy(), mask.numpy(), residual.detach().numpy(),
                              clip.expand(runs).numpy(), grad_weight.numpy(), grad_bias.numpy())
    return grad_weight, grad_bias
