"""Clipping bounds every example's contribution; noise has the right law and streams."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpminimax.kernels.clip import (
    clip_and_accumulate,
    clip_each_run,
    clip_factors,
    clip_scaled,
    clipped_sum,
    example_sum,
    per_sample_norms,
)
from dpminimax.kernels.noise import add_noise
from dpminimax.privacy.release import BatchedRelease, Release
from dpminimax.seeding import make_generator


def _grads(runs, batch, seed, scale):
    g = torch.Generator().manual_seed(seed)
    return {
        "a": scale * torch.randn(runs, batch, 3, 2, generator=g, dtype=torch.float64),
        "b": scale * torch.randn(runs, batch, 5, generator=g, dtype=torch.float64),
    }


@settings(deadline=None, max_examples=60)
@given(
    st.integers(1, 3), st.integers(1, 20), st.integers(0, 2**16),
    st.floats(1e-6, 1e4), st.floats(1e-3, 10.0),
)
def test_clipped_norms_never_exceed_max_norm(runs, batch, seed, scale, bound):
    grads = _grads(runs, batch, seed, scale)
    max_norm = torch.full((runs,), bound, dtype=torch.float64)
    factors = clip_factors(per_sample_norms(grads), max_norm)
    clipped = {k: v * factors.view(runs, batch, *[1] * (v.dim() - 2)) for k, v in grads.items()}
    assert torch.all(per_sample_norms(clipped) <= bound * (1 + 1e-12))
    assert torch.all(factors <= 1.0)
    # Each example moves the clipped sum by at most C (the sensitivity).
    mask = torch.ones(runs, batch, dtype=torch.bool)
    summed = clip_and_accumulate(grads, max_norm, mask)
    mask[:, 0] = False
    without = clip_and_accumulate(grads, max_norm, mask)
    diff = per_sample_norms({k: (summed[k] - without[k]).unsqueeze(1) for k in grads})
    assert torch.all(diff <= bound * (1 + 1e-9))


def test_norms_are_global_l2():
    grads = _grads(2, 4, 0, 1.0)
    flat = torch.cat([grads["a"].flatten(2), grads["b"]], dim=2)
    torch.testing.assert_close(per_sample_norms(grads), flat.norm(dim=-1))


def test_infinite_clip_is_exactly_one_and_plain_sum():
    grads = _grads(2, 7, 1, 3.0)
    inf = torch.full((2,), math.inf, dtype=torch.float64)
    assert torch.equal(clip_factors(per_sample_norms(grads), inf), torch.ones(2, 7,
                                                                               dtype=torch.float64))
    mask = torch.ones(2, 7, dtype=torch.bool)
    summed = clip_and_accumulate(grads, inf, mask)
    for key, value in grads.items():
        torch.testing.assert_close(summed[key], value.sum(dim=1))


def test_masked_examples_contribute_nothing():
    grads = _grads(1, 6, 2, 1.0)
    mask = torch.tensor([[True, False, True, False, False, True]])
    summed = clip_and_accumulate(grads, torch.tensor([0.5], dtype=torch.float64), mask)
    kept = clip_and_accumulate(
        {k: v[:, mask[0]] for k, v in grads.items()},
        torch.tensor([0.5], dtype=torch.float64),
        torch.ones(1, 3, dtype=torch.bool),
    )
    for key in grads:
        torch.testing.assert_close(summed[key], kept[key])


def test_example_sum_invariant_to_zero_padding():
    values = torch.randn(3, 150, 4)
    padded = torch.cat([values, torch.zeros(3, 77, 4)], dim=1)
    torch.testing.assert_close(example_sum(values), values.sum(dim=1))
    assert torch.equal(example_sum(values), example_sum(padded))


def test_noise_std_chi_square():
    """Sample variance of 20000 noise coordinates: chi-square test against std^2."""
    dim, std = 20_000, 2.5
    zeros = torch.zeros(2, dim, dtype=torch.float64)
    gens = [make_generator(0, "noise"), make_generator(1, "noise")]
    noisy = add_noise(zeros, torch.tensor([std, 0.5 * std], dtype=torch.float64), gens)
    for row, scale in zip(noisy, [std, 0.5 * std], strict=True):
        assert abs(row.mean()) < 4 * scale / math.sqrt(dim)
        chi2 = (row**2).sum() / scale**2  # ~ chi2(dim)
        assert abs(chi2 - dim) < 4 * math.sqrt(2 * dim)


def test_noise_deterministic_per_run_stream():
    values = {"w": torch.zeros(3, 4, 2), "b": torch.zeros(3, 4)}
    std = torch.tensor([1.0, 0.0, 2.0])
    first = add_noise(values, std, [make_generator(s, "n") for s in range(3)])
    alone = add_noise(
        {k: v[2:] for k, v in values.items()}, std[2:], [make_generator(2, "n")]
    )
    for key in values:
        assert torch.equal(first[key][2:], alone[key])
        assert torch.equal(first[key][1], values[key][1])  # std 0: unchanged


def test_zero_std_draws_nothing_and_returns_input():
    value = torch.randn(2, 5)
    gens = [make_generator(0, "n"), make_generator(1, "n")]
    states = [g.get_state() for g in gens]
    assert torch.equal(add_noise(value, torch.zeros(2), gens), value)
    assert all(torch.equal(g.get_state(), s) for g, s in zip(gens, states, strict=True))


def test_noise_needs_one_generator_per_run():
    with pytest.raises(ValueError):
        add_noise(torch.zeros(2, 3), torch.ones(2), [make_generator(0, "n")])


@pytest.mark.parametrize("distribution, law, mirror", [
    ("laplace", "laplace", None), ("negated_gumbel", "gumbel_l", "gumbel_r")])
def test_noise_has_its_distribution(distribution, law, mirror):
    """Kolmogorov-Smirnov against the law at scale b at a fixed seed: Laplace(0, b), and
    -Gumbel(0, b) (scipy's gumbel_l), which plain Gumbel (gumbel_r) must fail."""
    from scipy import stats

    scale = 2.5
    noisy = add_noise(torch.zeros(1, 20_000, dtype=torch.float64), torch.tensor([scale]),
                      [make_generator(0, distribution)], distribution=distribution)[0]
    assert torch.isfinite(noisy).all()
    assert stats.kstest(noisy.numpy(), getattr(stats, law)(scale=scale).cdf).pvalue > 1e-3
    if mirror is not None:
        assert stats.kstest(noisy.numpy(), getattr(stats, mirror)(scale=scale).cdf).pvalue < 1e-6


def test_unknown_noise_distribution_is_an_error():
    from dpminimax.kernels.noise import add_noise
    from dpminimax.seeding import make_generator

    with pytest.raises(ValueError, match="laplace"):
        add_noise(torch.zeros(1, 3), torch.ones(1), [make_generator(0, "x")], distribution="cauchy")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("size", [1, 7, 15, 16, 17, 103, 1031])
def test_noise_rows_are_the_draws_of_randn_and_rand(dtype, size):
    """Each run's row is filled in place from its own stream: the numbers ``torch.randn(size)``
    (Gaussian) and, for Laplace, ``-log1p(-u0) + log1p(-u1)`` of ``torch.rand(2, size)`` in
    float64, with the generator left where those calls leave it. Rows past the first sit at
    unaligned offsets of the shared buffer (size odd), which must not change the draws."""
    std = torch.tensor([1.5, 0.0, 0.5], dtype=dtype)
    zeros = torch.zeros(3, size, dtype=dtype)
    for distribution in ("gaussian", "laplace"):
        gens = [make_generator(s, distribution) for s in range(3)]
        noisy = add_noise(zeros, std, gens, distribution)
        for r in (0, 2):
            reference = make_generator(r, distribution)
            if distribution == "gaussian":
                draws = torch.randn(size, generator=reference, dtype=dtype)
            else:
                u = torch.rand(2, size, generator=reference, dtype=torch.float64)
                draws = (torch.log1p(-u[1]) - torch.log1p(-u[0])).to(dtype)
            assert torch.equal(noisy[r], std[r] * draws)
            assert torch.equal(gens[r].get_state(), reference.get_state())
        assert torch.equal(noisy[1], zeros[1])


def test_clipped_sum_clips_each_example_and_drops_masked_ones():
    """Per-run bounds (R,), examples (R, B, d): each example scaled to norm <= C, padding rows
    contribute nothing; equals the batch-of-one reference summed by hand."""
    generator = torch.Generator().manual_seed(0)
    vectors = torch.randn(2, 5, 3, generator=generator, dtype=torch.float64) * 4
    bound = torch.tensor([1.0, 0.5], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    expected = torch.stack([
        sum(v * min(1.0, float(bound[r]) / float(torch.linalg.vector_norm(v)))
            for v, keep in zip(vectors[r], mask[r], strict=True) if keep)
        for r in range(2)])
    torch.testing.assert_close(clipped_sum(vectors, bound, mask), expected)
    torch.testing.assert_close(clipped_sum(vectors[1:], bound[1:]), expected[1:])


@pytest.mark.parametrize("clip, bound", [(None, 2.0), (1.0, 1.0), (7.0, 7.0)])
@pytest.mark.parametrize("as_dict", [False, True])
def test_privatize_clips_at_the_release_bound_sums_then_adds_the_sensitivity_noise(
        clip, bound, as_dict):
    """BatchedRelease.privatize: every unmasked example clipped at the release's own bound
    (its clip, else its sensitivity 2), summed, plus the noise of scale multiplier x
    sensitivity drawn from the run's stream (the same draws as perturb)."""
    generator = torch.Generator().manual_seed(3)
    vectors = torch.randn(2, 6, 4, generator=generator, dtype=torch.float64) * 5
    mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    releases = [Release("g", "gaussian", multiplier, 2.0, clip) for multiplier in (0, 3)]
    release = BatchedRelease(releases, dtype=torch.float64)
    expected = torch.stack([
        sum(v * min(1.0, bound / float(torch.linalg.vector_norm(v)))
            for v, keep in zip(vectors[r], mask[r], strict=True) if keep) for r in range(2)])
    per_example = {"v": vectors} if as_dict else vectors
    streams = [make_generator(seed, "noise") for seed in (0, 1)]
    out = release.privatize(per_example, streams, mask)
    out = out["v"] if as_dict else out
    torch.testing.assert_close(out[0], expected[0])                      # no noise
    noise = torch.randn(4, generator=make_generator(1, "noise"), dtype=torch.float64)
    torch.testing.assert_close(out[1], expected[1] + 3.0 * 2.0 * noise)  # std 3 x 2


def test_a_release_refuses_a_clip_that_is_not_positive():
    with pytest.raises(ValueError, match="clip must be > 0"):
        Release("g", "gaussian", 1.0, 1.0, 0.0)


def test_clip_scaled_and_clip_each_run_bound_each_slice_and_each_run():
    """clip_scaled: slice (r, x) of known norm scaled to norm <= C_r (unchanged below it);
    clip_each_run: run r's joined tensors scaled to norm <= C_r together."""
    generator = torch.Generator().manual_seed(5)
    values = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64) * 3
    bound = torch.tensor([1.0, 100.0], dtype=torch.float64)
    clipped = clip_scaled(values, torch.linalg.vector_norm(values, dim=-1), bound)
    torch.testing.assert_close(torch.linalg.vector_norm(clipped[0], dim=-1),
                               torch.ones(3, dtype=torch.float64))
    assert torch.equal(clipped[1], values[1])
    runs = clip_each_run({"w": values, "b": values[:, 0, :1]}, bound)
    joined = torch.cat([runs["w"].flatten(start_dim=1), runs["b"]], dim=1)
    torch.testing.assert_close(torch.linalg.vector_norm(joined[0]),
                               torch.tensor(1.0, dtype=torch.float64))
    assert torch.equal(runs["w"][1], values[1]) and torch.equal(runs["b"][1], values[1, 0, :1])
