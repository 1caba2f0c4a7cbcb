"""Rows left in place (IndexedRows) give the linear kernels exactly what gathered rows give."""

import pytest
import torch
from toydata import linear_batch

from dpminimax.kernels.gather import IndexedRows, RowGatherer, batch_values, compact_codes
from dpminimax.kernels.linear import clipped_outer_sum, linear_logits


def test_take_leaves_feature_rows_in_place_and_gathers_images():
    gatherer, index, *_ = linear_batch()
    rows = gatherer.take(index)
    assert isinstance(rows, IndexedRows) and rows.shape == (3, 11, 7)
    assert torch.equal(rows.gathered(), gatherer.source[index])
    torch.testing.assert_close(rows.norms(), gatherer.source[index].norm(dim=-1))
    images = RowGatherer(torch.randn(5, 1, 4, 4))
    pick = torch.tensor([[4, 0]])
    assert torch.equal(images.take(pick), images.source[pick])


@pytest.mark.parametrize("seed", range(5))
def test_linear_kernels_read_indexed_rows_like_gathered_rows(seed):
    gatherer, index, weight, bias, residual, mask = linear_batch(seed)
    rows, gathered = gatherer.take(index), gatherer.source[index].contiguous()
    # rows in place are read over their non-zeros in float64 (kernels.sparse_rows), gathered
    # rows densely in float32: the same logits to float rounding
    torch.testing.assert_close(linear_logits(weight, bias, rows),
                               linear_logits(weight, bias, gathered), rtol=1e-5, atol=1e-5)
    clip = torch.tensor([0.5, 1.0, float("inf")])
    for ours, reference in zip(clipped_outer_sum(residual, rows, mask, clip),
                               clipped_outer_sum(residual, gathered, mask, clip), strict=True):
        torch.testing.assert_close(ours, reference, rtol=1e-6, atol=1e-6)


def test_indexed_rows_fall_back_to_gathering_where_the_compiled_loop_cannot_go():
    gatherer, index, weight, bias, *_ = linear_batch(1)
    weight.requires_grad_(True)
    logits = linear_logits(weight, bias, gatherer.take(index))
    logits.sum().backward()
    torch.testing.assert_close(weight.grad, gatherer.source[index].sum(dim=1).unsqueeze(1)
                               .expand(-1, 2, -1))


@pytest.mark.parametrize("index_shape", [(7,), (3, 5), (2, 0)])
@pytest.mark.parametrize("value_shape", [(11,), (11, 4)])
def test_batch_values_are_advanced_indexing(index_shape, value_shape):
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(value_shape, generator=generator)
    index = torch.randint(0, value_shape[0], index_shape, generator=generator)
    picked = batch_values(values, index)
    assert picked.shape == values[index].shape
    assert torch.equal(picked, values[index])


@pytest.mark.parametrize(("largest", "dtype"), [(0, torch.int8), (127, torch.int8),
                                                (128, torch.int16), (40_000, torch.int32),
                                                (2**40, torch.int64)])
def test_compact_codes_keep_the_values_in_the_narrowest_dtype(largest, dtype):
    codes = torch.tensor([0, largest, largest // 2, 0])
    compact = compact_codes(codes)
    assert compact.dtype == dtype
    assert torch.equal(compact.to(torch.int64), codes)


def test_compact_codes_refuse_negative_codes():
    with pytest.raises(ValueError, match="non-negative"):
        compact_codes(torch.tensor([0, -1, 3]))
