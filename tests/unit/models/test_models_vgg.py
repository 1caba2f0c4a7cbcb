"""DP-FERMI's 9-layer VGG-like CNN: parameter count, shapes, per-example independence, gradients."""

import pytest
import torch
from torch import nn

from dpminimax.kernels.per_sample import per_sample_grads
from dpminimax.models.vgg import VGG9

# (in, out) of the nine 3x3 convs with bias (DP-FERMI's released model)
CONVS = [(3, 8), (8, 16), (16, 16), (16, 32), (32, 64), (64, 64), (64, 128), (128, 256),
         (256, 256)]
CONV_PARAMS = sum(9 * c_in * c_out + c_out for c_in, c_out in CONVS)


def _count(model):
    return sum(p.numel() for p in model.parameters())


def test_parameter_count_and_head_at_128_with_9_classes():
    model = VGG9()
    assert CONV_PARAMS == 1_022_880
    assert (model.head.in_features, model.head.out_features) == (65_536, 9)
    assert _count(model.head) == 589_833
    assert _count(model) == 1_612_713  # paper: "~1.6 million"
    assert list(model.buffers()) == []  # no running statistics by default


def test_output_shape_and_strides_at_128():
    model = VGG9().eval()
    x = torch.randn(2, 3, 128, 128)
    with torch.no_grad():
        assert model.features(x).shape == (2, 256, 16, 16)
        assert model(x).shape == (2, 9)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels) for c in convs] == CONVS
    assert [c.stride[0] for c in convs] == [1, 1, 2] * 3
    assert all(c.kernel_size == (3, 3) and c.padding == (1, 1) and c.bias is not None
               for c in convs)


def test_instance_norm_sites_have_no_parameters():
    model = VGG9()
    norms = [m for m in model.modules() if isinstance(m, nn.InstanceNorm2d)]
    assert [m.num_features for m in norms] == [16, 16, 64, 64, 256, 256]
    assert all(not m.affine and _count(m) == 0 for m in norms)
    faithful = VGG9(track_running_stats=True)
    assert _count(faithful) == 1_612_713  # running statistics are buffers, not parameters
    assert sum(b.numel() for b in faithful.buffers()) == 2 * (16 + 16 + 64 + 64 + 256 + 256) + 6


def test_head_follows_input_size_and_classes():
    model = VGG9(num_classes=5, in_channels=1, input_size=32)
    assert model.head.in_features == 256 * 4 * 4
    assert _count(model) == CONV_PARAMS - 9 * 2 * 8 + 4096 * 5 + 5  # conv1_1 has 1 input channel
    with torch.no_grad():
        assert model(torch.randn(3, 1, 32, 32)).shape == (3, 5)
    for bad in (0, 30, 4):
        with pytest.raises(ValueError, match="multiple of 8"):
            VGG9(input_size=bad)


def test_instance_norm_normalises_each_example_by_itself():
    torch.manual_seed(0)
    model = VGG9(input_size=32)
    x = torch.randn(4, 3, 32, 32)
    with torch.no_grad():
        out = model(x)
        alone = torch.cat([model(x[i:i + 1]) for i in range(4)])
        changed = x.clone()
        changed[1:] = 100 * torch.randn(3, 3, 32, 32)
        first = model(changed)[0]
        before = model.features[:4](x)  # conv1_1, ReLU, conv1_2, ReLU
        normed = model.features[4](before)  # the first InstanceNorm
    torch.testing.assert_close(out, alone, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(first, out[0], rtol=1e-4, atol=1e-5)
    mean = before.mean(dim=(2, 3), keepdim=True)  # per example and channel
    var = before.var(dim=(2, 3), unbiased=False, keepdim=True)
    torch.testing.assert_close(normed, (before - mean) / torch.sqrt(var + 1e-5), rtol=1e-4,
                               atol=1e-5)


def test_per_sample_grads_match_a_batch_of_one_reference():
    torch.manual_seed(1)
    model = VGG9(input_size=32).double()  # float64: the two paths agree to rounding
    x, y = torch.randn(2, 3, 32, 32, dtype=torch.float64), torch.tensor([3, 7])
    params = {k: v.detach() for k, v in model.named_parameters()}
    grads = per_sample_grads(model, params, dict(model.named_buffers()), x, y,
                             nn.functional.cross_entropy)
    assert set(grads) == set(params)
    for i in range(2):
        loss = nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1])
        reference = torch.autograd.grad(loss, list(model.parameters()))
        for (name, _), ref in zip(model.named_parameters(), reference, strict=True):
            assert grads[name].shape == (2, *ref.shape)
            torch.testing.assert_close(grads[name][i], ref, rtol=1e-8, atol=1e-10)
    assert not torch.allclose(grads["head.weight"][0], grads["head.weight"][1])
