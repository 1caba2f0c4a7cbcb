"""Paper 004's SPIDER estimators on any min-max problem of :mod:`dpminimax.problems` (issue
#39): DP Double-SPIDER (Alg. 2) and PrivateDiff (Zhang et al. 2025c, paper 004's baseline) on
BYOA's games, with their non-private twins.

``dp_double_spider_game`` (Alg. 2) updates the maximized blocks, then the minimized blocks at
the new iterate, each from its own Poisson batch: an anchor every ``period`` steps, SPIDER
differences in between; ``privatediff_game`` takes one batch per step, a fresh clipped gradient
for the maximized blocks and a restarted SPIDER for the minimized ones. Every release is one
block's clipped sum plus Gaussian noise, with sensitivity its clip bound (C for an anchor,
``min(c ||z_t - z_{t-1}||, 2 C)`` for a difference); one noise multiplier is calibrated to
(epsilon, delta) over the whole schedule. The output is the average of the iterates.

Derivation and choices: papers/dpdro/NOTES.md, section "SPIDER estimators on BYOA's games".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from dpminimax.algorithms.base import RunPlan, RunSpec, nonprivate_twin
from dpminimax.algorithms.minimax.output_perturbation import solver_counters
from dpminimax.algorithms.minimax.sgda import LIPSCHITZ
from dpminimax.algorithms.params import ACCOUNTANT, CLIP, COUNT, POSITIVE, Check
from dpminimax.algorithms.problem_method import (
    PROBLEM_CHECKS,
    PROBLEM_PARAMETERS,
    PROBLEM_SHARED,
    ProblemMethod,
)
from dpminimax.algorithms.spider import (
    ANCHOR,
    DIFFERENCE,
    Stage,
    calibrated_noise,
    check_feedback,
    descend,
    difference_shrink,
    movement,
    sampling_rates,
    schedule_tree,
    spider_schedule,
    steps_and_periods,
)
from dpminimax.data import PreparedDataset
from dpminimax.kernels.sampling import expected_batch_size, poisson_batches, take_batch
from dpminimax.privacy.release import BatchedRelease, Part, Release, releases_of
from dpminimax.problems import Problem
from dpminimax.problems.base import stack_examples
from dpminimax.seeding import make_generator

SMOOTHNESS = "smoothness"
#: ``lr`` fixed a priori from the problem's constants and the privacy target (below).
CONSTANTS_STEP = "constants"


class SpiderGame(ProblemMethod):
    """Alg. 2's two-stage SPIDER over named blocks (module docstring); subclasses set the
    stages' flags."""

    private: ClassVar[bool] = True
    #: Whether each stage reads its own batch (Alg. 2) or one batch serves the step.
    separate_batches: ClassVar[bool] = True
    #: Whether the maximized blocks' estimate is a SPIDER (else a fresh gradient every step).
    max_spider: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Any]] = {
        **PROBLEM_PARAMETERS, "lr": CONSTANTS_STEP, "batch_size": 16, "anchor_batch_size": 64,
        "epochs": 16, "period": 4, "clip": LIPSCHITZ, "difference_clip": SMOOTHNESS,
        "accountant": "rdp"}
    checks: ClassVar[dict[str, Check]] = {
        **PROBLEM_CHECKS,
        "lr": Check(f"{CONSTANTS_STEP!r} (from L, D, l) or a number >= 0",
                    lambda v: v == CONSTANTS_STEP or (isinstance(v, (int, float))
                                                       and math.isfinite(v) and v >= 0)),
        "batch_size": COUNT, "anchor_batch_size": COUNT, "epochs": POSITIVE, "period": COUNT,
        "clip": Check(f"{LIPSCHITZ!r} (the problem's L) or a finite number > 0",
                      lambda v: v == LIPSCHITZ or CLIP.accepts(v)),
        "difference_clip": Check(f"{SMOOTHNESS!r} (the problem's l) or a number > 0",
                                 lambda v: v == SMOOTHNESS or POSITIVE.accepts(v)),
        "accountant": ACCOUNTANT}
    shared_parameters: ClassVar[tuple[str, ...]] = (
        *PROBLEM_SHARED, "batch_size", "anchor_batch_size", "epochs", "period", "accountant")

    def stages(self, problem: Problem) -> tuple[Stage, ...]:
        """The maximized blocks (a SPIDER if :attr:`max_spider`), then the minimized ones (a
        SPIDER); a minimization problem has the second stage only."""
        stages = (Stage(problem.maximized, self.max_spider), Stage(problem.minimized, True))
        return tuple(stage for stage in stages if stage.names)

    def layout(self, params: dict[str, Any], problem: Problem, n: int, sigma: float
               ) -> tuple[Part, int, dict[str, float]]:
        """``(release tree, steps, sampling rates)`` with noise multiplier ``sigma``: per block
        b an anchor ``b_anchor`` (bound C) and a difference ``b_difference`` (bound 2 C)."""
        period = int(params["period"])
        steps, periods = steps_and_periods(params["epochs"], n, params["batch_size"], period)
        clip = clip_norm(params, problem)
        releases = {f"{block.name}_{kind}": Release(f"{block.name}_{kind}", "gaussian", sigma,
                                                    clip * (1.0 if kind == ANCHOR else 2.0))
                    for block in problem.blocks for kind in (ANCHOR, DIFFERENCE)}
        rates = sampling_rates(params["batch_size"], params["anchor_batch_size"], n)
        schedule = spider_schedule(period, self.stages(problem), self.separate_batches)
        return schedule_tree(schedule, period, periods, releases, rates), steps, rates

    def plan(self, run: RunSpec, n: int, data: PreparedDataset | None = None) -> RunPlan:
        """One Gaussian noise multiplier for every release of the schedule, calibrated to the
        run's (epsilon, delta) over the derived event; a schedule whose difference noise feeds
        back is refused (:func:`~dpminimax.algorithms.spider.check_feedback`)."""
        params = self.resolve(run.params)
        problem = self.problem(params)
        _, steps, rates = self.layout(params, problem, n, 0.0)
        shape = (self.name, n, *(repr(params[k]) for k in self.shared_parameters))
        sigma = self.calibrate(run, lambda: calibrated_noise(
            shape, lambda s: self.layout(params, problem, n, s)[0], run.epsilon, run.delta,
            params["accountant"]), 0.0)
        constants = problem.constants
        lr = (a_priori_step(problem, n, run.epsilon, run.delta)
              if params["lr"] == CONSTANTS_STEP else float(params["lr"]))
        factor = (constants.smoothness if params["difference_clip"] == SMOOTHNESS
                  else float(params["difference_clip"]))
        check_feedback(factor, lr, sigma, sum(block.dim for block in problem.blocks),
                       params["batch_size"])
        return RunPlan.account(
            self.layout(params, problem, n, sigma)[0],
            {"noise_multiplier": sigma, "steps": steps, "sampling_rate": rates["step"],
             "anchor_sampling_rate": rates["anchor"], "clip_norm": clip_norm(params, problem),
             "difference_factor": factor, "lr": lr}, run.delta, params["accountant"])

    def program(self, data: PreparedDataset | None, runs: Sequence[RunSpec],
                resolved: Sequence[dict[str, Any]], shared: dict[str, Any],
                plans: Sequence[RunPlan], device: torch.device) -> SpiderGameProgram:
        problem = self.problem(shared)
        return SpiderGameProgram(self, problem, self.samples(problem, runs, resolved, device),
                                 [run.seed for run in runs], resolved, plans, device)


def a_priori_step(problem: Problem, n: int, epsilon: float, delta: float) -> float:
    """min(1 / l, (D / L) / max(sqrt(n), sqrt(d log(1 / delta)) / epsilon)), d all blocks'
    dimension (the privacy term is 0 at epsilon = inf)."""
    constants = problem.constants
    dim = sum(block.dim for block in problem.blocks)
    privacy = math.sqrt(dim * math.log(1.0 / delta)) / epsilon
    return min(1.0 / constants.smoothness,
               constants.diameter / constants.lipschitz / max(math.sqrt(n), privacy))


def clip_norm(params: dict[str, Any], problem: Problem) -> float:
    """C: the problem's Lipschitz constant L, or the number given (inf for the twins)."""
    return (problem.constants.lipschitz if params["clip"] == LIPSCHITZ
            else float(params["clip"]))


class SpiderGameProgram:
    """R runs of a :class:`SpiderGame`: iterates and their averages per block, each stage's
    estimate and the point it was taken at, per-run samples and streams (``"poisson"``
    batches, ``"noise_<block>"`` noise)."""

    def __init__(self, method: SpiderGame, problem: Problem,
                 samples: Sequence[dict[str, torch.Tensor]], seeds: Sequence[int],
                 params: Sequence[dict[str, Any]], plans: Sequence[RunPlan],
                 device: torch.device) -> None:
        first, dtype, runs = params[0], problem.dtype, len(seeds)
        self.model, self.samples = problem, list(samples)
        self.examples = stack_examples(samples)
        self.n, self.steps = int(first["n"]), int(first["steps"])
        self.rates = {"step": float(first["sampling_rate"]),
                      "anchor": float(first["anchor_sampling_rate"])}
        self.stages = method.stages(problem)
        self.schedule = spider_schedule(int(first["period"]), self.stages,
                                        method.separate_batches)
        self.blocks = {block.name: block for block in problem.blocks}
        self.releases = {release.name: BatchedRelease(
            [plan.release(release.name) for plan in plans], device, dtype)
            for release in releases_of(plans[0].releases)}
        self.separate = method.separate_batches
        #: Per stage, the step along its estimate: -lr (ascent) on maximized blocks, lr on
        #: minimized ones (:func:`~dpminimax.algorithms.spider.descend` subtracts it).
        lr = torch.tensor([float(p["lr"]) for p in params], dtype=dtype, device=device)
        self.lr = [-lr if stage.names[0] in problem.maximized else lr for stage in self.stages]
        self.factor = torch.tensor([float(p["difference_factor"]) for p in params],
                                   dtype=dtype, device=device)
        self.iterate = {name: torch.zeros(runs, block.dim, dtype=dtype, device=device)
                        for name, block in self.blocks.items()}
        self.average = {name: value.clone() for name, value in self.iterate.items()}
        self.estimate: list[dict[str, torch.Tensor]] = [{} for _ in self.stages]
        self.at: list[dict[str, torch.Tensor]] = [dict(self.iterate) for _ in self.stages]
        self.t, self.evaluations = 0, torch.zeros(runs, dtype=torch.long)
        self.sampling = [make_generator(seed, "poisson", device) for seed in seeds]
        self.noise = {name: [make_generator(seed, f"noise_{name}", device) for seed in seeds]
                      for name in self.blocks}

    @property
    def state(self) -> dict[str, torch.Tensor]:
        """The averaged iterates (R, dim) per block: what the runs output."""
        return self.average

    @property
    def counters(self) -> list[dict[str, float]]:
        """Each run's per-sample gradient evaluations (both points of a difference count)."""
        return [solver_counters(int(count), self.n) for count in self.evaluations]

    def draw(self, rate: str) -> tuple[dict[str, torch.Tensor], torch.Tensor, float]:
        """A Poisson batch at ``rate`` ("anchor" or "step"): examples, mask (R, B), q."""
        q = self.rates[rate]
        index, mask = poisson_batches(self.n, q, self.sampling, device=self.factor.device)
        return take_batch(self.examples, index), mask, q

    def gradients(self, point: dict[str, torch.Tensor], batch, mask: torch.Tensor):
        """Per-example gradients (R, B, dim) of every block at ``point`` (counted)."""
        self.evaluations += mask.sum(dim=1).cpu()
        return self.model.per_example_grads(point, batch)

    def release(self, name: str, per_example: torch.Tensor, mask: torch.Tensor, q: float,
                shrink: torch.Tensor | None = None) -> torch.Tensor:
        """Release ``name``'s noisy mean (R, dim): clipped sum (bound times ``shrink``),
        Gaussian noise, over qn."""
        release = self.releases[name] if shrink is None else self.releases[name].shrunk(shrink)
        block = name.rsplit("_", 1)[0]
        return (release.privatize(per_example, self.noise[block], mask)
                / expected_batch_size(self.n, q))

    def estimate_stage(self, k: int, kind: str, batch, mask: torch.Tensor, q: float
                       ) -> dict[str, torch.Tensor]:
        """Stage k's estimate at the current point: an anchor (Alg. 2 l. 4 / 10), or its last
        estimate plus the released difference of the same examples' gradients at the current
        point and at its last estimate's (l. 6 / 12), clipped at min(c movement, 2 C)."""
        point, names = dict(self.iterate), self.stages[k].names
        now = self.gradients(point, batch, mask)
        if kind == ANCHOR:
            estimate = {b: self.release(f"{b}_anchor", now[b], mask, q) for b in names}
        else:
            before = self.gradients(self.at[k], batch, mask)
            shift = movement(point, self.at[k])
            estimate = {}
            for b in names:
                name = f"{b}_{DIFFERENCE}"
                shrink = difference_shrink(self.releases[name].clip, shift, self.factor)
                estimate[b] = self.estimate[k][b] + self.release(name, now[b] - before[b],
                                                                 mask, q, shrink)
        self.at[k] = point
        return estimate

    def step(self) -> None:
        """Alg. 2's step: each stage estimates at the current point and moves its blocks
        (ascent on maximized, descent on minimized), projected on their balls."""
        draws = self.schedule(self.t)
        kinds = dict(name.rsplit("_", 1) for draw in draws for name in draw.releases)
        shared = None if self.separate else self.draw(draws[0].rate)
        for k, stage in enumerate(self.stages):
            batch, mask, q = shared or self.draw(draws[k].rate)
            self.estimate[k] = self.estimate_stage(k, kinds[stage.names[0]], batch, mask, q)
            moved = descend({b: self.iterate[b] for b in stage.names}, self.estimate[k],
                            self.lr[k])
            self.iterate = {**self.iterate, **{b: self.blocks[b].project(moved[b])
                                               for b in stage.names}}
        self.t += 1
        self.average = {name: self.average[name] + (value - self.average[name]) / self.t
                        for name, value in self.iterate.items()}


class DpDoubleSpiderGame(SpiderGame):
    """DP Double-SPIDER (paper 004, Alg. 2) on a min-max problem (module docstring)."""

    name: ClassVar[str] = "dp_double_spider_game"
    label: ClassVar[str] = "DP Double-SPIDER (games)"
    paper: ClassVar[str] = "dpdro"
    source: ClassVar[str] = "paper 004 (DP-DRO), Alg. 2 on BYOA's games"


class PrivateDiffGame(SpiderGame):
    """PrivateDiff Minimax (Zhang et al. 2025c, paper 004's baseline) on a min-max problem."""

    name: ClassVar[str] = "privatediff_game"
    label: ClassVar[str] = "PrivateDiff (games)"
    paper: ClassVar[str] = "dpdro"
    source: ClassVar[str] = "Zhang et al. 2025c (PrivateDiff Minimax; paper 004's baseline)"
    separate_batches = False
    max_spider = False
    parameters: ClassVar[dict[str, Any]] = {**SpiderGame.parameters, "period": 2}


DoubleSpiderGame = nonprivate_twin(
    DpDoubleSpiderGame, "DoubleSpiderGame", name="dp_double_spider_game_nonprivate",
    label="Double-SPIDER (non-private, synthetic problems)",
    doc="Alg. 2 on a min-max problem without clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf, "difference_clip": math.inf})
PrivateDiffGameNonPrivate = nonprivate_twin(
    PrivateDiffGame, "PrivateDiffGameNonPrivate", name="privatediff_game_nonprivate",
    label="PrivateDiff (non-private, synthetic problems)",
    doc="PrivateDiff on a min-max problem without clipping or noise (epsilon = inf).",
    fixed={"clip": math.inf, "difference_clip": math.inf})
