"""Kernel benchmarks: one DP-SGD step of ours vs non-private SGD and vs Opacus, in one process.

Every method trains the same model on the same synthetic data. A *step* includes drawing the batch
(a Poisson sample for the DP methods, a slice of a shuffled permutation for non-private SGD),
gathering it, the gradient computation and the parameter update. Steps of all methods are
interleaved round by round (so background load hits them alike) and each time is the median over
``repeats`` rounds after ``warmup`` untimed rounds. Opacus uses ``grad_sample_mode="hooks"`` and
is given batches from our Poisson sampler (cheaper than its own O(n) sampler, so the comparison
favours Opacus).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import opacus
import torch
import torch.nn.functional as F
from torch import nn

from dpminimax.algorithms.baselines.noisy_sgd import NoisySgd
from dpminimax.bench.common import Step, interleaved_medians, opacus_private
from dpminimax.device import default_device
from dpminimax.kernels.allocator import retain_freed_memory
from dpminimax.kernels.gather import RowGatherer
from dpminimax.kernels.layerwise import layerwise_clipped_grad_sum
from dpminimax.kernels.noise import add_noise
from dpminimax.kernels.sampling import expected_batch_size, poisson_sample
from dpminimax.models import LogisticRegression, SmallCNN, logistic_loss
from dpminimax.models.batched import BatchedLogisticRegression
from dpminimax.privacy.release import BatchedRelease, Release
from dpminimax.seeding import make_generator

NOISE_MULTIPLIER = 1.0
MAX_NORM = 1.0
LR = 0.1


def run_kernel_benchmarks(
    repeats: int = 30,
    device: torch.device | str | None = None,
    *,
    warmup: int = 3,
    lr_examples: int = 32_768,
    lr_features: int = 102,
    lr_batch: int = 1024,
    cnn_examples: int = 8_192,
    cnn_batch: int = 128,
    batched_runs: int = 100,
) -> dict:
    """Median step times (ms) and the ratios the kernel targets are stated in.

    Ratios: ``lr_dp_over_nonprivate`` and ``cnn_dp_over_nonprivate`` (our DP-SGD step / a
    non-private torch autograd SGD step), ``lr_opacus_over_dp`` and ``cnn_opacus_over_dp`` (Opacus
    hooks DP step / ours) and ``batched_per_run_over_single`` (the per-run cost of
    ``batched_runs`` logistic-regression runs trained as one program / one run through the same
    code with R = 1).
    """
    device = torch.device(device) if device is not None else default_device()
    retain_freed_memory()  # as training does (api.train); applies to every method timed here
    generator = torch.Generator().manual_seed(0)
    lr_x = torch.randn(lr_examples, lr_features, generator=generator).to(device)
    lr_y = torch.randint(0, 2, (lr_examples,), generator=generator).to(device)
    cnn_x = torch.randn(cnn_examples, 1, 28, 28, generator=generator).to(device)
    cnn_y = torch.randint(0, 10, (cnn_examples,), generator=generator).to(device)

    steps = {
        "lr_dp": _linear_dp_step(lr_x, lr_y, lr_batch, runs=1, device=device),
        "lr_batched": _linear_dp_step(lr_x, lr_y, lr_batch, runs=batched_runs, device=device),
        "lr_nonprivate": _nonprivate_step(
            LogisticRegression(lr_features).to(device), logistic_loss, lr_x, lr_y, lr_batch
        ),
        "lr_opacus": _opacus_step(
            LogisticRegression(lr_features).to(device), logistic_loss, lr_x, lr_y, lr_batch
        ),
        "cnn_dp": _module_dp_step(SmallCNN().to(device), cnn_x, cnn_y, cnn_batch),
        "cnn_nonprivate": _nonprivate_step(
            SmallCNN().to(device), F.cross_entropy, cnn_x, cnn_y, cnn_batch
        ),
        "cnn_opacus": _opacus_step(SmallCNN().to(device), F.cross_entropy, cnn_x, cnn_y, cnn_batch),
    }
    with warnings.catch_warnings():  # Opacus hooks warn on every backward without input grads
        warnings.simplefilter("ignore", UserWarning)
        ms = interleaved_medians(steps, repeats, warmup, device)
    ms["lr_batched_per_run"] = ms.pop("lr_batched") / batched_runs
    return {
        "lr_dp_over_nonprivate": ms["lr_dp"] / ms["lr_nonprivate"],
        "lr_opacus_over_dp": ms["lr_opacus"] / ms["lr_dp"],
        "cnn_dp_over_nonprivate": ms["cnn_dp"] / ms["cnn_nonprivate"],
        "cnn_opacus_over_dp": ms["cnn_opacus"] / ms["cnn_dp"],
        "batched_per_run_over_single": ms["lr_batched_per_run"] / ms["lr_dp"],
        "median_ms": ms,
        "sizes": {
            "lr_examples": lr_examples, "lr_features": lr_features, "lr_batch": lr_batch,
            "cnn_examples": cnn_examples, "cnn_batch": cnn_batch, "batched_runs": batched_runs,
            "repeats": repeats, "warmup": warmup,
        },
        "torch": torch.__version__,
        "opacus": opacus.__version__,
        "device": str(device),
        "threads": torch.get_num_threads(),
    }


def _linear_dp_step(
    x: torch.Tensor, y: torch.Tensor, batch: int, runs: int, device: torch.device
) -> Step:
    """DP-SGD for ``runs`` logistic regressions: the training program itself (fused kernel)."""
    n, d = x.shape
    release = BatchedRelease([Release("gradient", "gaussian", NOISE_MULTIPLIER, MAX_NORM)] * runs,
                             device)
    program = NoisySgd(
        BatchedLogisticRegression(d, 1), RowGatherer(x), y, list(range(runs)),
        lr=torch.full((runs,), LR, device=device), release=release, q=batch / n,
        steps=1 << 30,
    )
    return program.step


def _module_dp_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int) -> Step:
    """DP-SGD for one network: fused layer-wise clipped sum (ghost norms for linear layers)."""
    n = len(x)
    q = batch / n
    device = x.device
    params = dict(model.named_parameters())
    clip = torch.tensor([MAX_NORM], device=device)
    sampling = make_generator(0, "poisson", device)
    noise = [make_generator(0, "noise", device)]
    scale = LR / expected_batch_size(n, q)

    def step() -> None:
        index = poisson_sample(n, q, sampling, device=device)
        summed = layerwise_clipped_grad_sum(model, x[index], y[index], F.cross_entropy, MAX_NORM)
        noisy = add_noise({k: v.unsqueeze(0) for k, v in summed.items()},
                          NOISE_MULTIPLIER * clip, noise)
        with torch.no_grad():
            for name, grad in noisy.items():
                params[name].sub_(grad[0], alpha=scale)

    return step


def _nonprivate_step(
    model: nn.Module, loss_fn: Callable, x: torch.Tensor, y: torch.Tensor, batch: int
) -> Step:
    """Plain mini-batch SGD with torch autograd on a fixed-size shuffled batch."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(1)).to(x.device)
    position = [0]

    def step() -> None:
        start = position[0] % (len(x) - batch + 1)
        index = order[start : start + batch]
        position[0] += batch
        loss = loss_fn(model(x[index]), y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def _opacus_step(
    model: nn.Module, loss_fn: Callable, x: torch.Tensor, y: torch.Tensor, batch: int
) -> Step:
    """Opacus DP-SGD (PrivacyEngine, ``grad_sample_mode="hooks"``) on our Poisson batches."""
    n = len(x)
    q = batch / n
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)
    private, optimizer, _ = opacus_private(model, loader, LR, NOISE_MULTIPLIER, MAX_NORM)
    optimizer.expected_batch_size = int(expected_batch_size(n, q))
    sampling = make_generator(0, "poisson", x.device)

    def step() -> None:
        index = poisson_sample(n, q, sampling, device=x.device)
        loss = loss_fn(private(x[index]), y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step
