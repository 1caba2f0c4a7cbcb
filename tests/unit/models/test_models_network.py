"""Networks with a run axis: GroupNorm per-example gradients, the residual tape, private steps."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.api.model_io import SAVED_MODELS, _plain_fields
from dpminimax.data import PreparedDataset
from dpminimax.kernels.clip import clip_and_accumulate
from dpminimax.kernels.layerwise import LayerTape, layerwise_per_sample_grads
from dpminimax.models import ResNet16
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.models.network import BatchedNetwork, batched_model
from dpminimax.privacy.release import BatchedRelease, Release
from dpminimax.seeding import make_generator


def _batch_of_one(model, x, loss_of_outputs):
    """Per-example gradients by one backward pass per example (the reference)."""
    rows = []
    for i in range(len(x)):
        model.zero_grad()
        loss_of_outputs(model(x[i:i + 1]), i).backward()
        rows.append({k: p.grad.clone() for k, p in model.named_parameters()})
    return {k: torch.stack([row[k] for row in rows]) for k in rows[0]}


def _small_resnet() -> torch.nn.Module:
    return ResNet16(num_classes=3, in_channels=2, groups=2, dropout=0.0, width=4).double()


@settings(deadline=None, max_examples=5)
@given(st.integers(1, 4), st.integers(0, 999))
def test_group_norm_per_example_grads_match_batch_of_one(batch, seed):
    torch.manual_seed(seed)
    model = _small_resnet()
    with torch.no_grad():  # non-trivial affine parameters
        for module in model.modules():
            if isinstance(module, torch.nn.GroupNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
    x = torch.randn(batch, 2, 16, 16, dtype=torch.float64)
    y = torch.randint(0, 3, (batch,))
    expected = _batch_of_one(model, x, lambda out, i: F.cross_entropy(out, y[i:i + 1]))
    got = layerwise_per_sample_grads(model, x, y, F.cross_entropy)
    assert got.keys() == expected.keys()
    assert any("stem.1" in key for key in got)  # a GroupNorm's parameters are covered
    for key in expected:
        torch.testing.assert_close(got[key], expected[key])


@pytest.mark.parametrize("max_norm", [0.01, 1.0, math.inf])
def test_tape_clips_any_residual_like_batch_of_one(max_norm):
    """``clipped_sum(r)`` = sum_i clip(grad of <r_i, outputs_i>) for an arbitrary residual."""
    torch.manual_seed(0)
    model = _small_resnet()
    x = torch.randn(5, 2, 16, 16, dtype=torch.float64)
    residual = torch.randn(5, 3, dtype=torch.float64)
    residual[3] = 0.0  # a padding slot contributes nothing
    per_example = _batch_of_one(model, x, lambda out, i: (out[0] * residual[i]).sum())
    expected = clip_and_accumulate({k: v.unsqueeze(0) for k, v in per_example.items()},
                                   torch.tensor([max_norm], dtype=torch.float64),
                                   torch.ones(1, 5, dtype=torch.bool))
    got = LayerTape(model, x).clipped_sum(residual, max_norm)
    for key in expected:
        torch.testing.assert_close(got[key], expected[key][0])


def test_private_step_without_noise_is_the_clipped_residual_step():
    """One step of two runs: run r's update is -step_r * sum_i clip(J_i^T r_i), checked
    against the batch-of-one reference on that run's own parameters; noise 0, no dropout."""
    net = BatchedNetwork("small_cnn", (1, 28, 28), 10)
    state = net.init_state(2, torch.device("cpu"), seeds=[3, 4])
    before = {k: v.clone() for k, v in state.items()}
    x = torch.randn(2, 4, 1, 28, 28)
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    targets = torch.randint(0, 10, (2, 4))

    def residual(logits):
        return torch.softmax(logits, dim=-1) - F.one_hot(targets, 10).to(logits.dtype)

    clip = torch.tensor([0.5, math.inf])
    release = BatchedRelease([Release("gradient", "gaussian", 0.0, float(c)) for c in clip])
    net.private_step(state, x, mask, residual, release=release,
                     generators=[make_generator(s, "noise") for s in (3, 4)],
                     step_size=torch.tensor([0.1, 0.2]),
                     dropout_streams=[make_generator(s, "dropout") for s in (3, 4)])
    for r in range(2):
        module = net.module
        module.load_state_dict({k: v[r] for k, v in before.items()})
        per_example = _batch_of_one(
            module, x[r], lambda out, i, r=r: F.cross_entropy(out, targets[r, i:i + 1]))
        summed = clip_and_accumulate({k: v.unsqueeze(0) for k, v in per_example.items()},
                                     clip[r:r + 1], mask[r:r + 1])
        for key in state:
            torch.testing.assert_close(state[key][r], before[key][r] - [0.1, 0.2][r]
                                       * summed[key][0], rtol=1e-4, atol=1e-6)


def test_init_is_per_seed_and_reproducible():
    net = BatchedNetwork("small_cnn", (1, 28, 28), 10)
    a = net.init_state(2, torch.device("cpu"), seeds=[1, 2])
    b = net.init_state(1, torch.device("cpu"), seeds=[2])
    assert not torch.equal(a["0.weight"][0], a["0.weight"][1])
    torch.testing.assert_close(a["0.weight"][1], b["0.weight"][0], rtol=0, atol=0)


def test_logits_of_a_dataset_equal_those_of_its_tensor():
    net = BatchedNetwork("small_cnn", (1, 28, 28), 10)
    state = net.init_state(2, torch.device("cpu"), seeds=[0, 1])
    x = torch.randn(300, 1, 28, 28)  # more than one evaluation chunk
    images = [x[i] for i in range(len(x))]  # a map-style "dataset" of image tensors
    torch.testing.assert_close(net.logits(state, x), net.logits(state, images))
    assert net.predict(state, x).shape == (2, 300)


def _image_dataset(kind: str = "image", shape=(1, 28, 28)) -> PreparedDataset:
    x = np.zeros((4, *shape), dtype=np.float32)
    return PreparedDataset(name="imgs", kind=kind, x_train=x, y_train=np.zeros(4, dtype=np.int64),
                           s_train=np.zeros(4, dtype=np.int64), x_test=x,
                           y_test=np.zeros(4, dtype=np.int64), s_test=np.zeros(4, dtype=np.int64),
                           feature_names=[], label_names=["a", "b"], group_names=["g0", "g1"])


def test_batched_model_refuses_mismatched_model_and_data():
    with pytest.raises(ValueError, match="set the method parameter model to a network"):
        batched_model(_image_dataset(), "logistic_regression", 2)
    tabular = _image_dataset("tabular")
    with pytest.raises(ValueError, match="model: logistic_regression"):
        batched_model(tabular, "vgg9", 2)
    with pytest.raises(ValueError, match="unknown network architecture"):
        batched_model(_image_dataset(), "resnet99", 2)
    assert batched_model(_image_dataset(), "small_cnn", 2).input_shape == (1, 28, 28)


def test_saved_network_spec_rebuilds_the_model():
    net = BatchedNetwork("vgg9", (3, 16, 16), 9)
    fields = _plain_fields(net)
    assert fields == {"architecture": "vgg9", "input_shape": [3, 16, 16], "num_classes": 9}
    assert SAVED_MODELS[net.name](**fields) == net


@pytest.mark.parametrize("architecture, shape", [
    ("small_cnn", (1, 28, 28)), ("resnet20_small", (1, 28, 28)), ("resnet16_small", (3, 32, 32)),
    ("vgg9", (3, 32, 32))])
def test_scale_logits_multiplies_each_runs_logits(architecture, shape):
    """The output layer is the one applied last: scaling it scales the logits, run by run."""
    model = BatchedNetwork(architecture, shape, 2)
    state = model.init_state(2, torch.device("cpu"), [0, 1])
    x = torch.randn(5, *shape, generator=torch.Generator().manual_seed(0))
    factor = torch.tensor([0.125, 1.0])
    scaled = model.logits(model.scale_logits(state, factor), x)
    torch.testing.assert_close(scaled, model.logits(state, x) * factor.view(2, 1, 1))


def test_scale_logits_of_logistic_regression():
    model = BatchedLogisticRegression(3, num_classes=1)
    state = {"weight": torch.randn(2, 1, 3), "bias": torch.randn(2, 1)}
    x = torch.randn(4, 3)
    factor = torch.tensor([0.5, 2.0])
    torch.testing.assert_close(model.logits(model.scale_logits(state, factor), x),
                               model.logits(state, x) * factor.view(2, 1, 1))
