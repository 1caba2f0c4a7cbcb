"""``per_example_grads`` of the batched models against batch-of-one autograd references."""

import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from dpminimax.kernels.gather import RowGatherer
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.network import BatchedNetwork

RUNS, BATCH = 2, 3


def _ce_residual(y):
    return lambda logits: torch.softmax(logits, -1) - F.one_hot(y, logits.shape[-1]).to(logits)


def _weighted_residual(y, weights):
    return lambda logits: weights.unsqueeze(-1) * _ce_residual(y)(logits)


def _reference(loss_of_logits, logits_fn, params, x, y, weights):
    """(R, B, *shape) gradients of weights_ri * loss(logits(x_ri), y_ri), one example at a time."""
    out = {k: torch.zeros(RUNS, BATCH, *v.shape[1:], dtype=v.dtype) for k, v in params.items()}
    for r in range(RUNS):
        for i in range(BATCH):
            own = {k: v[r].detach().clone().requires_grad_(True) for k, v in params.items()}
            loss = weights[r, i] * loss_of_logits(logits_fn(own, x[r, i:i + 1]), y[r, i:i + 1])
            for k, g in zip(own, torch.autograd.grad(loss, list(own.values())), strict=True):
                out[k][r, i] = g
    return out


def _check(logits, grads, state, reference, batch_logits):
    assert set(grads) == set(state)
    assert logits.shape[:2] == (RUNS, BATCH)
    torch.testing.assert_close(logits, batch_logits)
    for k in state:
        assert grads[k].shape == (RUNS, BATCH, *state[k].shape[1:])
        torch.testing.assert_close(grads[k], reference[k], rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("architecture", ["resnet20_small", "small_cnn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_network(architecture, weighted):
    torch.manual_seed(0)
    net = BatchedNetwork(architecture, (1, 28, 28), 3)
    module = net.module.double()
    state = {k: v.double() for k, v in net.init_state(RUNS, torch.device("cpu")).items()}
    x = torch.randn(RUNS, BATCH, 1, 28, 28, dtype=torch.float64)
    y = torch.randint(0, 3, (RUNS, BATCH))
    weights = torch.rand(RUNS, BATCH, dtype=torch.float64) if weighted else torch.ones(
        RUNS, BATCH, dtype=torch.float64)
    residual = _weighted_residual(y, weights) if weighted else _ce_residual(y)
    logits, grads = net.per_example_grads(state, x, residual)
    reference = _reference(F.cross_entropy,
                           lambda p, xi: functional_call(module.eval(), p, (xi,)),
                           state, x, y, weights)
    _check(logits, grads, state, reference, net.logits(state, x))


def _binary_loss(logits, y):
    return F.binary_cross_entropy_with_logits(logits[:, 0], y.to(logits.dtype))


@pytest.mark.parametrize("classes", [1, 2, 4])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("indexed", [False, True])
def test_logistic_regression(classes, weighted, indexed):
    torch.manual_seed(1)
    features = 5
    model = BatchedLogisticRegression(features, num_classes=classes)
    state = {"weight": torch.randn(RUNS, classes, features, dtype=torch.float64),
             "bias": torch.randn(RUNS, classes, dtype=torch.float64)}
    source = torch.randn(10, features, dtype=torch.float64)
    index = torch.randint(0, 10, (RUNS, BATCH))
    x = source[index]
    y = torch.randint(0, max(classes, 2), (RUNS, BATCH))
    weights = torch.rand(RUNS, BATCH, dtype=torch.float64) if weighted else torch.ones(
        RUNS, BATCH, dtype=torch.float64)
    if classes == 1:
        def residual(logits):
            return weights.unsqueeze(-1) * (torch.sigmoid(logits)
                                            - y.unsqueeze(-1).to(logits.dtype))
        loss = _binary_loss
    else:
        residual = _weighted_residual(y, weights)
        loss = F.cross_entropy
    inputs = x if not indexed else RowGatherer(source).take(index)
    logits, grads = model.per_example_grads(state, inputs, residual)
    reference = _reference(loss, lambda p, xi: xi @ p["weight"].T + p["bias"], state, x, y,
                           weights)
    _check(logits, grads, state, reference, model.logits(state, x))
