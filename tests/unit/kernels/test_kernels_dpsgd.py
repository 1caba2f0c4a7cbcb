"""A DP-SGD step built from the kernels: reduction to SGD and batched-vs-single bit-identity."""

import math

import torch

from dpminimax.kernels.linear import linear_clipped_grad_sum, linear_grad_sum, linear_losses
from dpminimax.kernels.noise import add_noise
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.seeding import make_generator


def dp_sgd_step(state, x, y, n, q, lr, clip, noise_std, sampling, noise):
    """Abadi et al. 2016, Alg. 1 for R logistic regressions (the test's own tiny step)."""
    index, mask = poisson_batches(n, q, sampling)
    grad_w, grad_b = linear_clipped_grad_sum(
        state["weight"], state["bias"], x[index], y[index], mask, clip
    )
    noisy = add_noise({"weight": grad_w, "bias": grad_b}, noise_std, noise)
    scale = lr / expected_batch_size(n, q)
    return {
        "weight": state["weight"] - scale.view(-1, 1, 1) * noisy["weight"],
        "bias": state["bias"] - scale.view(-1, 1) * noisy["bias"],
    }


def sgd_step(state, x, y, n, q, lr, sampling):
    """Plain mini-batch SGD on the same Poisson batch: the unclipped gradient sum / qn."""
    index, mask = poisson_batches(n, q, sampling)
    grad_w, grad_b = linear_grad_sum(state["weight"], state["bias"], x[index], y[index], mask)
    scale = lr / expected_batch_size(n, q)
    return {
        "weight": state["weight"] - scale.view(-1, 1, 1) * grad_w,
        "bias": state["bias"] - scale.view(-1, 1) * grad_b,
    }


def _data(n=600, d=5, classes=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, d, generator=g, dtype=torch.float64),
            torch.randint(0, max(classes, 2), (n,), generator=g))


def test_zero_noise_infinite_clip_is_sgd_exactly():
    x, y = _data()
    n, q, runs = len(x), 0.05, 2
    state = {"weight": torch.zeros(runs, 1, 5, dtype=torch.float64),
             "bias": torch.zeros(runs, 1, dtype=torch.float64)}
    plain = dict(state)
    lr = torch.tensor([0.5, 1.0], dtype=torch.float64)
    inf = torch.full((runs,), math.inf, dtype=torch.float64)
    zero = torch.zeros(runs, dtype=torch.float64)
    dp_gens = [make_generator(s, "poisson") for s in range(runs)]
    sgd_gens = [make_generator(s, "poisson") for s in range(runs)]
    noise = [make_generator(s, "noise") for s in range(runs)]
    for _ in range(4):
        state = dp_sgd_step(state, x, y, n, q, lr, inf, zero, dp_gens, noise)
        plain = sgd_step(plain, x, y, n, q, lr, sgd_gens)
        for key in state:
            assert torch.equal(state[key], plain[key])
    # ... and the plain step is the gradient autograd computes (to rounding).
    index, mask = poisson_batches(n, q, [make_generator(0, "poisson")])
    weight = torch.zeros(1, 1, 5, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(1, 1, dtype=torch.float64, requires_grad=True)
    (linear_losses(weight, bias, x[index], y[index]) * mask).sum().backward()
    grad_w, grad_b = linear_grad_sum(weight.detach(), bias.detach(), x[index], y[index], mask)
    torch.testing.assert_close(grad_w, weight.grad)
    torch.testing.assert_close(grad_b, bias.grad)


def _train(seeds, x, y, classes, steps=5, dtype=torch.float32):
    runs, d = len(seeds), x.shape[1]
    n, q = len(x), 0.08
    state = {"weight": torch.zeros(runs, classes, d, dtype=dtype),
             "bias": torch.zeros(runs, classes, dtype=dtype)}
    lr = torch.tensor([0.1 + 0.05 * s for s in seeds], dtype=dtype)
    clip = torch.tensor([0.5 + 0.25 * s for s in seeds], dtype=dtype)
    noise_std = torch.tensor([0.3 * (s % 3) for s in seeds], dtype=dtype) * clip
    sampling = [make_generator(s, "poisson") for s in seeds]
    noise = [make_generator(s, "noise") for s in seeds]
    for _ in range(steps):
        state = dp_sgd_step(state, x, y, n, q, lr, clip, noise_std, sampling, noise)
    return state


def test_batched_runs_bit_identical_to_single_runs():
    for classes, d in [(1, 13), (3, 7)]:
        x, y = _data(n=1_500, d=d, classes=classes, seed=classes)
        x = x.float()
        seeds = list(range(6))
        batched = _train(seeds, x, y, classes)
        for r, seed in enumerate(seeds):
            alone = _train([seed], x, y, classes)
            for key in batched:
                assert torch.equal(batched[key][r], alone[key][0]), (classes, seed, key)
