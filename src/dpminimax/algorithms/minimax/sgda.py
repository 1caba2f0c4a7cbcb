"""DP-SGDA on any problem of :mod:`dpminimax.problems` (Yang et al. 2022, Alg. 1: the
gradient-perturbation baseline of the BYOA and DP-DRO papers), and its non-private twin.

One method for every objective: the problem is a parameter (its blocks, per-example oracles and
exact answers are data, issue #17 item 4). Each of R runs draws its own sample of ``n`` examples
from the problem (stream ``(seed, "data")``: a fresh dataset per seed, as the weak gap
needs) and, per step, a Poisson(q) batch; for every block b the per-example gradients
are clipped to ``clip`` (default: the problem's a-priori Lipschitz constant L, so on the
feasible set clipping changes nothing and the sensitivity holds for any data) and summed, one
Gaussian release per block on the same batch; minimized blocks descend, maximized blocks ascend,
each projected onto its ball, with step ``lr`` / (qn). The output is the average of the iterates
x_1..x_T (Yang et al. 2022 return the average). A minimization problem (no maximized block) is
DP-SGD with averaging (Bassily et al. 2019). The runs' ``counters`` are their per-sample gradient
evaluations: the realised Poisson batch sizes summed over the steps (one oracle call returns
every block's gradient).

``schedule`` (the baselines' theory-prescribed parameters) replaces ``lr``,
``batch_size`` and ``epochs`` by a theorem's, with d the problem's dimension (all blocks), D its
a-priori diameter and L its Lipschitz constant, a batch of m giving Poisson rate q = m / n (the
papers sample m with replacement; our accountant is for Poisson sampling), and sigma still
calibrated to (epsilon, delta) by the accountant:

* ``bassily2019`` (spec B2; Bassily, Feldman, Talwar, Thakurta 2019, Alg. 1 and Thm. 3.2, smooth
  convex losses; minimization only): T = min(n / 8, n^2 eps^2 / (32 d log(1 / delta))),
  m = max(n sqrt(eps / (4T)), 1), eta = (D / L) min(4 / sqrt(n), eps / sqrt(d log(1 / delta)));
* ``yang2022`` (spec B6; Yang et al. 2022, smooth convex-concave case): T = n, the same m,
  eta = (D / L) / max(sqrt(n), sqrt(d log(1 / delta)) / eps).

Both take T m = O(n^{3/2} sqrt(eps)) gradients (BYOA Table 1). At epsilon = inf (the twin)
the formulas give full batches.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.minimax.output_perturbation import solver_counters
from dpminimax.algorithms.params import (
    ACCOUNTANT,
    CLIP,
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    Check,
    one_of,
)
from dpminimax.algorithms.problem_method import (
    PROBLEM_CHECKS,
    PROBLEM_PARAMETERS,
    PROBLEM_SHARED,
    ProblemMethod,
)
from dpminimax.data import PreparedDataset
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches, take_batch
from dpminimax.privacy.calibrate import calibrate_release_parameter
from dpminimax.privacy.release import Batch, BatchedRelease, Release
from dpminimax.problems import Problem
from dpminimax.problems.base import stack_examples
from dpminimax.seeding import make_generator

LIPSCHITZ = "lipschitz"
SHARED = (*PROBLEM_SHARED, "batch_size", "epochs", "accountant", "schedule")
#: Theorem schedules of :func:`theory_schedule`, or ``manual`` (``lr``, ``batch_size``, ``epochs``).
SCHEDULES = ("manual", "bassily2019", "yang2022")
#: (Poisson rate q, steps T, step size eta) of a run.
Schedule = tuple[float, int, float]


class DpSgda(ProblemMethod):
    """Noisy projected stochastic gradient descent-ascent over named blocks (module docstring)."""

    name: ClassVar[str] = "dp_sgda"
    label: ClassVar[str] = "DP-SGDA"
    paper: ClassVar[str] = "byoa"
    source: ClassVar[str] = "Yang et al. 2022, Alg. 1 (DP-SGDA; a baseline of BYOA and DP-DRO)"
    private: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        **PROBLEM_PARAMETERS,
        "lr": 0.1,
        "batch_size": 64,
        "epochs": 5,
        "clip": LIPSCHITZ,
        "accountant": "rdp",
        "schedule": "manual",
    }
    checks: ClassVar[dict[str, Check]] = {
        **PROBLEM_CHECKS, "lr": NON_NEGATIVE, "batch_size": COUNT, "epochs": POSITIVE,
        "clip": Check(f"{LIPSCHITZ!r} (the problem's L) or a finite number > 0",
                      lambda v: v == LIPSCHITZ or CLIP.accepts(v)),
        "accountant": ACCOUNTANT, "schedule": one_of(*SCHEDULES)}
    shared_parameters: ClassVar[tuple[str, ...]] = SHARED
    #: Noisy gradient batches per step (one per block each): 1 here, 2 for extragradient.
    batches_per_step: ClassVar[int] = 1

    def schedule(self, params: dict[str, Any], problem: Problem, n: int,
                 run: RunSpec) -> Schedule:
        """(q, T, eta): ``manual`` q = batch_size / n, T = ceil(epochs / (q x batches per
        step)), eta = lr; else :func:`theory_schedule`."""
        if params["schedule"] == "manual":
            q = min(1.0, params["batch_size"] / n)
            return (q, math.ceil(params["epochs"] / (q * self.batches_per_step)),
                    float(params["lr"]))
        return theory_schedule(params["schedule"], problem, n, run.epsilon, run.delta)

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """T steps of :attr:`batches_per_step` Poisson(q) rounds each (:meth:`schedule`), each
        round one Gaussian release per block (the clipped gradient sum, l2 sensitivity C) from
        the same batch, with one sigma calibrated to the run's (epsilon, delta)."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        q, steps, lr = self.schedule(params, problem, n, run)
        rounds = steps * self.batches_per_step
        clip = (problem.constants.lipschitz if params["clip"] == LIPSCHITZ
                else float(params["clip"]))
        names = tuple(block.name for block in problem.blocks)
        sigma = self.calibrate(run, lambda: calibrated_sigma(
            q, rounds, names, run.epsilon, run.delta, params["accountant"]), 0.0)
        return RunPlan.account(block_releases(q, rounds, names, sigma, clip),
                               {"noise_multiplier": sigma, "sampling_rate": q, "steps": steps,
                                "clip_norm": clip, "lr": lr}, run.delta, params["accountant"])

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> SgdaProgram:
        problem = self.problem(shared)
        return self.program_class(problem, self.samples(problem, runs, resolved, device),
                                  [run.seed for run in runs], resolved, plans, device=device)

    @property
    def program_class(self) -> type[SgdaProgram]:
        """The program class (NSEG's takes extragradient steps)."""
        return SgdaProgram


def theory_schedule(name: str, problem: Problem, n: int, epsilon: float,
                    delta: float) -> Schedule:
    """(q, T, eta) of ``bassily2019`` or ``yang2022`` (module docstring)."""
    constants = problem.constants
    if name == "bassily2019" and problem.maximized:
        raise ValueError("schedule 'bassily2019' is DP-SGD's (Bassily et al. 2019) for "
                         "minimization; use 'yang2022' on a min-max problem")
    dim = sum(block.dim for block in problem.blocks)
    privacy = math.sqrt(dim * math.log(1.0 / delta)) / epsilon  # 0 at epsilon = inf
    if name == "bassily2019":
        steps = max(1, math.floor(min(n / 8.0, n * n / (32.0 * privacy ** 2)
                                      if privacy else math.inf)))
        lr = constants.diameter / constants.lipschitz * min(
            4.0 / math.sqrt(n), 1.0 / privacy if privacy else math.inf)
    else:
        steps = n
        lr = constants.diameter / constants.lipschitz / max(math.sqrt(n), privacy)
    batch = min(max(n * math.sqrt(epsilon / (4.0 * steps)), 1.0), n)
    return math.ceil(batch) / n, steps, lr


def block_releases(q: float, steps: int, blocks: Sequence[str], sigma: float,
                   clip: float) -> Batch:
    """One clipped gradient sum per block (``gradient_<block>``) per Poisson(q) batch."""
    return Batch(tuple(Release(f"gradient_{name}", "gaussian", sigma, clip) for name in blocks),
                 count=steps, sampling_rate=q)


@functools.lru_cache(maxsize=1024)
def calibrated_sigma(q: float, steps: int, blocks: tuple[str, ...], epsilon: float,
                     delta: float, accountant: str) -> float:
    """Smallest sigma with which :func:`block_releases` meet (epsilon, delta)."""
    return calibrate_release_parameter(
        lambda sigma: block_releases(q, steps, blocks, sigma, 1.0), epsilon, delta, accountant)


class SgdaProgram:
    """R runs of DP-SGDA: iterates and their running averages per block, per-run samples and
    streams (``"poisson"`` batches, ``"noise_<block>"`` noise). ``model`` is the problem;
    ``counters`` the runs' per-sample gradient evaluations so far."""

    def __init__(self, problem: Problem, samples: Sequence[dict[str, torch.Tensor]],
                 seeds: Sequence[int], params: Sequence[dict[str, Any]],
                 plans: Sequence[RunPlan], *, device: torch.device) -> None:
        runs, dtype = len(seeds), problem.dtype
        if len({(p["sampling_rate"], p["steps"]) for p in params}) != 1:
            raise ValueError("runs of one program must share their sampling rate and steps "
                             "(a theory schedule depends on epsilon: one program per epsilon)")
        self.model = problem
        self.samples = list(samples)
        self.examples = stack_examples(samples)
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
        self.evaluations = [0] * runs
        self.sampling = [make_generator(seed, "poisson", device) for seed in seeds]
        self.noise = {block.name: [make_generator(seed, f"noise_{block.name}", device)
                                   for seed in seeds] for block in self.blocks}

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """The averaged iterates (R, dim) per block: what the runs output."""
        return self.average

    @property
    def counters(self) -> list[dict[str, float]]:
        """Each run's per-sample gradient evaluations so far (:func:`solver_counters`)."""
        return [solver_counters(count, self.n) for count in self.evaluations]

    def step(self) -> None:
        """One simultaneous noisy step of every block from the same batch."""
        self.iterate = self.move(self.iterate, self.iterate)
        self.record(self.iterate)

    def move(self, base: dict[str, torch.Tensor],
             at: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Every block of ``base`` moved along its noisy clipped gradient sum at ``at`` over
        a fresh Poisson batch (descent or ascent, step lr / (qn)), projected onto its ball."""
        index, mask = poisson_batches(self.n, self.q, self.sampling,
                                      device=self.scale.device)
        self.evaluations = [count + size for count, size in
                            zip(self.evaluations, mask.sum(dim=1).tolist(), strict=True)]
        batch = take_batch(self.examples, index)
        grads = self.model.per_example_grads(at, batch)
        moved = {}
        for block in self.blocks:
            grad, release = grads[block.name], self.releases[block.name]
            noisy = release.privatize(grad, self.noise[block.name], mask)
            moved[block.name] = block.project(
                base[block.name] + self.signs[block.name] * self.scale * noisy)
        return moved

    def record(self, point: dict[str, torch.Tensor]) -> None:
        """Count a step and add ``point`` to the running average (the output)."""
        self.steps_done += 1
        self.average = {name: self.average[name] + (value - self.average[name])
                        / self.steps_done for name, value in point.items()}


class DpSgdBassily(DpSgda):
    """DP-SGD with Bassily et al. 2019's parameters (a BYOA baseline): DP-SGDA on a
    minimization problem with schedule ``bassily2019`` (module docstring), named apart so that
    tables and figures say which baseline it is."""

    name: ClassVar[str] = "dp_sgd_bassily2019"
    label: ClassVar[str] = "DP-SGD (Bassily et al. 2019)"
    paper: ClassVar[str] = "byoa"
    source: ClassVar[str] = "Bassily et al. 2019, Alg. 1 and Thm. 3.2 (BYOA baseline B2)"
    parameters: ClassVar[dict[str, Any]] = {**DpSgda.parameters,
                                            "problem": "p1_convex_least_squares",
                                            "schedule": "bassily2019"}
    checks: ClassVar[dict[str, Check]] = {**DpSgda.checks, "schedule": one_of("bassily2019")}


Sgda = nonprivate_twin(
    DpSgda, "Sgda", name="dp_sgda_nonprivate", label="SGDA (non-private, synthetic problems)",
    doc="The same stochastic gradient descent-ascent without clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf})
