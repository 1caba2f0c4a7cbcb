"""Paper 004's CUDA path (skipped without CUDA): per-example gradients of ResNet20-GN on CUDA
(im2col) equal the CPU path (grouped-convolution weight gradients), and a DP Double-SPIDER /
DP Recursive-SPIDER job trains on CUDA with its planned noise."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from dpminimax.algorithms import get_method
from dpminimax.algorithms.base import RunSpec
from dpminimax.metrics.kl_dro import loss_residuals
from dpminimax.models.network import BatchedNetwork

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from toydata import toy_images  # noqa: E402 (the unit tests' hand-made datasets)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
CUDA, CPU = torch.device("cuda"), torch.device("cpu")


@pytest.mark.parametrize("architecture, shape", [("resnet20_small", (1, 28, 28)),
                                                 ("resnet20", (3, 32, 32)),
                                                 ("small_cnn", (3, 32, 32))])
def test_per_example_grads_cuda_equal_cpu(architecture, shape):
    model = BatchedNetwork(architecture, shape, 2)
    state = {k: v.double() for k, v in model.init_state(2, CPU, [0, 1]).items()}
    torch.manual_seed(0)
    x = torch.randn(2, 6, *shape, dtype=torch.float64)
    y = torch.randint(0, 2, (2, 6))
    module = model.module.double()
    assert module is model.module

    def residual(logits, labels):
        return loss_residuals(logits, labels)

    _, cpu = model.per_example_grads(state, x, lambda z: residual(z, y))
    model.module.to(CUDA)
    _, cuda = model.per_example_grads({k: v.to(CUDA) for k, v in state.items()}, x.to(CUDA),
                                      lambda z: residual(z, y.to(CUDA)))
    for key in cpu:
        torch.testing.assert_close(cuda[key].cpu(), cpu[key], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["dp_double_spider", "dp_recursive_spider", "dp_sgda_dro"])
def test_a_dro_job_trains_on_cuda(name):
    data = toy_images()
    method = get_method(name)
    runs = [RunSpec(seed, 2.0, 1e-5, {"model": "small_cnn", "batch_size": 16,
                                      "anchor_batch_size": 32, "epochs": 1.0, "period": 3,
                                      "eval_every": 4, "curve_rows": 32}) for seed in (0, 1)]
    fit = method.fit(data, runs, CUDA)
    assert all(torch.isfinite(v).all() for v in fit.state.values())
    assert all(v.device.type == "cuda" for v in fit.state.values())
    assert fit.accounting[0]["epsilon"] <= 2.0 * (1 + 1e-6)
    assert math.isfinite(float(np.mean([r["dro_gradient_norm"] for r in fit.counters])))
