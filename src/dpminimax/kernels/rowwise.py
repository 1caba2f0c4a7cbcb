"""Row-wise kernels of batched linear models on the CPU, compiled with numba: the logits
``<x[r, i], weight[r, k]> + bias[r, k]`` and the softmax of every row of K logits.

torch has no CPU kernel for either that is both fast and independent of the batch layout. For
the logits, a matrix product (BLAS) changes its rounding with the batch composition, and
``linalg.vecdot`` over broadcast operands materialises the (R, B, K, d) elementwise product
first; for the softmax, torch's kernel over a last axis of K = 2 is slow per row. Together
they were most of a RaCO-DP step (BENCHMARKS.md, *Row-wise kernels*). These loops keep each row
in registers.

Bit-identity (see :mod:`dpminimax.kernels.linear`): every output row is computed by the same
compiled code from its own inputs and its run's weights alone, never from R, B, the row's
position or the thread it runs on, so a run trained among others gets the same bits as trained
alone. The logits loop's only fast-math flag is ``reassoc``, which lets the compiler split each
dot product into vector lanes: that order is fixed by the compiled loop for a given d (no fused
multiply-add is allowed) but may differ on a CPU with another vector width (like BLAS, another
machine may give other last bits). The softmax loop has no fast-math flag: the compiler can only
vectorise its innermost loop, over the K entries of one row, which every row runs alike.

The loops take inputs that satisfy :func:`compiled_supported` (CPU, float32 or float64,
contiguous, no autograd graph); ``linear_logits`` and :func:`row_softmax` fall back to torch for
anything else (CUDA included).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch

from dpminimax.kernels.backend import compiled_enabled
from dpminimax.kernels.gather import IndexedRows

#: dtypes the compiled loops accept; anything else takes the torch path.
SUPPORTED_DTYPES = (torch.float32, torch.float64)


@numba.njit(parallel=True, fastmath={"reassoc"}, cache=True)
def _row_logits(source: np.ndarray, index: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                out: np.ndarray, batch: int) -> None:  # pragma: no cover - compiled
    features = source.shape[1]
    classes = weight.shape[1]
    for row in numba.prange(out.shape[0]):
        run = row // batch
        x = source[index[row % index.shape[0]]]
        for k in range(classes):
            total = x[0] * weight[run, k, 0]
            for j in range(1, features):
                total += x[j] * weight[run, k, j]
            out[row, k] = total + bias[run, k]


@numba.njit(parallel=True, cache=True)
def _row_softmax(z: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    rows, classes = z.shape
    for row in numba.prange(rows):
        largest = z[row, 0]
        for k in range(1, classes):
            largest = max(largest, z[row, k])
        out[row, 0] = math.exp(z[row, 0] - largest)
        total = out[row, 0]
        for k in range(1, classes):
            out[row, k] = math.exp(z[row, k] - largest)
            total += out[row, k]
        for k in range(classes):
            out[row, k] /= total


def compiled_supported(*tensors: torch.Tensor) -> bool:
    """Whether the compiled loops can take ``tensors``: the kernel backend allows them
    (:mod:`dpminimax.kernels.backend`) and the tensors are all on the CPU in one float dtype,
    contiguous, non-empty in their last axis, with no autograd graph to record."""
    dtype = tensors[0].dtype
    return (compiled_enabled() and dtype in SUPPORTED_DTYPES
            and all(t.device.type == "cpu" and t.dtype == dtype and t.is_contiguous()
                    and t.dim() >= 1 and t.shape[-1] > 0 for t in tensors)
            and not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)))


def row_logits_supported(weight: torch.Tensor, bias: torch.Tensor,
                         x: torch.Tensor | IndexedRows) -> bool:
    """Whether :func:`row_logits` can take weight (R, K, d), bias (R, K) and rows x: a tensor
    (R, B, d), rows (n, d) shared by every run, or
    :class:`~dpminimax.kernels.gather.IndexedRows`."""
    if isinstance(x, IndexedRows):
        return x.source.dim() == 2 and compiled_supported(x.source, weight, bias)
    return x.dim() in (2, 3) and compiled_supported(x, weight, bias)


def row_logits(weight: torch.Tensor, bias: torch.Tensor,
               x: torch.Tensor | IndexedRows) -> torch.Tensor:
    """Logits (R, B, K) of rows x (R, B, d) under weight (R, K, d) and bias (R, K), on as many
    threads as torch uses. Rows given as :class:`~dpminimax.kernels.gather.IndexedRows` are
    read in place; a tensor is read through the same loop (as rows 0..R*B-1 of itself), so
    both forms give the same bits; rows x (n, d) shared by all R runs (evaluation) are read
    once for every run without being copied R times. Check :func:`row_logits_supported`
    first."""
    if isinstance(x, IndexedRows):
        runs, batch, _ = x.shape
        source, index = x.source.detach(), x.index.reshape(-1)
    elif x.dim() == 2:
        runs, batch = weight.shape[0], x.shape[0]
        source, index = x.detach(), torch.arange(batch)
    else:
        runs, batch, features = x.shape
        source = x.detach().reshape(runs * batch, features)
        index = torch.arange(runs * batch)
    out = torch.empty(runs, batch, weight.shape[1], dtype=source.dtype)
    use_torch_threads()
    _row_logits(source.numpy(), index.numpy(), weight.detach().numpy(),
                bias.detach().numpy(), out.view(runs * batch, weight.shape[1]).numpy(),
                max(1, batch))
    return out


@numba.njit(cache=True, inline="always")
def binary_prob(z, zero):  # pragma: no cover - compiled
    """``softmax([0, z])[1]`` in the dtype of ``z`` and ``zero`` (a 0 of that dtype)."""
    largest = max(zero, z)
    first = math.exp(zero - largest)
    second = math.exp(z - largest)
    return second / (first + second)


@numba.njit(parallel=True, cache=True)
def _binary_probs(z: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    zero = np.zeros(1, dtype=z.dtype)[0]
    for row in numba.prange(z.shape[0]):
        out[row] = binary_prob(z[row], zero)


def binary_probs(z: torch.Tensor) -> torch.Tensor:
    """``sigmoid(z)`` (..., 1) for binary logits z (..., 1), as ``softmax([0, z])[1]``: the
    arithmetic of :func:`row_softmax` on the pair (so the same bits, tested) without forming
    the pair. ``torch.sigmoid`` is not used because its vectorised body and scalar tail round
    differently (see :mod:`dpminimax.kernels.linear`); the torch fallback takes the softmax of
    the pair."""
    if not compiled_supported(z):
        return torch.softmax(torch.cat([torch.zeros_like(z), z], dim=-1), dim=-1)[..., 1:]
    out = torch.empty_like(z)
    use_torch_threads()
    _binary_probs(z.detach().reshape(-1).numpy(), out.view(-1).numpy())
    return out


def row_softmax(z: torch.Tensor) -> torch.Tensor:
    """``softmax(z, dim=-1)``: the compiled loop where :func:`compiled_supported`, else torch."""
    if not compiled_supported(z):
        return torch.softmax(z, dim=-1)
    out = torch.empty_like(z)
    use_torch_threads()
    _row_softmax(z.detach().reshape(-1, z.shape[-1]).numpy(),
                 out.view(-1, z.shape[-1]).numpy())
    return out


def use_torch_threads() -> None:
    """Run the compiled loops on as many threads as torch uses. numba starts its OpenMP pool on
    first use and that resets torch's thread count to the pool's size (seen: torch set to
    1 thread read 2 afterwards on a 2-core machine), so torch's count is put back."""
    threads = torch.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
