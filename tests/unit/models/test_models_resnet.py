"""GroupNorm ResNet16 (RaCO-DP CelebA model): shapes, parameter count, per-example gradients."""

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpminimax.kernels.per_sample import per_sample_grads
from dpminimax.models.resnet import ResNet16

# conv weights (no bias) + dense weight/bias + GroupNorm affine, at 3 inputs / 2 classes / w=64
STEM = 7 * 7 * 3 * 64
LAYER1 = 4 * 9 * 64 * 64
LAYER2 = 9 * 64 * 128 + 3 * 9 * 128 * 128 + 64 * 128  # incl. 1x1 projection
LAYER3 = 9 * 128 * 256 + 3 * 9 * 256 * 256 + 128 * 256
LAYER4 = 9 * 256 * 512 + 9 * 512 * 512 + 256 * 512
CONV = STEM + LAYER1 + LAYER2 + LAYER3 + LAYER4
DENSE = 512 * 2 + 2
NORM = 2 * (5 * 64 + 5 * 128 + 5 * 256 + 3 * 512)
EXPECTED = 6_456_898


def _count(model):
    return sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return ResNet16()


def test_parameter_count(model):
    assert CONV + DENSE == 6_449_346  # conv + dense ~6.45M
    assert CONV + DENSE + NORM == EXPECTED
    assert _count(model) == EXPECTED
    assert abs(_count(model) - 6.4e6) / 6.4e6 < 0.05  # paper: "6.4M parameters"


def test_forward_shape(model):
    model.eval()
    with torch.no_grad():
        assert model(torch.randn(2, 3, 128, 128)).shape == (2, 2)
    small = ResNet16(num_classes=5, in_channels=1, groups=4, width=16).eval()
    with torch.no_grad():
        assert small(torch.randn(3, 1, 64, 64)).shape == (3, 5)


def test_groupnorm_everywhere_no_batchnorm(model):
    modules = list(model.modules())
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in modules)
    norms = [m for m in modules if isinstance(m, nn.GroupNorm)]
    assert len(norms) == 18  # stem + 2 per block x 7 + 3 projection shortcuts
    assert all(m.num_groups == 16 and m.eps == 1e-5 for m in norms)
    convs = [m for m in modules if isinstance(m, nn.Conv2d)]
    assert len(convs) == 18 and all(c.bias is None for c in convs)
    assert model.stem[0].kernel_size == (7, 7) and model.stem[0].stride == (2, 2)
    assert isinstance(model.stem[3], nn.MaxPool2d)
    dropouts = [m for m in modules if isinstance(m, nn.Dropout)]
    assert len(dropouts) == 9 and all(m.p == 0.3 for m in dropouts)  # stem + 7 blocks + head


def test_groups_must_divide_width():
    with pytest.raises(ValueError, match="groups"):
        ResNet16(width=24)


def test_examples_are_independent_in_eval(model):
    """GroupNorm has no batch statistics: an example's output does not depend on its batch."""
    model.eval()
    x = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        batch = model(x)
        single = torch.cat([model(x[i : i + 1]) for i in range(3)])
    torch.testing.assert_close(batch, single, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_per_sample_grads_match_batch_of_one(model):
    model.eval()
    torch.manual_seed(1)
    x, y = torch.randn(2, 3, 32, 32), torch.tensor([0, 1])
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    loss_fn = nn.functional.cross_entropy
    grads = per_sample_grads(model, params, buffers, x, y, loss_fn)
    assert set(grads) == set(params)
    for i in range(2):
        model.zero_grad()
        loss_fn(model(x[i : i + 1]), y[i : i + 1]).backward()
        for name, p in model.named_parameters():
            assert grads[name].shape == (2, *p.shape)
            torch.testing.assert_close(grads[name][i], p.grad, rtol=1e-4, atol=1e-5)
    model.zero_grad()


def test_train_mode_dropout_under_vmap_needs_randomness():
    """In training mode, vmap over dropout runs with randomness="different" (not the default)."""
    torch.manual_seed(2)
    model = ResNet16(groups=4, width=16).train()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = torch.randn(2, 3, 32, 32), torch.tensor([1, 0])

    def loss(p, x_i, y_i):
        out = functional_call(model, p, (x_i.unsqueeze(0),))
        return nn.functional.cross_entropy(out, y_i.unsqueeze(0))

    with pytest.raises(RuntimeError, match="randomness"):
        vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    grads = vmap(grad(loss), in_dims=(None, 0, 0), randomness="different")(params, x, y)
    assert grads["fc.weight"].shape == (2, 2, 128)
    assert all(torch.isfinite(g).all() for g in grads.values())
