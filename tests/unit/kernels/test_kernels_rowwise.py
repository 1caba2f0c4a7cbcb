"""The compiled row-wise logits and softmax against references, and their layout invariance."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.kernels.linear import linear_logits
from dpminimax.kernels.rowwise import (
    binary_probs,
    compiled_supported,
    row_logits,
    row_logits_supported,
    row_softmax,
)


def _inputs(runs, batch, features, classes, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(runs, classes, features, generator=g, dtype=dtype),
            torch.randn(runs, classes, generator=g, dtype=dtype),
            torch.randn(runs, batch, features, generator=g, dtype=dtype))


@settings(deadline=None, max_examples=30)
@given(st.integers(1, 4), st.integers(0, 40), st.integers(1, 130), st.sampled_from([1, 2, 5]),
       st.integers(0, 2**16), st.sampled_from([torch.float32, torch.float64]))
def test_row_logits_equal_the_dot_products(runs, batch, features, classes, seed, dtype):
    weight, bias, x = _inputs(runs, batch, features, classes, seed, dtype)
    reference = (torch.einsum("rbd,rkd->rbk", x.double(), weight.double())
                 + bias.double().unsqueeze(1))
    logits = row_logits(weight, bias, x)
    assert logits.dtype == dtype and logits.shape == (runs, batch, classes)
    tolerance = 1e-4 if dtype == torch.float32 else 1e-11
    torch.testing.assert_close(logits.double(), reference, rtol=tolerance, atol=tolerance)


@settings(deadline=None, max_examples=30)
@given(st.integers(2, 5), st.integers(1, 40), st.integers(1, 130), st.integers(0, 2**16))
def test_a_run_gets_the_same_bits_alone_and_among_others(runs, batch, features, seed):
    """Bit-identity: run r alone, on a prefix of its rows, equals its slice of the batched call
    (another batch length, another position, other neighbours)."""
    weight, bias, x = _inputs(runs, batch, features, 2, seed)
    together = row_logits(weight, bias, x)
    r, rows = runs // 2, max(1, batch // 2)
    alone = row_logits(weight[r:r + 1], bias[r:r + 1], x[r:r + 1, :rows].contiguous())
    assert torch.equal(alone[0], together[r, :rows])


def test_linear_logits_dispatch():
    """CPU rows without autograd take the compiled loop; autograd and broadcast views do not."""
    weight, bias, x = _inputs(2, 8, 6, 2, 0)
    assert row_logits_supported(weight, bias, x)
    assert torch.equal(linear_logits(weight, bias, x), row_logits(weight, bias, x))
    shared = x[0].unsqueeze(0).expand(2, -1, -1)
    assert not row_logits_supported(weight, bias, shared)
    weight.requires_grad_(True)
    assert not row_logits_supported(weight, bias, x)
    logits = linear_logits(weight, bias, x)
    logits.sum().backward()
    torch.testing.assert_close(weight.grad, x.sum(dim=1).unsqueeze(1).expand(-1, 2, -1))
    with torch.no_grad():
        assert row_logits_supported(weight, bias, x)
    assert not row_logits_supported(weight, bias, x.to(torch.float16))


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_count_does_not_change_bits(threads):
    weight, bias, x = _inputs(3, 300, 102, 2, 1)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = row_logits(weight, bias, x)
        torch.set_num_threads(threads)
        assert torch.equal(row_logits(weight, bias, x), one)
    finally:
        torch.set_num_threads(before)


@settings(deadline=None, max_examples=30)
@given(st.integers(1, 3), st.integers(0, 40), st.sampled_from([1, 2, 3, 7]),
       st.floats(0.1, 80.0), st.integers(0, 2**16),
       st.sampled_from([torch.float32, torch.float64]))
def test_row_softmax_equals_torch(runs, batch, classes, scale, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    z = scale * torch.randn(runs, batch, classes, generator=g, dtype=dtype)
    probs = row_softmax(z)
    assert probs.dtype == dtype and probs.shape == z.shape
    torch.testing.assert_close(probs, torch.softmax(z, dim=-1))
    if batch:
        torch.testing.assert_close(probs.sum(dim=-1), torch.ones(runs, batch, dtype=dtype))


def test_row_softmax_is_layout_invariant_and_handles_extremes():
    g = torch.Generator().manual_seed(3)
    z = 30 * torch.randn(4, 333, 2, generator=g)
    z[0, 0] = torch.tensor([1e30, -1e30])
    z[1, 1] = torch.tensor([float("-inf"), 0.0])
    together = row_softmax(z)
    assert torch.equal(together[0, 0], torch.tensor([1.0, 0.0]))
    assert torch.equal(together[1, 1], torch.tensor([0.0, 1.0]))
    alone = row_softmax(z[2:3, 100:217].contiguous())
    assert torch.equal(alone[0], together[2, 100:217])


def test_row_softmax_keeps_autograd():
    z = torch.randn(2, 5, 3, requires_grad=True)
    assert not compiled_supported(z)
    row_softmax(z)[..., 0].sum().backward()
    assert z.grad is not None and torch.isfinite(z.grad).all()


def test_shared_rows_give_every_run_the_bits_of_its_own_copy():
    """Evaluation reads rows (n, d) shared by all runs in place; each run gets exactly what the
    same rows copied into its own (R, n, d) slice give."""
    weight, bias, x = _inputs(3, 57, 102, 2, 4)
    shared = x[0]
    copies = shared.unsqueeze(0).expand(3, -1, -1).contiguous()
    assert row_logits_supported(weight, bias, shared)
    assert torch.equal(row_logits(weight, bias, shared), row_logits(weight, bias, copies))
    assert torch.equal(linear_logits(weight, bias, shared), row_logits(weight, bias, copies))
    weight.requires_grad_(True)   # the torch path broadcasts the shared rows instead
    torch.testing.assert_close(linear_logits(weight, bias, shared).detach(),
                               row_logits(weight.detach(), bias, copies))


@settings(deadline=None, max_examples=30)
@given(st.integers(1, 3), st.integers(0, 40), st.floats(0.1, 200.0), st.integers(0, 2**16),
       st.sampled_from([torch.float32, torch.float64]))
def test_binary_probs_are_the_pair_softmax_bit_for_bit(runs, batch, scale, seed, dtype):
    """sigmoid(z) = softmax([0, z])[1] with the row softmax's arithmetic, so Tran et al.
    2021a/b and binary DP-SGD keep their bits; close to torch.sigmoid."""
    g = torch.Generator().manual_seed(seed)
    z = scale * torch.randn(runs, batch, 1, generator=g, dtype=dtype)
    probs = binary_probs(z)
    assert probs.dtype == dtype and probs.shape == z.shape
    assert torch.equal(probs, row_softmax(torch.cat([torch.zeros_like(z), z], dim=-1))[..., 1:])
    torch.testing.assert_close(probs, torch.sigmoid(z))


def test_binary_probs_handle_extremes_and_keep_autograd():
    z = torch.tensor([[[1e30], [-1e30], [0.0], [float("-inf")]]])
    assert torch.equal(binary_probs(z), torch.tensor([[[1.0], [0.0], [0.5], [0.0]]]))
    w = torch.randn(2, 5, 1, requires_grad=True)
    assert not compiled_supported(w)
    binary_probs(w).sum().backward()
    torch.testing.assert_close(w.grad, (torch.sigmoid(w) * (1 - torch.sigmoid(w))).detach())
