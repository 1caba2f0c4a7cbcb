"""Poisson sampling: exactness (statistics at fixed seeds), determinism, batching."""

import math

import pytest
import torch

from dpminimax.kernels import sampling
from dpminimax.kernels.sampling import (
    _chunk_size,
    _gap_sums,
    expected_batch_size,
    poisson_batches,
    poisson_sample,
)
from dpminimax.seeding import make_generator


def test_sorted_unique_in_range():
    sample = poisson_sample(10_000, 0.03, make_generator(0, "t"))
    assert sample.dtype == torch.long
    assert torch.all(sample[1:] > sample[:-1])
    assert sample.min() >= 0 and sample.max() < 10_000


def test_edge_rates():
    generator = make_generator(0, "t")
    state = generator.get_state()
    assert torch.equal(poisson_sample(7, 1.0, generator), torch.arange(7))
    assert len(poisson_sample(7, 0.0, generator)) == 0
    assert torch.equal(generator.get_state(), state)  # deterministic rates draw nothing
    with pytest.raises(ValueError):
        poisson_sample(7, 1.5, generator)


def test_deterministic_given_seed():
    first = poisson_sample(5_000, 0.1, make_generator(3, "p"))
    second = poisson_sample(5_000, 0.1, make_generator(3, "p"))
    other = poisson_sample(5_000, 0.1, make_generator(4, "p"))
    assert torch.equal(first, second)
    assert not torch.equal(first, other)


def test_batch_size_matches_binomial():
    """Mean (z-test) and variance (chi-square) of 2000 batch sizes against Binomial(n, q)."""
    n, q, draws = 2_000, 0.05, 2_000
    generator = make_generator(0, "sizes")
    sizes = torch.tensor([len(poisson_sample(n, q, generator)) for _ in range(draws)],
                         dtype=torch.float64)
    mean, var = n * q, n * q * (1 - q)
    z = (sizes.mean() - mean) / math.sqrt(var / draws)
    assert abs(z) < 4.0
    # (draws - 1) s^2 / var ~ chi2(draws - 1) ~ N(draws - 1, 2 (draws - 1)) for large draws.
    chi2 = (draws - 1) * sizes.var() / var
    assert abs(chi2 - (draws - 1)) < 4.0 * math.sqrt(2 * (draws - 1))


def test_inclusion_frequencies_uniform():
    """Per-index inclusion counts: chi-square against q for every index (incl. the last)."""
    n, q, draws = 200, 0.3, 3_000
    generator = make_generator(1, "freq")
    counts = torch.zeros(n, dtype=torch.float64)
    for _ in range(draws):
        counts[poisson_sample(n, q, generator)] += 1
    expected = draws * q
    chi2 = (((counts - expected) ** 2) / (expected * (1 - q))).sum()
    assert abs(chi2 - n) < 4.0 * math.sqrt(2 * n)
    assert counts[-1] > 0 and counts[0] > 0


def test_tiny_rate_spans_long_range():
    """Gaps larger than one chunk: the draw is extended, never truncated."""
    generator = make_generator(2, "tiny")
    sizes = [len(poisson_sample(1_000_000, 2e-6, generator)) for _ in range(300)]
    assert abs(sum(sizes) / 300 - 2.0) < 0.5


def test_batches_match_single_samples():
    n, q = 3_000, 0.02
    index, mask = poisson_batches(n, q, [make_generator(s, "b") for s in range(5)])
    assert index.shape == mask.shape
    for run in range(5):
        single = poisson_sample(n, q, make_generator(run, "b"))
        assert torch.equal(index[run][mask[run]], single)
        assert mask[run].sum() == len(single)
        assert torch.all(index[run][~mask[run]] == 0)
    assert mask.any(dim=0).all()  # B is the largest batch, no extra padding column


def test_batches_all_empty_keep_one_column():
    index, mask = poisson_batches(10, 0.0, [make_generator(0, "e"), make_generator(1, "e")])
    assert index.shape == (2, 1) and not mask.any()


def test_expected_batch_size():
    assert expected_batch_size(1000, 0.25) == 250.0


def test_per_run_sampling_rates_give_each_run_its_own_batch_alone_or_batched():
    rates = [0.05, 0.2, 0.05, 0.0, 1.0]
    index, mask = poisson_batches(500, rates, [make_generator(s, "poisson") for s in range(5)])
    for r, rate in enumerate(rates):
        alone_index, alone_mask = poisson_batches(500, rate, [make_generator(r, "poisson")])
        assert torch.equal(index[r][mask[r]], alone_index[0][alone_mask[0]])
    sizes = mask.sum(dim=1)
    assert sizes[3] == 0 and sizes[4] == 500 and 40 < sizes[1] < 160


def test_per_run_sampling_rates_must_match_the_generators():
    with pytest.raises(ValueError, match="2 sampling rates but 3 generators"):
        poisson_batches(10, [0.1, 0.2], [make_generator(s, "poisson") for s in range(3)])


def test_shuffled_batches_partition_each_epoch_and_keep_the_last_partial_batch():
    from dpminimax.kernels.sampling import shuffled_batches

    generators = [make_generator(s, "shuffle") for s in range(3)]
    batches = shuffled_batches(10, 4, generators)
    assert [tuple(b.shape) for b in batches] == [(3, 4), (3, 4), (3, 2)]
    epoch = torch.cat(batches, dim=1)
    for run in range(3):
        assert torch.equal(epoch[run].sort().values, torch.arange(10))
    assert not torch.equal(epoch[0], epoch[1])
    alone = torch.cat(shuffled_batches(10, 4, [make_generator(1, "shuffle")]), dim=1)
    assert torch.equal(alone[0], epoch[1])  # a run's order does not depend on the others
    second = torch.cat(shuffled_batches(10, 4, generators), dim=1)
    assert not torch.equal(second, epoch)   # a fresh permutation every epoch
    with pytest.raises(ValueError, match="batch_size"):
        shuffled_batches(10, 0, generators)


def test_each_run_draws_one_round_of_geometric_gaps_from_its_own_stream():
    """The shared (R, chunk) buffer gives every run exactly the draws of its own generator:
    the batch equals the running sums of ``chunk`` Geometric(q) gaps drawn into a tensor of its
    own (the documented construction), for 40 runs at once."""
    n, q, runs = 5000, 0.03, 40
    index, mask = poisson_batches(n, q, [make_generator(s, "poisson") for s in range(runs)])
    for r in range(runs):
        gaps = torch.empty(_chunk_size(n, q), dtype=torch.float64).geometric_(
            q, generator=make_generator(r, "poisson")).long()
        positions = gaps.cumsum(dim=0) - 1
        assert positions[-1] >= n - 1                      # one round covered the data here
        assert torch.equal(index[r][mask[r]], positions[positions < n])


@pytest.mark.parametrize("q", [0.001, 0.034, 0.5, 0.97])
@pytest.mark.parametrize("runs", [1, sampling.COMPILED_MIN_RUNS])  # torch path, compiled path
def test_gap_sums_are_torch_geometric_draws_bit_for_bit(q, runs):
    """Both paths give exactly the running sums of torch's geometric_ draws up to the first sum
    >= end, only sums >= end after it, and leave the generator where geometric_ leaves it."""
    for seed in range(0, 8, runs):
        ours_streams = [make_generator(seed + r, "poisson") for r in range(runs)]
        expected = [torch.empty(3000, dtype=torch.float64).geometric_(
            q, generator=make_generator(seed + r, "poisson")).long().cumsum(dim=0) + r
            for r in range(runs)]
        end = int(expected[0][1500])                        # row 0 crosses it mid-round
        ours = _gap_sums(torch.empty(runs, 3000, dtype=torch.float64), ours_streams, q,
                         torch.arange(runs), end)
        for r in range(runs):
            torch_stream = make_generator(seed + r, "poisson")
            torch.empty(3000, dtype=torch.float64).geometric_(q, generator=torch_stream)
            assert torch.equal(ours_streams[r].get_state(), torch_stream.get_state())
            exact = int((expected[r] < end).sum()) + 1      # up to the first sum >= end
            assert torch.equal(ours[r][:exact], expected[r][:exact])
            assert bool((ours[r][exact:] >= end).all())
        if runs > 1:                                        # the compiled loop stops inverting
            assert bool((ours[0][1501:] == end).all())


def test_runs_extended_by_further_rounds_keep_drawing_from_their_own_stream(monkeypatch):
    """Rounds of 5 gaps (instead of mean + 6 sd) force the rare extension path: every run's
    batch is still the running sums of its own stream's geometric_ draws, round after round."""
    n, q, runs, chunk = 400, 0.05, 12, 5
    monkeypatch.setattr(sampling, "_chunk_size", lambda n, q: chunk)
    index, mask = poisson_batches(n, q, [make_generator(s, "poisson") for s in range(runs)])
    for r in range(runs):
        stream = make_generator(r, "poisson")
        positions = torch.tensor([-1])
        while positions[-1] < n - 1:
            gaps = torch.empty(chunk, dtype=torch.float64).geometric_(q, generator=stream)
            positions = torch.cat([positions, positions[-1] + gaps.long().cumsum(dim=0)])
        assert len(positions) > 2 * chunk                    # extended at least twice
        assert torch.equal(index[r][mask[r]], positions[1:][positions[1:] < n])
