"""torch.func and layer-wise per-example gradients equal batch-of-one autograd."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.kernels.clip import clip_and_accumulate
from dpminimax.kernels.layerwise import (
    layerwise_clipped_grad_sum,
    layerwise_per_sample_grads,
    supports_layerwise,
)
from dpminimax.kernels.per_sample import (
    batched_per_sample_grads,
    per_sample_grads,
    stack_params,
)
from dpminimax.models import MLP, LogisticRegression, SmallCNN, logistic_loss


def _autograd_per_example(model, x, y, loss_fn):
    rows = []
    for i in range(len(x)):
        model.zero_grad()
        loss_fn(model(x[i : i + 1]), y[i : i + 1]).backward()
        rows.append({k: p.grad.clone() for k, p in model.named_parameters()})
    return {k: torch.stack([row[k] for row in rows]) for k in rows[0]}


def _check(model, x, y, loss_fn, layerwise=True):
    model = model.double()
    x = x.double()
    expected = _autograd_per_example(model, x, y, loss_fn)
    params = {k: p.detach() for k, p in model.named_parameters()}
    paths = [per_sample_grads(model, params, {}, x, y, loss_fn)]
    if layerwise:
        paths.append(layerwise_per_sample_grads(model, x, y, loss_fn))
    for got in paths:
        assert got.keys() == expected.keys()
        for key in expected:
            torch.testing.assert_close(got[key], expected[key])


@settings(deadline=None, max_examples=10)
@given(st.integers(1, 6), st.integers(1, 8), st.sampled_from([1, 3]), st.integers(0, 999))
def test_logistic_regression(batch, d, classes, seed):
    torch.manual_seed(seed)
    x = torch.randn(batch, d)
    y = torch.randint(0, max(classes, 2), (batch,))
    _check(LogisticRegression(d, classes), x, y, logistic_loss)


@settings(deadline=None, max_examples=10)
@given(
    st.integers(1, 6), st.integers(1, 6),
    st.lists(st.integers(1, 7), min_size=0, max_size=2), st.integers(2, 4), st.integers(0, 999),
)
def test_mlp(batch, d, hidden, classes, seed):
    torch.manual_seed(seed)
    x = torch.randn(batch, d)
    y = torch.randint(0, classes, (batch,))
    _check(MLP(d, hidden, classes, activation="tanh"), x, y, F.cross_entropy)


@settings(deadline=None, max_examples=4)
@given(st.integers(1, 4), st.sampled_from(["tanh", "relu"]), st.integers(0, 999))
def test_small_cnn(batch, activation, seed):
    torch.manual_seed(seed)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    _check(SmallCNN(activation=activation), x, y, F.cross_entropy)


def test_batched_runs_equal_single_runs():
    torch.manual_seed(0)
    models = [MLP(4, [5], 3).double() for _ in range(3)]
    x = torch.randn(3, 6, 4, dtype=torch.float64)
    y = torch.randint(0, 3, (3, 6))
    batched = batched_per_sample_grads(models[0], stack_params(models), {}, x, y,
                                       F.cross_entropy)
    for r, model in enumerate(models):
        params = {k: p.detach() for k, p in model.named_parameters()}
        single = per_sample_grads(model, params, {}, x[r], y[r], F.cross_entropy)
        for key in single:
            torch.testing.assert_close(batched[key][r], single[key])


def test_layerwise_rejects_unsupported_layers():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    assert not supports_layerwise(model)
    with pytest.raises(ValueError, match="torch.func"):
        layerwise_per_sample_grads(model, torch.randn(2, 3), torch.zeros(2), F.mse_loss)


@settings(deadline=None, max_examples=6)
@given(st.integers(1, 6), st.sampled_from([0.05, 1.0, float("inf")]), st.integers(0, 999))
def test_fused_layerwise_clipped_sum_equals_clip_of_batch_of_one_grads(batch, max_norm, seed):
    """Ghost norms (linear layers) + materialised conv grads give the clipped sum exactly."""
    torch.manual_seed(seed)
    model = SmallCNN().double()
    x = torch.randn(batch, 1, 28, 28, dtype=torch.float64)
    y = torch.randint(0, 10, (batch,))
    reference = clip_and_accumulate(
        {k: v.unsqueeze(0) for k, v in _autograd_per_example(model, x, y, F.cross_entropy).items()},
        torch.tensor([max_norm], dtype=torch.float64), torch.ones(1, batch, dtype=torch.bool),
    )
    fused = layerwise_clipped_grad_sum(model, x, y, F.cross_entropy, max_norm)
    assert fused.keys() == reference.keys()
    for key in reference:
        torch.testing.assert_close(fused[key], reference[key][0])
