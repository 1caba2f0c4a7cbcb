"""Poisson subsampling: each example joins a batch independently with probability q.

The privacy amplification by subsampling that the accountant applies (Abadi et al. 2016, Alg. 1
with the moments accountant; Mironov et al. 2019 for the RDP of the sampled Gaussian) assumes
*exactly* this sampling, so the batch is never resized, truncated or padded with real examples.

The included indices are the positions of successes in n Bernoulli(q) trials, so the gaps between
consecutive included indices are i.i.d. Geometric(q) (failures before a success). Drawing the gaps
directly costs O(qn) random numbers instead of the O(n) of one coin per example.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import torch
from torch.nn.utils.rnn import pad_sequence

from dpminimax.kernels.rowwise import use_torch_threads


def expected_batch_size(n: int, q: float) -> float:
    """The expected Poisson batch size qn: the denominator of the DP-SGD gradient estimate.

    DP-SGD (Abadi et al. 2016, Alg. 1) divides the noisy clipped sum by a *data-independent*
    constant. The realised size |B| ~ Binomial(n, q) changes by one between neighbouring data
    sets (add/remove one example), so dividing by it would release |B| alongside the gradient and
    move the release by more than the clipped sum's sensitivity C, which is all the sampled
    Gaussian accounting pays for. The expected size qn is public and leaks nothing.
    """
    return q * n


def _chunk_size(n: int, q: float) -> int:
    """Gaps drawn per round: the batch size's mean + 6 sd (+16), so one round almost always
    covers all n examples. Depends on (n, q) only, never on the other runs."""
    mean = q * n
    return int(math.ceil(mean + 6.0 * math.sqrt(mean * (1.0 - q)))) + 16


#: Fewest runs for which :func:`_gap_sums` takes the compiled loop (same draws either way).
COMPILED_MIN_RUNS = 4


@numba.njit(parallel=True, cache=True)
def _geometric_positions(uniforms, log_failure, start, end, out):  # pragma: no cover - compiled
    """``out[r, k] = start[r] + sum_{j <= k} ceil(log(u_rj) / log(1 - q))``: the running sums of
    Geometric(q) gaps by inversion, up to the first sum >= ``end``; every later entry is ``end``
    (a sum past the last index only says "not in the batch"; the uniforms are drawn either way,
    so the streams do not change). The running sum makes the loop a recurrence, which the
    compiler does not vectorise, so every ``log`` is the scalar libm call torch's
    ``geometric_`` makes."""
    for r in numba.prange(uniforms.shape[0]):
        total = start[r]
        k = 0
        while k < uniforms.shape[1] and total < end:
            total += int(math.ceil(math.log(uniforms[r, k]) / log_failure))
            out[r, k] = total
            k += 1
        out[r, k:] = end
    return out


def _gap_sums(rows: torch.Tensor, generators: Sequence[torch.Generator], q: float,
              start: torch.Tensor, end: int) -> torch.Tensor:
    """Running sums (R, L) int64 of i.i.d. Geometric(q) gaps in {1, 2, ...} (trials up to the
    next success), row r drawn from ``generators[r]`` into the contiguous float64 buffer ``rows``
    (R, L) and offset by ``start[r]``. Each row is exact up to its first sum >= ``end``; every
    entry after it is >= ``end`` too (the compiled loop writes ``end`` without inverting the
    draw: about 1 in 6 of a round's gaps on Adult).

    torch's ``geometric_`` is ``ceil(log(u) / log1p(-q))`` for one ``uniform_`` double u per
    gap, computed serially. On the CPU the uniforms are drawn with
    ``uniform_`` (the same stream: same numbers, same generator state after) and the inversion
    and the running sums run in one compiled loop over all rows; the result is the same bit for
    bit (tested), so every run keeps its batches (timings: BENCHMARKS.md). Other devices,
    and fewer than :data:`COMPILED_MIN_RUNS` rows (where starting the compiled loop costs more
    than it saves), call ``geometric_``."""
    if rows.device.type != "cpu" or rows.shape[0] < COMPILED_MIN_RUNS:
        for row, generator in zip(rows, generators, strict=True):
            row.geometric_(q, generator=generator)
        return (rows.cumsum(dim=1) + start.unsqueeze(1).to(rows.dtype)).long()
    for row, generator in zip(rows, generators, strict=True):
        row.uniform_(0.0, 1.0, generator=generator)
    out = torch.empty(rows.shape, dtype=torch.long)
    use_torch_threads()
    return torch.from_numpy(_geometric_positions(rows.numpy(), math.log1p(-q),
                                                 start.numpy(), end, out.numpy()))


def poisson_batches(
    n: int,
    q: float | Sequence[float],
    generators: Sequence[torch.Generator],
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One Poisson batch per run, padded to a common length: ``(index (R, B), mask (R, B))``.

    ``q`` is one sampling rate for every run or one per run. Run r's included indices are the
    running sums of Geometric(q_r) gaps drawn from its own generator (one ``geometric_`` call per
    run and round: the only Python loop); the sums are exact integer arithmetic over all runs of
    one rate at once. A run whose gaps have not yet passed index n - 1 draws another round, so no
    batch is ever truncated. Each run's draws depend only on (n, q_r) and its own generator, so a
    run gets the same batch alone or among others. Padding slots hold index 0 and mask False; B
    is the largest realised batch (at least 1), never a cap. ``q == 0`` and ``q == 1`` are
    deterministic and draw nothing.
    """
    if not generators:
        raise ValueError("poisson_batches needs at least one generator (one per run)")
    runs = len(generators)
    rates = [float(q)] * runs if isinstance(q, int | float) else [float(v) for v in q]
    if len(rates) != runs:
        raise ValueError(f"{len(rates)} sampling rates but {runs} generators")
    for rate in rates:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"sampling rate q must be in [0, 1], got {rate}")
    out_device = torch.device(device) if device is not None else generators[0].device
    groups: dict[float, list[int]] = {}
    for r, rate in enumerate(rates):       # one pass: a comprehension per rate was O(R^2)
        groups.setdefault(rate, []).append(r)
    candidates = [_positions(n, rate, [generators[r] for r in members], out_device)
                  for rate, members in groups.items()]
    if len(candidates) == 1:
        padded = candidates[0]          # the usual case: one rate for every run
    else:
        positions: list[torch.Tensor | None] = [None] * runs
        for members, rows in zip(groups.values(), candidates, strict=True):
            for r, row in zip(members, rows, strict=True):
                positions[r] = row
        padded = pad_sequence(positions, batch_first=True, padding_value=n)
    if padded.shape[1] == 0:  # every batch empty
        padded = padded.new_full((runs, 1), n)
    mask = padded < n  # included positions are a prefix of each (increasing) row
    width = max(1, int(mask.sum(dim=1).max()))
    mask = mask[:, :width]
    index = torch.where(mask, padded[:, :width], 0)
    return index, mask


def _positions(n: int, q: float, generators: Sequence[torch.Generator],
               device: torch.device) -> torch.Tensor:
    """Candidate positions (R, L) for runs of one rate q, increasing along each row; entries
    >= n are not in the batch (rows extended by further rounds are padded with n).

    Every run's first round of gaps is drawn into one row of a shared (R, chunk) buffer (a row
    is a contiguous tensor of the same length, so it receives the same draws as a tensor of its
    own) and all rows are summed at once (:func:`_gap_sums`).
    """
    runs = len(generators)
    if q == 0.0 or n == 0:
        return torch.zeros(runs, 0, dtype=torch.long, device=device)
    if q == 1.0:
        return torch.arange(n, device=device).expand(runs, n)
    chunk = _chunk_size(n, q)
    gaps = torch.empty(runs, chunk, dtype=torch.float64, device=generators[0].device)
    start = torch.full((runs,), -1, dtype=torch.long, device=gaps.device)
    stacked = _gap_sums(gaps, generators, q, start, n).to(device)
    short = (stacked[:, -1] < n - 1).nonzero().flatten().tolist()
    if not short:
        return stacked
    rows = list(stacked)
    for r in short:
        # rare: extend only the runs whose draws have not passed the last index
        while int(rows[r][-1]) < n - 1:
            more = _gap_sums(torch.empty_like(gaps[r:r + 1]), generators[r:r + 1], q,
                             rows[r][-1:].to(gaps.device), n)
            rows[r] = torch.cat([rows[r], more[0].to(device)])
    return pad_sequence(rows, batch_first=True, padding_value=n)


def poisson_sample(
    n: int, q: float, generator: torch.Generator, device: torch.device | str | None = None
) -> torch.Tensor:
    """Sorted indices of one Poisson sample of ``range(n)`` with inclusion probability ``q``.

    Exactly the batch :func:`poisson_batches` gives a run with this generator.
    """
    index, mask = poisson_batches(n, q, [generator], device)
    return index[0][mask[0]]


def shuffled_batches(
    n: int,
    batch_size: int,
    generators: Sequence[torch.Generator],
    device: torch.device | str | None = None,
) -> list[torch.Tensor]:
    """One epoch of shuffle-and-partition batches per run: ``ceil(n / batch_size)`` index tensors
    (R, b_t), consecutive slices of one permutation of ``range(n)`` per run, the last one of size
    ``n mod batch_size`` when that is not 0 (a PyTorch ``DataLoader(shuffle=True)`` keeping the
    last partial batch, as the released DP-FERMI code does).

    NOT Poisson sampling: every example is used exactly once per epoch, so the accountant's
    amplification by subsampling does not apply to these batches. Run r's permutation comes from
    ``generators[r]`` only (the same alone or among other runs).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not generators:
        raise ValueError("shuffled_batches needs at least one generator (one per run)")
    out_device = torch.device(device) if device is not None else generators[0].device
    orders = torch.stack([torch.randperm(n, generator=g, device=g.device) for g in generators])
    return list(orders.to(out_device).split(batch_size, dim=1))


def take_batch(examples: dict[str, torch.Tensor], index: torch.Tensor
               ) -> dict[str, torch.Tensor]:
    """Each run's batch ``values[r, index[r]]`` (R, B, ...) of per-run examples (R, n, ...)
    (``index`` from :func:`poisson_batches`; padding slots repeat row 0, masked by the
    caller)."""
    def take(values: torch.Tensor) -> torch.Tensor:
        shaped = index.view(*index.shape, *[1] * (values.dim() - 2))
        return torch.gather(values, 1, shaped.expand(*index.shape, *values.shape[2:]))
    return {key: take(value) for key, value in examples.items()}
