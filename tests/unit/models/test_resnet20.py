"""GroupNorm ResNet20 (DP-DRO model, no BatchNorm): parameter count, shapes, LayerTape."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from dpminimax.kernels.layerwise import LayerTape, supports_layerwise
from dpminimax.models.network import ARCHITECTURES, BatchedNetwork
from dpminimax.models.resnet20 import ResNet20

# conv weights (no bias) + GroupNorm affine + dense, at 3 inputs / 10 classes / width 16
STEM = 9 * 3 * 16 + 2 * 16
STAGE1 = 3 * (2 * 9 * 16 * 16 + 2 * 2 * 16)
STAGE2 = (9 * 16 * 32 + 9 * 32 * 32 + 16 * 32 + 3 * 2 * 32) + 2 * (2 * 9 * 32 * 32 + 2 * 2 * 32)
STAGE3 = (9 * 32 * 64 + 9 * 64 * 64 + 32 * 64 + 3 * 2 * 64) + 2 * (2 * 9 * 64 * 64 + 2 * 2 * 64)
DENSE = 64 * 10 + 10


def _count(model):
    return sum(p.numel() for p in model.parameters())


def test_parameter_count():
    assert STEM + STAGE1 + STAGE2 + STAGE3 + DENSE == 272_474  # 1x1 shortcuts
    assert _count(ResNet20()) == 272_474
    assert _count(ResNet20(num_classes=2, in_channels=1)) == 271_666  # MNIST-ST binary
    assert _count(ARCHITECTURES["resnet20"]((1, 28, 28), 2)) == 271_666
    assert _count(ARCHITECTURES["resnet20_small"]((1, 28, 28), 2)) == 68_378


def test_structure():
    model = ResNet20()
    modules = list(model.modules())
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in modules)
    norms = [m for m in modules if isinstance(m, nn.GroupNorm)]
    assert len(norms) == 21 and all(m.num_groups == 8 for m in norms)  # stem + 18 + 2 shortcuts
    convs = [m for m in modules if isinstance(m, nn.Conv2d)]
    assert len(convs) == 21 and all(c.bias is None for c in convs)
    assert supports_layerwise(model)
    with pytest.raises(ValueError, match="divisible"):
        ResNet20(groups=3)


@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32)])
@pytest.mark.parametrize("name", ["resnet20", "resnet20_small"])
def test_output_shape(name, shape):
    model = ARCHITECTURES[name](shape, 10).eval()
    with torch.no_grad():
        assert model(torch.randn(3, *shape)).shape == (3, 10)


@pytest.mark.slow
def test_layertape_matches_batch_of_one_autograd():
    torch.manual_seed(0)
    net = BatchedNetwork("resnet20_small", (1, 28, 28), 2)
    model = net.module.double().eval()
    params = {k: v[0].double().requires_grad_(True)
              for k, v in net.init_state(1, torch.device("cpu"), seeds=[3]).items()}
    x = torch.randn(4, 1, 28, 28, dtype=torch.float64)
    y = torch.tensor([0, 1, 1, 0])
    tape = LayerTape(model, x, parameters=params)
    grads = tape.per_sample_grads(F.cross_entropy(tape.outputs, y, reduction="sum"))
    assert set(grads) == set(params)
    for i in range(len(x)):
        loss = F.cross_entropy(functional_call(model, params, (x[i:i + 1],)), y[i:i + 1])
        reference = torch.autograd.grad(loss, list(params.values()))
        for (name, _), ref in zip(params.items(), reference, strict=True):
            torch.testing.assert_close(grads[name][i], ref, rtol=1e-9, atol=1e-11)
