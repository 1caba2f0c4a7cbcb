"""Per-example clipping and accumulation (Abadi et al. 2016, Alg. 1, "clip gradient").

Every example's gradient g_i is scaled by ``min(1, C / ||g_i||)`` so that its norm is at most C;
the sum of clipped gradients then has l2 sensitivity C under add/remove-one neighbours, which is
what the Gaussian mechanism's noise is calibrated to. All tensors carry a leading run axis R, and
C is a per-run tensor (R,).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

# Guards C / 0 for an all-zero gradient; far below any gradient norm that matters.
TINY = 1e-12
# Examples per block of :func:`example_sum`; fixed so that reductions never depend on B.
EXAMPLE_BLOCK = 64


def per_sample_norms(grads: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Global l2 norm (R, B) of each example's gradient across all parameter tensors (R, B, ...)."""
    norms = [torch.linalg.vector_norm(grad.flatten(start_dim=2), dim=-1) for grad in grads.values()]
    return torch.linalg.vector_norm(torch.stack(norms), dim=0)


def clip_factors(norms: torch.Tensor, max_norm: torch.Tensor) -> torch.Tensor:
    """``min(1, C / (norm + tiny))`` (R, B) for norms (R, B) and per-run C (R,); 1 where C = inf."""
    bound = torch.as_tensor(max_norm, dtype=norms.dtype, device=norms.device).unsqueeze(-1)
    return torch.clamp(bound / (norms + TINY), max=1.0)


def clip_scaled(values: torch.Tensor, norms: torch.Tensor, max_norm: torch.Tensor
                ) -> torch.Tensor:
    """``values`` (R, X, ...) with each slice ``values[r, x]``, of norm ``norms[r, x]`` (R, X)
    (given: the caller knows it in closed form), scaled by its :func:`clip_factors` at the
    per-run ``max_norm`` (R,), so that its norm is at most C_r."""
    factors = clip_factors(norms, max_norm)
    return values * factors.view(*factors.shape, *[1] * (values.dim() - factors.dim()))


def clip_each_run(values: Mapping[str, torch.Tensor], max_norm: torch.Tensor
                  ) -> dict[str, torch.Tensor]:
    """Each run's whole vector (the tensors (R, ...) of ``values`` flattened and joined; one
    row per run, so the same bits alone or among other runs) clipped to its ``max_norm`` (R,)."""
    norms = torch.linalg.vector_norm(
        torch.cat([v.flatten(start_dim=1) for v in values.values()], dim=1), dim=-1)
    factor = clip_factors(norms.unsqueeze(-1), max_norm)[:, 0]
    return {k: v * factor.view(-1, *[1] * (v.dim() - 1)) for k, v in values.items()}


def example_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum (R, ...) over the example axis of ``values`` (R, B, ...), invariant to zero padding.

    The batch is zero-padded to a multiple of :data:`EXAMPLE_BLOCK`, each block is summed by
    torch's reduction over a fixed-length axis, and the block sums are combined left to right by a
    cumulative sum (a sequential scan on the CPU). Appending zero examples only appends zero
    blocks, which leave the scan's last value unchanged, and no step depends on R or on the run's
    position in the batch; a run thus gets the same bits padded to its own batch size or to the
    largest batch of R runs. (A BLAS matrix product gives no such guarantee.)
    """
    runs, batch = values.shape[:2]
    pad = -batch % EXAMPLE_BLOCK
    if pad:
        values = torch.cat([values, values.new_zeros(runs, pad, *values.shape[2:])], dim=1)
    blocks = values.view(runs, -1, EXAMPLE_BLOCK, *values.shape[2:]).sum(dim=2)
    return blocks.cumsum(dim=1)[:, -1]


def clipped_sum(vectors: torch.Tensor, max_norm: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
    """Sum (R, d) over examples of per-example vectors (R, B, d) clipped at the per-run
    ``max_norm`` (R,) (:func:`example_sum`: bit-identical across batch compositions); masked
    (padding) examples contribute exactly zero."""
    weights = clip_factors(torch.linalg.vector_norm(vectors, dim=-1), max_norm)
    if mask is not None:
        weights = weights * mask.to(vectors.dtype)
    return example_sum(weights.unsqueeze(-1) * vectors)


def clip_and_accumulate(
    grads: Mapping[str, torch.Tensor], max_norm: torch.Tensor, mask: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Sum over examples of clipped per-example gradients: ``{name: (R, ...)}``.

    Fused: the per-example weights ``clip factor * mask`` (R, B) are formed once, then each tensor
    is reduced by one einsum (a batched matrix-vector product), so no clipped copy of the
    per-example gradients is materialised. Masked (padding) examples contribute exactly zero.
    The einsum runs on BLAS, so unlike the linear kernels this generic path is equal across
    batch compositions only to rounding, not bit for bit.
    """
    weights = clip_factors(per_sample_norms(grads), max_norm) * mask.to(
        next(iter(grads.values())).dtype
    )
    return {name: torch.einsum("rb,rb...->r...", weights, grad) for name, grad in grads.items()}
