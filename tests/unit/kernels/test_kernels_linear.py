"""Closed-form linear kernels against autograd and the torch.func path."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.kernels.clip import clip_and_accumulate
from dpminimax.kernels.linear import (
    linear_clipped_grad_sum,
    linear_logits,
    linear_losses,
    linear_per_sample_grads,
)
from dpminimax.kernels.per_sample import batched_per_sample_grads
from dpminimax.models import LogisticRegression, logistic_loss

shapes = st.tuples(
    st.integers(1, 3),  # R
    st.integers(1, 70),  # B
    st.integers(1, 9),  # d
    st.sampled_from([1, 2, 4]),  # K
    st.integers(0, 2**16),  # seed
)


def _problem(runs, batch, d, classes, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    weight = torch.randn(runs, classes, d, generator=g, dtype=dtype)
    bias = torch.randn(runs, classes, generator=g, dtype=dtype)
    x = 2 * torch.randn(runs, batch, d, generator=g, dtype=dtype)
    y = torch.randint(0, max(classes, 2), (runs, batch), generator=g)
    mask = torch.rand(runs, batch, generator=g) < 0.8
    max_norm = torch.rand(runs, generator=g, dtype=dtype) * 2
    return weight, bias, x, y, mask, max_norm


@settings(deadline=None, max_examples=25)
@given(shapes)
def test_per_sample_grads_match_batch_of_one_autograd(shape):
    weight, bias, x, y, _, _ = _problem(*shape)
    grad_w, grad_b = linear_per_sample_grads(weight, bias, x, y)
    runs, batch = x.shape[:2]
    for r in range(runs):
        for i in range(batch):
            model = LogisticRegression(x.shape[-1], weight.shape[1]).double()
            with torch.no_grad():
                model.weight.copy_(weight[r])
                model.bias.copy_(bias[r])
            logistic_loss(model(x[r, i : i + 1]), y[r, i : i + 1]).backward()
            torch.testing.assert_close(grad_w[r, i], model.weight.grad)
            torch.testing.assert_close(grad_b[r, i], model.bias.grad)


@settings(deadline=None, max_examples=25)
@given(shapes)
def test_closed_form_equals_torch_func(shape):
    weight, bias, x, y, _, _ = _problem(*shape)
    model = LogisticRegression(x.shape[-1], weight.shape[1]).double()
    func = batched_per_sample_grads(
        model, {"weight": weight, "bias": bias}, {}, x, y, logistic_loss
    )
    grad_w, grad_b = linear_per_sample_grads(weight, bias, x, y)
    torch.testing.assert_close(func["weight"], grad_w)
    torch.testing.assert_close(func["bias"], grad_b)


@settings(deadline=None, max_examples=40)
@given(shapes)
def test_fused_clipped_sum_equals_reference(shape):
    weight, bias, x, y, mask, max_norm = _problem(*shape)
    grad_w, grad_b = linear_per_sample_grads(weight, bias, x, y)
    reference = clip_and_accumulate({"weight": grad_w, "bias": grad_b}, max_norm, mask)
    fused_w, fused_b = linear_clipped_grad_sum(weight, bias, x, y, mask, max_norm)
    torch.testing.assert_close(fused_w, reference["weight"])
    torch.testing.assert_close(fused_b, reference["bias"])


@settings(deadline=None, max_examples=25)
@given(shapes)
def test_infinite_clip_is_the_plain_sum(shape):
    weight, bias, x, y, mask, _ = _problem(*shape)
    inf = torch.full((x.shape[0],), float("inf"), dtype=x.dtype)
    fused_w, fused_b = linear_clipped_grad_sum(weight, bias, x, y, mask, inf)
    grad_w, grad_b = linear_per_sample_grads(weight, bias, x, y)
    keep = mask.to(x.dtype)
    torch.testing.assert_close(fused_w, torch.einsum("rb,rbkd->rkd", keep, grad_w))
    torch.testing.assert_close(fused_b, torch.einsum("rb,rbk->rk", keep, grad_b))


def test_logits_and_losses_match_module():
    weight, bias, x, y, _, _ = _problem(2, 5, 3, 4, 0)
    model = LogisticRegression(3, 4).double()
    with torch.no_grad():
        model.weight.copy_(weight[1])
        model.bias.copy_(bias[1])
    torch.testing.assert_close(linear_logits(weight, bias, x)[1], model(x[1]))
    losses = linear_losses(weight, bias, x, y)
    torch.testing.assert_close(losses[1].mean(), logistic_loss(model(x[1]), y[1]))
