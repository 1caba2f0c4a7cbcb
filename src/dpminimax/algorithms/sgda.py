"""DP-SGDA on any problem of :mod:`dpminimax.problems` (Yang et al. 2022, Alg. 1: the
gradient-perturbation baseline of the BYOA and DP-DRO papers), and its non-private twin.

One method for every objective: the problem is a parameter (its blocks, per-example oracles and
exact answers are data, issue #17 item 4). Each of R runs draws its own sample of ``n`` examples
from the problem (stream ``(seed, "data")``: a fresh dataset per seed, as the weak gap of spec
003 §5.5 needs) and, per step, a Poisson(q) batch; for every block b the per-example gradients
are clipped to ``clip`` (default: the problem's a-priori Lipschitz constant L, so on the
feasible set clipping changes nothing and the sensitivity holds for any data) and summed, one
Gaussian release per block on the same batch; minimized blocks descend, maximized blocks ascend,
each projected onto its ball, with step ``lr`` / (qn). The output is the average of the iterates
x_1..x_T (Yang et al. 2022 return the average). A minimization problem (no maximized block) is
DP-SGD with averaging (Bassily et al. 2019).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.params import ACCOUNTANT, CLIP, COUNT, NON_NEGATIVE, POSITIVE, Check
from dpminimax.algorithms.problem_method import PROBLEM_CHECKS, PROBLEM_PARAMETERS, ProblemMethod
from dpminimax.data import PreparedDataset
from dpminimax.kernels.clip import clipped_sum
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches
from dpminimax.privacy import calibrate_event_parameter
from dpminimax.privacy.release import Batch, BatchedRelease, Release, plan_event
from dpminimax.problems import Problem
from dpminimax.seeding import make_generator

LIPSCHITZ = "lipschitz"
SHARED = ("problem", "instance", "n", "batch_size", "epochs", "accountant")


class DpSgda(ProblemMethod):
    """Noisy projected stochastic gradient descent-ascent over named blocks (module docstring)."""

    name: ClassVar[str] = "dp_sgda"
    label: ClassVar[str] = "DP-SGDA"
    paper: ClassVar[str] = "Yang et al. 2022, Alg. 1 (baseline of byoa and dpdro)"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        **PROBLEM_PARAMETERS,
        "lr": 0.1,
        "batch_size": 64,
        "epochs": 5,
        "clip": LIPSCHITZ,
        "accountant": "rdp",
    }
    checks: ClassVar[dict[str, Check]] = {
        **PROBLEM_CHECKS, "lr": NON_NEGATIVE, "batch_size": COUNT, "epochs": POSITIVE,
        "clip": Check(f"{LIPSCHITZ!r} (the problem's L) or a number > 0",
                      lambda v: v == LIPSCHITZ or CLIP.accepts(v)),
        "accountant": ACCOUNTANT}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """T = ceil(epochs / q) Poisson(q) rounds, each one Gaussian release per block (the
        clipped gradient sum, l2 sensitivity C) from the same batch, with one sigma calibrated
        to the run's (epsilon, delta)."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        q = min(1.0, params["batch_size"] / n)
        steps = math.ceil(params["epochs"] / q)
        clip = (problem.constants.lipschitz if params["clip"] == LIPSCHITZ
                else float(params["clip"]))
        names = tuple(block.name for block in problem.blocks)
        sigma = self.calibrate(run, lambda: calibrated_sigma(
            q, steps, names, run.epsilon, run.delta, params["accountant"]), 0.0)
        return RunPlan.account(block_releases(q, steps, names, sigma, clip),
                               {"noise_multiplier": sigma, "sampling_rate": q, "steps": steps,
                                "clip_norm": clip}, run.delta, params["accountant"])

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> SgdaProgram:
        problem = self.problem(shared)
        return SgdaProgram(problem, self.samples(problem, runs, resolved, device),
                           [run.seed for run in runs], resolved, plans, device=device)


def block_releases(q: float, steps: int, blocks: Sequence[str], sigma: float,
                   clip: float) -> Batch:
    """One clipped gradient sum per block (``gradient_<block>``) per Poisson(q) batch."""
    return Batch(tuple(Release(f"gradient_{name}", "gaussian", sigma, clip) for name in blocks),
                 count=steps, sampling_rate=q)


@functools.lru_cache(maxsize=1024)
def calibrated_sigma(q: float, steps: int, blocks: tuple[str, ...], epsilon: float,
                     delta: float, accountant: str) -> float:
    """Smallest sigma with which :func:`block_releases` meet (epsilon, delta)."""
    return calibrate_event_parameter(
        lambda sigma: plan_event(block_releases(q, steps, blocks, sigma, 1.0)),
        epsilon, delta, accountant)


class SgdaProgram:
    """R runs of DP-SGDA: iterates and their running averages per block, per-run samples and
    streams (``"poisson"`` batches, ``"noise_<block>"`` noise). ``model`` is the problem."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], params: Sequence[dict[str, Any]],
                 plans: Sequence[RunPlan], *, device: torch.device) -> None:
        runs, dtype = len(seeds), problem.dtype
        self.model = problem
        self.samples = list(samples)
        self.examples = {key: torch.stack([sample[key] for sample in samples])
                         for key in samples[0]}
        self.n = int(params[0]["n"])
        self.q, self.steps = float(params[0]["sampling_rate"]), int(params[0]["steps"])
        self.blocks = problem.blocks
        self.signs = {block.name: 1.0 if block.name in problem.maximized else -1.0
                      for block in self.blocks}
        self.releases = {block.name: BatchedRelease(
            [plan.release(f"gradient_{block.name}") for plan in plans], device)
            for block in self.blocks}
        lr = torch.tensor([float(p["lr"]) for p in params], dtype=dtype, device=device)
        self.scale = (lr / expected_batch_size(self.n, self.q)).view(-1, 1)
        self.iterate = {block.name: torch.zeros(runs, block.dim, dtype=dtype, device=device)
                        for block in self.blocks}
        self.average = {name: value.clone() for name, value in self.iterate.items()}
        self.steps_done = 0
        self.sampling = [make_generator(seed, "poisson", device) for seed in seeds]
        self.noise = {block.name: [make_generator(seed, f"noise_{block.name}", device)
                                   for seed in seeds] for block in self.blocks}

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """The averaged iterates (R, dim) per block: what the runs output."""
        return self.average

    def step(self) -> None:
        """One simultaneous noisy step of every block from the same batch."""
        index, mask = poisson_batches(self.n, self.q, self.sampling,
                                      device=self.scale.device)
        batch = {key: _take(value, index) for key, value in self.examples.items()}
        grads = self.model.per_example_grads(self.iterate, batch)
        updated = {}
        for block in self.blocks:
            grad, release = grads[block.name], self.releases[block.name]
            noisy = release.perturb(clipped_sum(grad, release.clip, mask),
                                    self.noise[block.name])
            updated[block.name] = block.project(
                self.iterate[block.name] + self.signs[block.name] * self.scale * noisy)
        self.iterate = updated
        self.steps_done += 1
        self.average = {name: self.average[name] + (value - self.average[name])
                        / self.steps_done for name, value in updated.items()}


def _take(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[r, index[r]]`` (R, B, ...) from per-run examples (R, n, ...)."""
    shaped = index.view(*index.shape, *[1] * (values.dim() - 2))
    return torch.gather(values, 1, shaped.expand(*index.shape, *values.shape[2:]))


Sgda = nonprivate_twin(
    DpSgda, "Sgda", name="sgda", label="SGDA (non-private, synthetic problems)",
    doc="The same stochastic gradient descent-ascent without clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf})
