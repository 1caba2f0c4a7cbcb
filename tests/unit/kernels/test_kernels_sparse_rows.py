"""The compiled loops over sparse rows (kernels.sparse_rows) and per-group sums
(kernels.grouped): against dense torch references, padding skipped, and bit for bit the same for
a run alone as among others."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from toydata import linear_batch

from dpminimax.kernels.clip import clip_factors, clipped_sum
from dpminimax.kernels.grouped import grouped_sums
from dpminimax.kernels.sparse_rows import (
    clip_factor,
    clipped_coefficient,
    clipped_outer_row,
    sparse_clipped_outer_sum,
    sparse_logits,
    sparse_rows_supported,
)


def _sparse_setup(seed, runs=4, batch=15):
    """Rows with about two thirds zeros (row 0 all zeros), indices, parameters, residuals, mask."""
    return linear_batch(seed, n=60, d=9, runs=runs, batch=batch, density=0.35)


@pytest.mark.parametrize("seed", range(4))
def test_sparse_logits_are_the_dense_row_dot_products(seed):
    gatherer, index, weight, bias, *_ = _sparse_setup(seed)
    rows = gatherer.take(index)
    assert sparse_rows_supported(rows, weight, bias)
    x = gatherer.source[index].double()
    expected = torch.einsum("rbd,rkd->rbk", x, weight.double()) + bias.double().unsqueeze(1)
    torch.testing.assert_close(sparse_logits(weight, bias, rows), expected.float())


@pytest.mark.parametrize("seed", range(4))
def test_sparse_clipped_outer_sum_is_the_sum_of_clipped_per_example_gradients(seed):
    gatherer, index, _, _, residual, mask = _sparse_setup(seed)
    clip = torch.tensor([0.3, 1.0, 5.0, float("inf")])
    x = gatherer.source[index].double()
    grads = torch.cat([residual.double().unsqueeze(-1) * x.unsqueeze(-2),
                       residual.double().unsqueeze(-1)], dim=-1)              # (R, B, K, d+1)
    norms = grads.flatten(start_dim=2).norm(dim=-1)
    factors = clip_factors(norms, clip.double()) * mask
    assert bool((factors[mask] < 1).any()) and bool((factors[mask] == 1).any())
    expected = (factors.view(*factors.shape, 1, 1) * grads).sum(dim=1)
    weight, bias = sparse_clipped_outer_sum(residual, gatherer.take(index), mask, clip)
    torch.testing.assert_close(weight, expected[..., :-1].float())
    torch.testing.assert_close(bias, expected[..., -1].float())


def test_sparse_kernels_give_a_run_the_same_bits_alone_and_among_others():
    gatherer, index, weight, bias, residual, mask = _sparse_setup(7, runs=5, batch=20)
    clip = torch.tensor([0.5, 1.0, 2.0, 0.1, float("inf")])
    logits = sparse_logits(weight, bias, gatherer.take(index))
    sums = sparse_clipped_outer_sum(residual, gatherer.take(index), mask, clip)
    for r in range(5):
        own = int(mask[r].nonzero().max()) + 1          # the run's batch padded to its own length
        alone = gatherer.take(index[r:r + 1, :own].contiguous())
        assert torch.equal(sparse_logits(weight[r:r + 1], bias[r:r + 1], alone)[0],
                           logits[r, :own])
        single = sparse_clipped_outer_sum(residual[r:r + 1, :own].contiguous(), alone,
                                          mask[r:r + 1, :own].contiguous(), clip[r:r + 1])
        assert torch.equal(single[0][0], sums[0][r]) and torch.equal(single[1][0], sums[1][r])


def test_sparse_kernels_skip_padding_whatever_its_rows_hold():
    gatherer, index, _, _, residual, mask = _sparse_setup(2)
    clip = torch.ones(4)
    before = sparse_clipped_outer_sum(residual, gatherer.take(index), mask, clip)
    scrambled = torch.where(mask, index, (index + 17) % 60)
    noise = torch.where(mask.unsqueeze(-1), residual, residual * 100 + 3)
    after = sparse_clipped_outer_sum(noise, gatherer.take(scrambled), mask, clip)
    assert torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


@pytest.mark.parametrize("seed", range(3))
def test_grouped_sums_compiled_and_torch_forms_agree_and_skip_padding(seed):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(3, 25, 2, generator=g)
    groups = torch.randint(0, 4, (3, 25), generator=g)
    mask = torch.rand(3, 25, generator=g) < 0.6
    compiled = grouped_sums(values, groups, mask, 4)
    reference = grouped_sums(values.clone().requires_grad_(True), groups, mask, 4)  # torch form
    torch.testing.assert_close(compiled, reference.detach())
    for r in range(3):
        for c in range(4):
            members = (groups[r] == c) & mask[r]
            torch.testing.assert_close(compiled[r, c], values[r, members].sum(dim=0))
    alone = grouped_sums(values[1:2].contiguous(), groups[1:2], mask[1:2], 4)
    assert torch.equal(alone[0], compiled[1])
    ones = torch.cat([torch.ones_like(values[..., :1]), values], dim=-1)
    with_counts = grouped_sums(values, groups, mask, 4, counts=True)
    assert torch.equal(with_counts, grouped_sums(ones, groups, mask, 4))   # same bits
    torch.testing.assert_close(grouped_sums(values.clone().requires_grad_(True), groups, mask, 4,
                                            counts=True).detach(), with_counts)
    assert torch.equal(with_counts[..., 0], (F.one_hot(groups, 4) * mask.unsqueeze(-1)).sum(1)
                       .to(values.dtype))


def test_the_compiled_clip_factor_is_the_torch_primitive_bit_for_bit():
    """kernels.sparse_rows.clip_factor (numba, inside compiled loops) and
    kernels.clip.clip_factors (torch) are one formula min(1, C / (norm + tiny)): equal in
    float64 on norms from 0 to 1e12, around the bound, and for C = inf (no clipping)."""
    generator = torch.Generator().manual_seed(0)
    norms = torch.cat([torch.tensor([0.0, 1e-13, 1e-12, 0.3, 0.5, 0.5 + 1e-15, 2.0, 1e12]),
                       torch.rand(200, generator=generator, dtype=torch.float64) * 4]).double()
    for bound in (1e-3, 0.5, 1.0, 3.7, float("inf")):
        torch_factors = clip_factors(norms.unsqueeze(0), torch.tensor([bound],
                                                                      dtype=torch.float64))[0]
        compiled = torch.tensor([clip_factor(float(norm), bound) for norm in norms],
                                dtype=torch.float64)
        assert torch.equal(compiled, torch_factors), bound


BOUNDS = (1e-3, 0.5, 1.0, 3.7, float("inf"))


def test_clipped_coefficient_is_the_torch_clip_of_the_per_example_gradient():
    """kernels.sparse_rows.clipped_coefficient(a, b, ||v||, C) (the clipped per-example
    coefficients of DP-FERMI's compiled step) is clip_factors(|a b| ||v||, C) a b of the torch
    primitive bit for bit in float64, and the clipped gradient's norm is at most C, at bounds
    that bind and that do not."""
    generator = torch.Generator().manual_seed(1)
    a, b = (torch.randn(300, generator=generator, dtype=torch.float64) for _ in range(2))
    a[:100] = 1.0                                          # the single-value form
    vector_norms = torch.rand(300, generator=generator, dtype=torch.float64) * 5
    for bound in BOUNDS:
        expected = clip_factors((a * b).abs().unsqueeze(0) * vector_norms,
                                torch.tensor([bound], dtype=torch.float64))[0] * a * b
        compiled = torch.tensor([clipped_coefficient(float(a_i), float(b_i), float(n_i), bound)
                                 for a_i, b_i, n_i in zip(a, b, vector_norms, strict=True)],
                                dtype=torch.float64)
        assert torch.equal(compiled, expected), bound
        assert bool((compiled.abs() * vector_norms <= min(bound, 1e300) * (1 + 1e-12)).all())
        assert bound > 10 or bool((compiled.abs() * vector_norms > 0.99 * bound).any())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_clipped_outer_row_is_the_torch_clipped_sum_of_the_outer_products(dtype):
    """kernels.sparse_rows.clipped_outer_row (the clipped residuals of every compiled outer
    sum): ``r_i ⊗ [x_i, 1]`` scaled by f r_i equals torch's clipped_sum of the dense per-example
    gradients (to rounding: the norms are summed differently), each clipped gradient's norm is
    at most C, and the rows under the bound are unchanged."""
    generator = torch.Generator().manual_seed(2)
    residual = torch.randn(40, 3, generator=generator).to(dtype)
    x = torch.randn(40, 6, generator=generator).to(dtype)
    x_norms = torch.linalg.vector_norm(x, dim=-1)
    grads = torch.cat([residual.unsqueeze(-1) * x.unsqueeze(-2), residual.unsqueeze(-1)],
                      dim=-1).double().flatten(start_dim=1)             # (B, K (d + 1))
    for bound in BOUNDS:
        out = np.empty((40, 3))
        for i in range(40):
            clipped_outer_row(residual[i].numpy(), x_norms[i].item(), bound, out[i])
        out = torch.from_numpy(out)
        ours = torch.cat([out.unsqueeze(-1) * x.double().unsqueeze(-2), out.unsqueeze(-1)],
                         dim=-1).flatten(start_dim=1)
        expected = clipped_sum(grads.unsqueeze(0), torch.tensor([bound]).double())[0]
        torch.testing.assert_close(ours.sum(dim=0), expected, rtol=1e-6, atol=1e-9)
        norms = torch.linalg.vector_norm(ours, dim=-1)
        assert bool((norms <= min(bound, 1e300) * (1 + 1e-6)).all()), bound
        under = torch.linalg.vector_norm(grads, dim=-1) < bound
        assert torch.equal(out[under], residual[under].double()), bound
