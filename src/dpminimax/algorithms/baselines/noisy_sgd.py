"""One batched noisy-SGD program: the DP-SGD step (Abadi et al. 2016, Alg. 1) for R runs.

Each step draws a Poisson batch per run, sums per-example gradients clipped to norm C_r, adds the
gradient release's noise N(0, (sigma_r C_r)^2 I) and takes a gradient step scaled by
lr_r / (expected batch size qn). A shadow run (``members``) samples its own member rows only.
Run r draws
its batches from the generator ``(seed_r, "poisson")`` and its noise from ``(seed_r, "noise")``:
trained alone or among others it draws the same numbers. With C = inf and std = 0 this is plain
mini-batch SGD on Poisson batches. DP-SGD's program (``steps`` is its planned step count) and
the kernel benchmark both use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from dpminimax.data.inputs import ImageFileRows
from dpminimax.kernels.gather import RowGatherer, batch_values
from dpminimax.kernels.membership import Members, sample_sizes, to_rows
from dpminimax.kernels.runs import along_runs
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.privacy.release import BatchedRelease
from dpminimax.seeding import make_generator


class NoisySgd:
    """State and random streams of R runs of a batched model; :meth:`step` advances all of them."""

    def __init__(
        self,
        model,
        rows: RowGatherer | ImageFileRows,
        y: torch.Tensor,
        seeds: Sequence[int],
        *,
        lr: torch.Tensor,
        release: BatchedRelease,
        q: float,
        steps: int,
        members: Members | None = None,
    ) -> None:
        device = y.device
        self.model = model
        self.rows = rows
        self.y = y
        self.members = members  # shadow runs' member sets: they sample only those
        self.n, planned = sample_sizes(members, len(y))
        self.q = q
        self.steps = steps
        self.release = release
        self.state = model.init_state(len(seeds), device, seeds)
        self.sampling = [make_generator(seed, "poisson", device) for seed in seeds]
        self.noise = [make_generator(seed, "noise", device) for seed in seeds]
        self.scale = lr / expected_batch_size(planned, q)

    def step(self) -> None:
        index, mask = poisson_batches(self.n, self.q, self.sampling, device=self.y.device)
        index, mask = to_rows(index, mask, self.members)
        grads = self.model.clipped_grad_sum(
            self.state, self.rows.take(index), batch_values(self.y, index), mask, self.release.clip
        )
        grads = self.release.perturb(grads, self.noise)
        for key, grad in grads.items():
            self.state[key] -= along_runs(self.scale, grad) * grad
