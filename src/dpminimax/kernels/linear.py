"""Closed-form per-example gradients of linear (logistic) models, for R runs at once.

A linear model of run r has ``weight`` (K, d) and ``bias`` (K,). ``K == 1`` is binary logistic
regression (sigmoid + binary cross-entropy, labels in {0, 1}); ``K >= 2`` is multinomial logistic
regression (softmax cross-entropy, labels in {0, ..., K-1}). For both, the gradient of example i's
loss with respect to the logits is the residual ``r_i = p_i - onehot(y_i)`` (K entries; for K = 1,
``sigmoid(z_i) - y_i``), so the per-example gradient is the outer product ``r_i ⊗ [x_i, 1]``
(Goodfellow 2015, "Efficient per-example gradient computations") with norm
``||r_i|| * sqrt(||x_i||^2 + 1)``. Clipping (Abadi et al. 2016, Alg. 1) therefore only rescales
r_i, and the clipped sum needs no per-example gradient tensor beyond the product ``c_i r_i x_i``.

Bit-identity across batch compositions: run r must get the same bits whether it is trained alone
(R = 1, batch padded to its own size) or among other runs (padded to the largest batch), so no
value may depend on where in the flattened (R, B) layout an example sits. Two torch CPU kernels
break this and are avoided (both measured here with torch 2.14 + MKL):

* BLAS matrix products: MKL's results change with the batch count, the padded length and memory
  alignment. Every contraction is instead an elementwise product followed by torch's own
  reduction over an axis whose length never depends on the other runs (the feature axis d for
  logits and norms; fixed blocks of examples for the bias sum, see
  :func:`dpminimax.kernels.clip.example_sum`), or a weighted row sum that adds rows in order
  (``embedding_bag``) for the weight gradient.
* Elementwise transcendental functions (``torch.sigmoid``): the vectorised body and the scalar
  tail of the loop round differently, and which elements land in the tail depends on the total
  size. The probabilities come from the row-wise softmax kernel instead (for K = 1,
  ``sigmoid(z) = softmax([0, z])[1]``), which treats every row of K entries identically.

Basic arithmetic (+, -, *, /, sqrt) is correctly rounded in both loop paths and is safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
import torch.nn.functional as F

from dpminimax.kernels.clip import clip_factors, example_sum
from dpminimax.kernels.gather import IndexedRows, as_tensor
from dpminimax.kernels.rowwise import (
    binary_probs,
    row_logits,
    row_logits_supported,
    row_softmax,
)
from dpminimax.kernels.sparse_rows import (
    sparse_clipped_outer_sum,
    sparse_logits,
    sparse_rows_supported,
)


class NoisingRelease(Protocol):
    """What these kernels use of a batched release (:class:`dpminimax.privacy.release.
    BatchedRelease`, which is above the kernels: it noises with them): the runs' clip norms
    (R,) and its noise on a dict of (R, ...) sums, run r's from ``generators[r]``."""

    clip: torch.Tensor

    def perturb(self, summed: dict[str, torch.Tensor],
                generators: Sequence[torch.Generator]) -> dict[str, torch.Tensor]: ...


#: Elementwise products per chunk of runs in :func:`linear_logits` (4 MB in float32).
_CHUNK_ELEMENTS = 1 << 20


def linear_logits(weight: torch.Tensor, bias: torch.Tensor,
                  x: torch.Tensor | IndexedRows) -> torch.Tensor:
    """Logits (R, B, K) of inputs x (R, B, d), or (n, d) shared by every run, under weight
    (R, K, d) and bias (R, K).

    A row-wise dot product (not a matrix product), so each logit's arithmetic is independent of
    the batch it sits in (see the module docstring). ``vecdot`` forms the elementwise product
    before summing it; runs are processed in chunks of about :data:`_CHUNK_ELEMENTS` products so
    that this temporary stays small enough to be reused by the allocator instead of being
    faulted in afresh every step (which cost more than the arithmetic for 100 batched runs).
    Contiguous CPU rows without an autograd graph take the compiled loop of
    :mod:`dpminimax.kernels.rowwise` instead (same contract, several times faster), and rows
    left in place (:class:`IndexedRows`) the loop over their non-zeros of
    :mod:`dpminimax.kernels.sparse_rows`.
    """
    if sparse_rows_supported(x, weight, bias):
        return sparse_logits(weight, bias, x)
    if row_logits_supported(weight, bias, x):
        return row_logits(weight, bias, x)
    x = as_tensor(x)
    if x.dim() == 2:
        x = x.unsqueeze(0).expand(weight.shape[0], -1, -1)
    runs_per_chunk = max(1, _CHUNK_ELEMENTS // max(1, x[0].numel() * weight.shape[1]))
    chunks = [
        torch.linalg.vecdot(x[r:r + runs_per_chunk].unsqueeze(-2),
                            weight[r:r + runs_per_chunk].unsqueeze(1))
        for r in range(0, x.shape[0], runs_per_chunk)
    ]
    return (chunks[0] if len(chunks) == 1 else torch.cat(chunks)) + bias.unsqueeze(1)


def linear_losses(
    weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Per-example losses (R, B): binary cross-entropy (K = 1) or softmax cross-entropy (K >= 2);
    x as in :func:`linear_logits`, y (R, B)."""
    logits = linear_logits(weight, bias, x)
    if logits.shape[-1] == 1:
        return F.binary_cross_entropy_with_logits(
            logits[..., 0], y.to(logits.dtype), reduction="none"
        )
    return F.cross_entropy(logits.transpose(1, 2), y.long(), reduction="none")


def linear_residuals(
    weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """d loss_i / d logits_i (R, B, K): ``sigmoid(z) - y`` (K = 1) or ``softmax(z) - onehot(y)``."""
    logits = linear_logits(weight, bias, x)
    if logits.shape[-1] == 1:
        # sigmoid(z) = softmax([0, z])[1]; see the module docstring for why not torch.sigmoid.
        return binary_probs(logits) - y.to(logits.dtype).unsqueeze(-1)
    probs = row_softmax(logits)
    return probs - F.one_hot(y.long(), logits.shape[-1]).to(logits.dtype)


def linear_per_sample_grads(
    weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-example gradients ``(weight (R, B, K, d), bias (R, B, K))`` (the reference path)."""
    residual = linear_residuals(weight, bias, x, y)
    return residual.unsqueeze(-1) * x.unsqueeze(-2), residual


def linear_per_sample_norms(
    weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Per-example gradient norms (R, B): ``||r_i|| * sqrt(||x_i||^2 + 1)``."""
    residual = linear_residuals(weight, bias, x, y)
    return _norms(residual, x)


def linear_clipped_grad_sum(
    weight: torch.Tensor,
    bias: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    max_norm: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum over the batch of per-example gradients clipped to norm ``max_norm`` (R,).

    Fused: norms come from the closed form ``||r_i|| sqrt(||x_i||^2 + 1)`` (no per-example
    gradient is formed to clip it), the clip factor ``min(1, C / norm_i)`` (zero on padding,
    ``mask == False``) scales the residual, and one weighted row sum per class
    (``embedding_bag``) gives ``sum_i c_i r_i ⊗ x_i`` straight from x. ``max_norm = inf`` gives
    factor exactly 1, i.e. exactly :func:`linear_grad_sum`.
    Returns ``(grad_weight (R, K, d), grad_bias (R, K))``.
    """
    return clipped_outer_sum(linear_residuals(weight, bias, x, y), x, mask, max_norm)


def clipped_outer_sum(
    residual: torch.Tensor, x: torch.Tensor | IndexedRows, mask: torch.Tensor,
    max_norm: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``sum_i clip(r_i ⊗ [x_i, 1], C)`` for any per-example logit gradient ``residual`` (R, B, K).

    The per-example gradient of *any* loss of a linear model's logits is the outer product of
    its logit gradient r_i with [x_i, 1]; this is the fused clip-and-sum of
    :func:`linear_clipped_grad_sum` for losses other than plain cross-entropy (for example a
    Lagrangian with per-example constraint weights). Returns ``(grad_weight, grad_bias)``.
    Rows left in place on the CPU take the compiled loop over their non-zeros
    (:func:`~dpminimax.kernels.sparse_rows.sparse_clipped_outer_sum`, same sums in float64).
    """
    if sparse_rows_supported(x, residual):
        return sparse_clipped_outer_sum(residual, x, mask, max_norm)
    factors = clip_factors(_norms(residual, x), max_norm) * mask.to(residual.dtype)
    return _outer_sum(residual * factors.unsqueeze(-1), x)


def linear_grad_sum(
    weight: torch.Tensor, bias: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The plain (unclipped) gradient sum over unmasked examples, by the same reduction.

    ``linear_clipped_grad_sum`` with ``max_norm = inf`` equals this bit for bit.
    """
    residual = linear_residuals(weight, bias, x, y)
    return _outer_sum(residual * mask.to(residual.dtype).unsqueeze(-1), x)


def _outer_sum(scaled: torch.Tensor,
               x: torch.Tensor | IndexedRows) -> tuple[torch.Tensor, torch.Tensor]:
    """``(sum_i s_i ⊗ x_i (R, K, d), sum_i s_i (R, K))`` for weights s (R, B, K)."""
    return _weighted_row_sum(scaled, x), example_sum(scaled)


def _weighted_row_sum(weights: torch.Tensor, x: torch.Tensor | IndexedRows) -> torch.Tensor:
    """``sum_i weights[r, i, k] * x[r, i]`` (R, K, d) without forming the (R, B, K, d) product.

    ``embedding_bag`` in sum mode with per-sample weights: bag (r, k) accumulates the rows of
    run r in order, one multiply-add per row, so zero-weight padding rows appended at the end
    leave the bag's sum unchanged and every bag is computed alike wherever it sits.
    :class:`IndexedRows` are read from their source through their indices (no copy).
    """
    runs, batch, classes = weights.shape
    if isinstance(x, IndexedRows):
        rows, table = x.index.view(runs, 1, batch), x.source
    else:
        rows = torch.arange(runs * batch, device=x.device).view(runs, 1, batch)
        table = x.reshape(runs * batch, x.shape[-1])
    sums = F.embedding_bag(
        rows.expand(runs, classes, batch).reshape(-1),
        table,
        torch.arange(runs * classes, device=x.device) * batch,
        mode="sum",
        per_sample_weights=weights.transpose(1, 2).reshape(-1),
    )
    return sums.view(runs, classes, x.shape[-1])


def _norms(residual: torch.Tensor, x: torch.Tensor | IndexedRows) -> torch.Tensor:
    """``||r_i|| * ||[x_i, 1]||`` (R, B): the Frobenius norm of the outer product r_i ⊗ [x_i, 1]."""
    x_norm = x.norms() if isinstance(x, IndexedRows) else torch.linalg.vector_norm(x, dim=-1)
    return torch.linalg.vector_norm(residual, dim=-1) * torch.sqrt(x_norm * x_norm + 1.0)


def private_linear_step(
    state: dict[str, torch.Tensor],
    residual: torch.Tensor,
    x: torch.Tensor | IndexedRows,
    mask: torch.Tensor,
    *,
    release: NoisingRelease,
    generators: Sequence[torch.Generator],
    step_size: torch.Tensor,
) -> None:
    """One clipped, noised gradient step of a batched linear model, in place (Abadi et al. 2016,
    Alg. 1 lines "clip", "add noise", "descend") from per-example logit gradients.

    ``residual`` (R, B, K) is d(loss_i)/d(logits_i) of whatever per-example objective a method
    minimises (cross-entropy, a Lagrangian, a fairness-regularised loss); the per-example
    parameter gradient is ``residual_i ⊗ [x_i, 1]``, clipped to ``release.clip`` (R,), summed
    over the unmasked examples, noised by ``release`` from ``generators[r]`` and applied with
    ``step_size`` (R,) (for example lr_r / expected batch size).
    """
    grad_w, grad_b = clipped_outer_sum(residual, x, mask, release.clip)
    noisy_linear_descent(state, {"weight": grad_w, "bias": grad_b}, release=release,
                         generators=generators, step_size=step_size)


def noisy_linear_descent(state: dict[str, torch.Tensor], sums: dict[str, torch.Tensor], *,
                         release: NoisingRelease, generators: Sequence[torch.Generator],
                         step_size: torch.Tensor) -> None:
    """The tail of :func:`private_linear_step` for gradient sums computed elsewhere (clipped
    to ``release.clip``): ``release``'s noise from ``generators[r]`` on ``sums`` (``weight``
    (R, K, d), ``bias`` (R, K)), then ``state -= step_size_r * noisy``, in place."""
    grads = release.perturb(sums, generators)
    state["weight"] -= step_size.view(-1, 1, 1) * grads["weight"]
    state["bias"] -= step_size.view(-1, 1) * grads["bias"]
