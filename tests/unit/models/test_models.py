"""Model shapes and parameter counts."""

import pytest
import torch

from dpminimax.models import MLP, LogisticRegression, SmallCNN


def _count(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("classes", [1, 3])
def test_logistic_regression_shapes(classes):
    model = LogisticRegression(102, classes)
    assert model.weight.shape == (classes, 102) and model.bias.shape == (classes,)
    assert model(torch.randn(4, 102)).shape == (4, classes)
    assert _count(model) == 103 * classes


def test_mlp_count():
    model = MLP(10, [20, 5], 3)
    assert _count(model) == (10 * 20 + 20) + (20 * 5 + 5) + (5 * 3 + 3)
    assert model(torch.randn(2, 10)).shape == (2, 3)
    assert _count(MLP(4, [], 2)) == 10


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_small_cnn_matches_opacus_mnist_example(activation):
    model = SmallCNN(activation=activation)
    assert _count(model) == 26_010  # Opacus MNIST example / Papernot et al. 2021
    assert model(torch.randn(3, 1, 28, 28)).shape == (3, 10)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())


def test_small_cnn_channels():
    assert SmallCNN(in_channels=3, num_classes=5)(torch.randn(2, 3, 28, 28)).shape == (2, 5)


def test_shared_input_prediction_matches_the_per_run_prediction():
    from dpminimax.models.batched import BatchedLogisticRegression

    generator = torch.Generator().manual_seed(0)
    for classes in (1, 2, 3):
        model = BatchedLogisticRegression(7, classes)
        state = {"weight": torch.randn(5, classes, 7, generator=generator),
                 "bias": torch.randn(5, classes, generator=generator)}
        x = torch.randn(300, 7, generator=generator)
        assert torch.equal(model.predict_shared(state, x), model.predict(state, x))
